"""The Gemini API, as gemini-cli uses it.

`POST …/models/<model>:streamGenerateContent?alt=sse` answers unnamed events, each a
`GenerateContentResponse`: one candidate whose `content.parts` carry thought pieces
(`{"text", "thought": true}`), text pieces and whole function calls (`functionCall`: a
name and its `args`); the last one has the `finishReason` and every one the usage.
`:generateContent` answers one such response: gemini-cli's side calls (the model router,
the "next speaker" check) ask for JSON matching the request's response schema
(`generationConfig.responseJsonSchema` or `responseSchema`), and get an instance of it.
`:countTokens` answers a count. A quota refusal (`MOCK-ERROR 429`) is the API's own:
`RESOURCE_EXHAUSTED` with a `QuotaFailure` detail naming a daily quota (which gemini-cli
does not retry) and a `RetryInfo`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tests.real_agents.model_api.scenario import Conversation, Refusal, Reply, decide
from tests.real_agents.model_api.wire import (
    Answer,
    ApiRequest,
    Event,
    Json,
    exchange_log,
    text_parts,
)

STATUSES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
            404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL"}
USAGE = {"promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120}
QUOTA_ID = "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
RETRY_DELAY = "3600s"
METHODS = (":streamGenerateContent", ":generateContent", ":countTokens")


def conversation(body: Json) -> Conversation:
    """A user turn with text (and no function responses) starts a new prompt; one carrying
    `functionResponse` parts answers the previous function calls."""
    prompt, results = "", list[str]()
    for content in body.get("contents") or []:
        if not isinstance(content, dict) or content.get("role", "user") != "user":
            continue
        parts = [p for p in content.get("parts") or [] if isinstance(p, dict)]
        answers = [p["functionResponse"] for p in parts
                   if isinstance(p.get("functionResponse"), dict)]
        said = text_parts([p["text"] for p in parts if isinstance(p.get("text"), str)])
        if said and not answers:
            prompt, results = "\n".join(said), []
        for answer in answers:
            response = answer.get("response")
            if isinstance(response, dict) and set(response) <= {"output", "error"}:
                text = response.get("output", response.get("error"))
                results.append(text if isinstance(text, str) else json.dumps(text))
            else:
                results.append(json.dumps(response))
    offered = []
    for tool in body.get("tools") or []:
        declarations = tool.get("functionDeclarations") if isinstance(tool, dict) else None
        for declaration in declarations or []:
            if isinstance(declaration, dict):
                offered.append(str(declaration.get("name", "")))
    return Conversation(prompt, tuple(results), tuple(offered))


def response_schema(body: Json) -> Json | None:
    """The JSON schema a side call wants its answer to match, if it asks for JSON."""
    config = body.get("generationConfig")
    if not isinstance(config, dict) or config.get("responseMimeType") != "application/json":
        return None
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    return schema if isinstance(schema, dict) else {}


def instance(schema: Any) -> Any:
    """A value matching `schema`: an enum's first value (the next-speaker check's "user",
    the router's first model), every property of an object, one item of an array."""
    if not isinstance(schema, dict):
        return None
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        properties = schema.get("properties")
        return {name: instance(sub) for name, sub in (properties or {}).items()}
    if kind == "array":
        return [instance(schema.get("items"))]
    if kind in ("integer", "number"):
        return 0
    if kind == "boolean":
        return False
    return "mock"


class Gemini:
    name = "gemini"

    def answer(self, request: ApiRequest) -> Answer | None:
        if request.method != "POST" or "/models/" not in request.path:
            return None
        method = next((m for m in METHODS if request.path.endswith(m)), None)
        if method is None:
            return None
        body = request.body
        if method == ":countTokens":
            return Answer(document={"totalTokens": USAGE["promptTokenCount"]},
                          log={"kind": "count_tokens"})
        model = request.path.rsplit("/", 1)[-1].removesuffix(method)
        talk = conversation(body)
        schema = response_schema(body)
        if schema is not None and method == ":generateContent":
            document = candidate([{"text": json.dumps(instance(schema))}], model, "STOP")
            return Answer(document=document, log={"kind": "schema", "model": model,
                                                   "prompt": talk.prompt[:200], "body": body})
        move = decide(talk)
        if isinstance(move, Refusal):
            answer = Answer(status=move.status, document=refusal(move))
        elif method == ":streamGenerateContent":
            answer = Answer(events=stream(move, model), pace=move.pace)
        else:
            answer = Answer(document=candidate(parts(move), model, "STOP"))
        answer.log = exchange_log(talk, move, {**body, "model": model})
        return answer


def refusal(move: Refusal) -> Json:
    status = STATUSES.get(move.status, "UNKNOWN")
    error: Json = {"code": move.status, "message": f"mock: {move.message}", "status": status}
    if move.status == 429:
        error["details"] = [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{
                "quotaMetric": "generativelanguage.googleapis.com/generate_requests_per_day",
                "quotaId": QUOTA_ID, "quotaValue": "50"}]},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": RETRY_DELAY},
        ]
    return {"error": error}


def parts(move: Reply) -> list[Json]:
    out: list[Json] = [{"text": piece, "thought": True} for piece in move.thinking]
    out += [{"text": piece} for piece in move.text]
    out += [{"functionCall": {"name": call.name, "args": call.arguments}} for call in move.calls]
    return out


def candidate(content: list[Json], model: str, finish: str | None) -> Json:
    chosen: Json = {"content": {"role": "model", "parts": content}, "index": 0}
    if finish:
        chosen["finishReason"] = finish
    return {"candidates": [chosen], "usageMetadata": USAGE, "modelVersion": model}


def stream(move: Reply, model: str) -> Iterator[Event]:
    pieces = parts(move)
    for number, piece in enumerate(pieces):
        last = number == len(pieces) - 1
        yield Event(None, candidate([piece], model, "STOP" if last else None))
    if not pieces:
        yield Event(None, candidate([{"text": ""}], model, "STOP"))
