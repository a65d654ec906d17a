"""OpenAI Responses, as codex (inside codex-acp) uses it.

`POST /v1/responses` answers a stream of events named after their `type`:
`response.created`; per output item `response.output_item.added`, its deltas
(`response.reasoning_summary_text.delta` for a reasoning item, `response.output_text.delta`
for a message) and `response.output_item.done` with the whole item; then
`response.completed` with the usage. A tool call is a `function_call` item (JSON
arguments), or a `custom_tool_call` item (raw input) for a freeform tool such as
apply_patch. The answers carry codex's own rate-limit headers (mock_ratelimits.py).
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
    arguments_json,
    exchange_log,
    new_id,
    text_parts,
)

# codex sends its context (environment, AGENTS.md, instructions) as user messages too.
CONTEXT_PREFIXES = ("<environment_context>", "# AGENTS.md", "<user_instructions>")
OUTPUT_ITEMS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")
ERROR_CODES = {400: "invalid_request_error", 401: "invalid_api_key", 403: "permission_denied",
               429: "rate_limit_exceeded", 500: "server_error"}
TOKENS_IN, TOKENS_OUT = 100, 20
USAGE = {"input_tokens": TOKENS_IN, "output_tokens": TOKENS_OUT,
         "total_tokens": TOKENS_IN + TOKENS_OUT,
         "input_tokens_details": {"cached_tokens": 0},
         "output_tokens_details": {"reasoning_tokens": 0}}


def conversation(body: Json) -> Conversation:
    # Built-in tools (web_search, tool_search) have a type and no name.
    offered = tuple(str(t.get("name") or t.get("type") or "") for t in body.get("tools") or []
                    if isinstance(t, dict))
    given = body.get("input")
    if isinstance(given, str):  # the whole input is one prompt
        return Conversation(given, (), offered)
    prompt, results = "", list[str]()
    for entry in given if isinstance(given, list) else []:
        if not isinstance(entry, dict):
            continue
        kind = entry.get("type", "message")
        if kind == "message" and entry.get("role") == "user":
            text = "\n".join(text_parts(entry.get("content")))
            if not text.lstrip().startswith(CONTEXT_PREFIXES):
                prompt = text
                results.clear()
        elif kind in OUTPUT_ITEMS:
            output = entry.get("output")
            results.append(output if isinstance(output, str) else json.dumps(output))
    return Conversation(prompt, tuple(results), offered)


class Responses:
    name = "openai-responses"

    def __init__(self, limits: RateLimits) -> None:
        self.limits = limits

    def answer(self, request: ApiRequest) -> Answer | None:
        if request.method != "POST" or not request.path.endswith("/responses"):
            return None
        body = request.body
        talk = conversation(body)
        move = decide(talk)
        if isinstance(move, Refusal):
            code = ERROR_CODES.get(move.status, "server_error")
            answer = Answer(status=move.status, document={"error": {
                "type": code, "code": code, "message": f"mock: {move.message}", "param": None}})
        else:
            answer = Answer(events=stream(move, freeform_tools(body)), pace=move.pace)
        answer.headers = self.limits.codex_headers()
        answer.log = exchange_log(talk, move, body)
        return answer


def freeform_tools(body: Json) -> set[str]:
    return {str(t.get("name")) for t in body.get("tools") or []
            if isinstance(t, dict) and t.get("type") == "custom"}


def call_item(name: str, arguments: dict[str, Any] | str, freeform: set[str]) -> Json:
    call_id = new_id("call_")
    if name in freeform and isinstance(arguments, str):
        return {"type": "custom_tool_call", "id": new_id("ctc_"), "call_id": call_id,
                "name": name, "input": arguments, "status": "completed"}
    return {"type": "function_call", "id": new_id("fc_"), "call_id": call_id, "name": name,
            "arguments": arguments_json(arguments), "status": "completed"}


def stream(move: Reply, freeform: set[str]) -> Iterator[Event]:
    def event(kind: str, **fields: Any) -> Event:
        return Event(kind, {"type": kind, **fields})

    response_id = new_id("resp_")
    yield event("response.created", response={"id": response_id, "status": "in_progress"})
    index = 0
    if move.thinking:
        reasoning: Json = {"type": "reasoning", "id": new_id("rs_"), "summary": []}
        yield event("response.output_item.added", output_index=index, item=reasoning)
        for piece in move.thinking:
            yield event("response.reasoning_summary_text.delta", item_id=reasoning["id"],
                        output_index=index, summary_index=0, delta=piece)
        summary = [{"type": "summary_text", "text": "".join(move.thinking)}]
        yield event("response.output_item.done", output_index=index,
                    item={**reasoning, "summary": summary})
        index += 1
    if move.text:
        message: Json = {"type": "message", "id": new_id("msg_"), "role": "assistant",
                         "content": []}
        yield event("response.output_item.added", output_index=index, item=message)
        for piece in move.text:
            yield event("response.output_text.delta", item_id=message["id"],
                        output_index=index, content_index=0, delta=piece)
        text = {"type": "output_text", "text": "".join(move.text), "annotations": []}
        yield event("response.output_item.done", output_index=index,
                    item={**message, "content": [text]})
        index += 1
    for call in move.calls:
        item = call_item(call.name, call.arguments, freeform)
        yield event("response.output_item.added", output_index=index, item=item)
        yield event("response.output_item.done", output_index=index, item=item)
        index += 1
    yield event("response.completed",
                response={"id": response_id, "status": "completed", "usage": USAGE})
