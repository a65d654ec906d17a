"""Params of the demo agent's methods, checked as the schema has them: a bad one is an
INVALID_PARAMS error saying which and why. A prompt's blocks are recorded for replay as
they are read (`prompt_text`)."""

from __future__ import annotations

import os
from typing import Any

from .sessions import Session
from .wire import INVALID_PARAMS, RpcError

JsonObject = dict[str, Any]


def str_param(params: JsonObject, name: str) -> str:
    value = params.get(name)
    if not isinstance(value, str) or not value:
        raise RpcError(INVALID_PARAMS, f"{name} must be a non-empty string")
    return value


MAX_ATTACHMENTS = 50


def image_summary(block: JsonObject) -> str:
    """`image image/png (N bytes)`, checked: base64 data and an image MIME type."""
    import base64
    import binascii

    mime, data = block.get("mimeType"), block.get("data")
    if not isinstance(mime, str) or not mime.startswith("image/") or not isinstance(data, str):
        raise RpcError(INVALID_PARAMS, "an image needs data and an image/* mimeType")
    try:
        size = len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        raise RpcError(INVALID_PARAMS, "image data is not base64") from None
    return f"image {mime} ({size} bytes)"


MAX_STEER_TEXT = 64 * 1024
MAX_MCP_SERVERS = 64
# Like claude-agent-acp: stdio and http, not sse.
MCP_CAPABILITIES = {"http": True, "sse": False}


def mcp_param(params: JsonObject, *, required: bool) -> list[JsonObject]:
    """`mcpServers`, checked as the schema has them and against our mcpCapabilities."""
    servers = params.get("mcpServers")
    if servers is None and not required:
        return []
    if not isinstance(servers, list) or len(servers) > MAX_MCP_SERVERS:
        raise RpcError(INVALID_PARAMS, "mcpServers must be an array (at most 64)")
    out: list[JsonObject] = []
    for server in servers:
        if not isinstance(server, dict) or not isinstance(server.get("name"), str):
            raise RpcError(INVALID_PARAMS, "each MCP server needs a name")
        kind = server.get("type", "stdio")
        if kind in ("http", "sse"):
            if not MCP_CAPABILITIES.get(kind):
                raise RpcError(INVALID_PARAMS, f"MCP over {kind} is not supported "
                               "(see mcpCapabilities)")
            if not isinstance(server.get("url"), str) or \
                    not isinstance(server.get("headers"), list):
                raise RpcError(INVALID_PARAMS, f"an {kind} MCP server needs url and headers")
            out.append({"name": server["name"], "type": kind, "url": server["url"],
                        "headers": [h.get("name") for h in server["headers"]
                                    if isinstance(h, dict)]})
        elif kind == "stdio":
            command = server.get("command")
            if not isinstance(command, str) or not os.path.isabs(command) or \
                    not isinstance(server.get("args"), list) or \
                    not isinstance(server.get("env"), list):
                raise RpcError(INVALID_PARAMS, "a stdio MCP server needs an absolute "
                               "command, args and env")
            out.append({"name": server["name"], "type": "stdio", "command": command,
                        "args": server["args"],
                        "env": [e.get("name") for e in server["env"] if isinstance(e, dict)]})
        else:
            raise RpcError(INVALID_PARAMS, f"unknown MCP server type {kind!r}")
    return out


def cwd_param(params: JsonObject) -> str:
    cwd = str_param(params, "cwd")
    if not os.path.isabs(cwd):
        raise RpcError(INVALID_PARAMS, "cwd must be an absolute path")
    return cwd


def prompt_text(session: Session, prompt: object) -> str:
    """Validate the prompt blocks, record them for replay, and return their text."""
    if not isinstance(prompt, list):
        raise RpcError(INVALID_PARAMS, "prompt must be an array of content blocks")
    texts: list[str] = []
    attached: list[str] = []
    for block in prompt:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "audio":
            raise RpcError(INVALID_PARAMS, "audio content is not supported")
        if kind == "image":
            attached.append(image_summary(block))
        elif kind == "resource_link" and isinstance(block.get("uri"), str):
            attached.append(f"link {block['uri']}")
        elif kind == "resource" and isinstance(block.get("resource"), dict):
            resource = block["resource"]
            text = resource.get("text")
            size = len(text.encode()) if isinstance(text, str) else 0
            attached.append(f"embedded {resource.get('uri')} ({size} bytes)")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
    session.attachments = attached[:MAX_ATTACHMENTS]
    session.next_message += 1
    message_id = f"{session.id}-u{session.next_message}"
    for block in prompt:
        if isinstance(block, dict) and block.get("type") in (
            "text",
            "resource_link",
            "resource",
        ):
            session.record(
                {
                    "sessionUpdate": "user_message_chunk",
                    "messageId": message_id,
                    "content": block,
                }
            )
    return "\n".join(texts)
