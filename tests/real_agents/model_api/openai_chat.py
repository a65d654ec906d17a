"""OpenAI Chat Completions, as vibe-acp's generic provider uses it (and qwen-code).

`POST /v1/chat/completions` with `stream: true` answers unnamed events, each a
`chat.completion.chunk` whose one choice carries a `delta`: the role first, then
`reasoning_content` (thinking), `content` (text) and `tool_calls` (an id and a name, then
fragments of the JSON arguments, by call index); the last chunk has the `finish_reason`
and the usage, and `[DONE]` ends the stream. Without `stream`, one `chat.completion`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from tests.real_agents.model_api.scenario import Conversation, Refusal, Reply, decide
from tests.real_agents.model_api.wire import (
    Answer,
    ApiRequest,
    Event,
    Json,
    arguments_json,
    exchange_log,
    new_id,
    pieces,
    text_parts,
)

ERROR_CODES = {400: "invalid_request_error", 401: "invalid_api_key", 403: "permission_denied",
               429: "rate_limit_exceeded", 500: "server_error"}
USAGE = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}


def conversation(body: Json) -> Conversation:
    prompt, results = "", list[str]()
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        text = "\n".join(text_parts(message.get("content")))
        if message.get("role") == "user":
            prompt = text
            results.clear()
        elif message.get("role") == "tool":
            results.append(text)
    offered = []
    for tool in body.get("tools") or []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict):
            offered.append(str(function.get("name", "")))
    return Conversation(prompt, tuple(results), tuple(offered))


class ChatCompletions:
    name = "openai-chat"

    def answer(self, request: ApiRequest) -> Answer | None:
        if request.method != "POST" or not request.path.endswith("/chat/completions"):
            return None
        body = request.body
        talk = conversation(body)
        move = decide(talk)
        if isinstance(move, Refusal):
            code = ERROR_CODES.get(move.status, "server_error")
            answer = Answer(status=move.status, document={"error": {
                "type": code, "code": code, "message": f"mock: {move.message}", "param": None}})
        elif body.get("stream"):
            answer = Answer(events=stream(move, body), pace=move.pace)
        else:
            answer = Answer(document=whole(move, body))
        answer.log = exchange_log(talk, move, body)
        return answer


def finish_reason(move: Reply) -> str:
    return "tool_calls" if move.calls else "stop"


def whole(move: Reply, body: Json) -> Json:
    message: Json = {"role": "assistant", "content": "".join(move.text)}
    if move.thinking:
        message["reasoning_content"] = "".join(move.thinking)
    if move.calls:
        message["tool_calls"] = [
            {"id": new_id("call_"), "type": "function",
             "function": {"name": call.name, "arguments": arguments_json(call.arguments)}}
            for call in move.calls]
    return {"id": new_id("chatcmpl-"), "object": "chat.completion",
            "created": int(time.time()), "model": body.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(move)}],
            "usage": USAGE}


def stream(move: Reply, body: Json) -> Iterator[Event]:
    frame = {"id": new_id("chatcmpl-"), "object": "chat.completion.chunk",
             "created": int(time.time()), "model": body.get("model")}

    def chunk(delta: Json, finish: str | None = None, **extra: object) -> Event:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return Event(None, {**frame, "choices": [choice], **extra})

    deltas: list[Json] = [{"reasoning_content": piece} for piece in move.thinking]
    deltas += [{"content": piece} for piece in move.text]
    for index, call in enumerate(move.calls):
        deltas.append({"tool_calls": [{"index": index, "id": new_id("call_"),
                                       "type": "function",
                                       "function": {"name": call.name, "arguments": ""}}]})
        deltas += [{"tool_calls": [{"index": index, "function": {"arguments": part}}]}
                   for part in pieces(arguments_json(call.arguments))]
    for number, delta in enumerate(deltas):
        yield chunk({"role": "assistant", **delta} if number == 0 else delta)
    yield chunk({}, finish_reason(move), usage=USAGE)
    yield Event(None, "[DONE]")
