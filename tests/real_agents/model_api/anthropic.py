"""Anthropic Messages, as Claude Code (inside claude-agent-acp) uses it.

`POST /v1/messages` (Claude Code adds `?beta=true`) answers a stream of typed events:
`message_start`, then per content block (thinking, text, tool_use) `content_block_start`,
its deltas (`thinking_delta` + `signature_delta`, `text_delta`, `input_json_delta`) and
`content_block_stop`, then `message_delta` (the stop reason) and `message_stop`.
`POST /v1/messages/count_tokens` answers a count. Every `/v1/messages` answer carries the
account's rate-limit headers (mock_ratelimits.py), which Claude Code reads when signed in
as a subscriber.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tests.real_agents.mock_ratelimits import RateLimits
from tests.real_agents.model_api.scenario import Conversation, Refusal, Reply, decide
from tests.real_agents.model_api.wire import (
    Answer,
    ApiRequest,
    Event,
    Json,
    exchange_log,
    new_id,
    pieces,
    text_parts,
)

REMINDER = "<system-reminder>"  # Claude Code's own additions to a user message
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error",
               403: "permission_error", 404: "not_found_error", 429: "rate_limit_error",
               529: "overloaded_error"}
TOKENS_IN, TOKENS_OUT = 100, 20


def conversation(body: Json) -> Conversation:
    """A user message of plain text (reminders aside) starts a new prompt; one carrying
    `tool_result` blocks answers the previous tool calls."""
    prompt, results = "", list[str]()
    for message in body.get("messages") or []:
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        answers = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
        said = [t for t in text_parts(blocks, ("text",)) if not t.lstrip().startswith(REMINDER)]
        if said and not answers:
            prompt, results = "\n".join(said), []
        for block in answers:
            text = "\n".join(text_parts(block.get("content")))
            results.append(f"ERROR: {text}" if block.get("is_error") else text)
    offered = tuple(str(t.get("name", "")) for t in body.get("tools") or []
                    if isinstance(t, dict))
    return Conversation(prompt, tuple(results), offered)


class Messages:
    name = "anthropic"

    def __init__(self, limits: RateLimits) -> None:
        self.limits = limits

    def answer(self, request: ApiRequest) -> Answer | None:
        if request.method != "POST":
            return None
        if request.path.endswith("/messages/count_tokens"):
            return Answer(document={"input_tokens": TOKENS_IN}, log={"kind": "count_tokens"})
        if not request.path.endswith("/messages"):
            return None
        body = request.body
        talk = conversation(body)
        move = decide(talk)
        if isinstance(move, Refusal):
            answer = Answer(status=move.status, document=refusal(move))
        elif body.get("stream"):
            answer = Answer(events=stream(move, body), pace=move.pace)
        else:
            answer = Answer(document=whole(move, body))
        # Side requests (no tools) get the headers too, but do not use up the windows.
        answer.headers = self.limits.headers(answer.status, main_request=bool(talk.tools))
        answer.log = exchange_log(talk, move, body)
        return answer


def refusal(move: Refusal) -> Json:
    kind = ERROR_TYPES.get(move.status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": f"mock: {move.message}"}}


def stop_reason(move: Reply) -> str:
    return "tool_use" if move.calls else "end_turn"


def whole(move: Reply, body: Json) -> Json:
    content: list[Json] = []
    if move.thinking:
        content.append({"type": "thinking", "thinking": "".join(move.thinking),
                        "signature": "bW9jaw=="})
    content.append({"type": "text", "text": "".join(move.text)})
    content += [{"type": "tool_use", "id": new_id("toolu_"), "name": call.name,
                 "input": call.arguments} for call in move.calls]
    return {"id": new_id("msg_"), "type": "message", "role": "assistant",
            "model": body.get("model"), "content": content, "stop_reason": stop_reason(move),
            "stop_sequence": None,
            "usage": {"input_tokens": TOKENS_IN, "output_tokens": TOKENS_OUT}}


def stream(move: Reply, body: Json) -> Iterator[Event]:
    def event(kind: str, **fields: Any) -> Event:
        return Event(kind, {"type": kind, **fields})

    usage = {"input_tokens": TOKENS_IN, "output_tokens": 1,
             "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    yield event("message_start", message={
        "id": new_id("msg_"), "type": "message", "role": "assistant",
        "model": body.get("model"), "content": [], "stop_reason": None,
        "stop_sequence": None, "usage": usage})
    blocks: list[tuple[Json, list[Json]]] = []
    if move.thinking:
        deltas = [{"type": "thinking_delta", "thinking": t} for t in move.thinking]
        # Claude Code keeps a thinking block only with its signature.
        deltas.append({"type": "signature_delta", "signature": "bW9jaw=="})
        blocks.append(({"type": "thinking", "thinking": ""}, deltas))
    if move.text:
        blocks.append(({"type": "text", "text": ""},
                       [{"type": "text_delta", "text": t} for t in move.text]))
    for call in move.calls:
        start = {"type": "tool_use", "id": new_id("toolu_"), "name": call.name, "input": {}}
        blocks.append((start, [{"type": "input_json_delta", "partial_json": part}
                               for part in pieces(json.dumps(call.arguments))]))
    for index, (start, deltas) in enumerate(blocks):
        yield event("content_block_start", index=index, content_block=start)
        for delta in deltas:
            yield event("content_block_delta", index=index, delta=delta)
        yield event("content_block_stop", index=index)
    yield event("message_delta", delta={"stop_reason": stop_reason(move), "stop_sequence": None},
                usage={"output_tokens": TOKENS_OUT})
    yield event("message_stop")
