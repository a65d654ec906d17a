"""The real-agent suite's model API as the suite starts it (harness.MockModel: a process on
a free port, its request log), over real HTTP: each dialect's answer framed as its agents
read it, the rate-limit headers, errors in each API's own shape, and the log."""

from __future__ import annotations

import gzip
import http.client
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.real_agents.harness import MockModel

TOOLS = {"anthropic": [{"name": "Bash"}],
         "chat": [{"type": "function", "function": {"name": "bash"}}],
         "responses": [{"type": "function", "name": "exec_command"}],
         "gemini": [{"functionDeclarations": [{"name": "run_shell_command"},
                                              {"name": "read_file"}]}]}


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockModel]:
    mock = MockModel(tmp_path_factory.mktemp("model-api"))
    mock.start()
    try:
        yield mock
    finally:
        mock.stop()


def post(model: MockModel, path: str, body: dict[str, Any],
         headers: dict[str, str] | None = None,
         raw: bytes | None = None) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", model.port, timeout=60)
    try:
        connection.request("POST", path, raw if raw is not None else json.dumps(body).encode(),
                           {"Content-Type": "application/json", **(headers or {})})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, \
            response.read()
    finally:
        connection.close()


def sse(data: bytes) -> list[tuple[str | None, str]]:
    """(event name, data) of each server-sent event."""
    events = []
    for block in data.decode().split("\n\n"):
        if not block.strip():
            continue
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((fields.get("event"), fields["data"]))
    return events


def logged(model: MockModel, prompt: str) -> dict[str, Any]:
    [entry] = [r for r in model.requests() if r.get("prompt") == prompt]
    return entry


def test_anthropic_streams_named_events_with_the_rate_limit_headers(model: MockModel) -> None:
    body = {"model": "claude-mock", "stream": True, "tools": TOOLS["anthropic"],
            "messages": [{"role": "user", "content": "hello anthropic"}]}
    status, headers, data = post(model, "/v1/messages?beta=true", body)
    assert status == 200 and headers["content-type"] == "text/event-stream"
    assert headers["anthropic-ratelimit-unified-5h-utilization"] == "0.24"
    events = sse(data)
    assert events[0][0] == "message_start" and events[-1][0] == "message_stop"
    assert all(json.loads(payload)["type"] == name for name, payload in events)
    text = "".join(json.loads(p)["delta"].get("text", "") for n, p in events
                   if n == "content_block_delta")
    assert "```python\ndef hello():" in text
    entry = logged(model, "hello anthropic")
    assert (entry["dialect"], entry["kind"], entry["step"]) == ("anthropic", "text", 0)
    assert entry["body"] == body and entry["path"] == "/v1/messages?beta=true"


def test_responses_streams_and_carries_codex_headers(model: MockModel) -> None:
    body = {"model": "gpt-mock", "stream": True, "tools": TOOLS["responses"],
            "input": [{"type": "message", "role": "user",
                       "content": [{"type": "input_text", "text": "MOCK-SHELL please"}]}]}
    status, headers, data = post(model, "/v1/responses", body)
    assert status == 200 and headers["x-codex-primary-used-percent"] == "24"
    events = sse(data)
    assert [name for name, _ in events][-1] == "response.completed"
    items = [json.loads(p)["item"] for n, p in events if n == "response.output_item.done"]
    assert items[-1]["type"] == "function_call" and items[-1]["name"] == "exec_command"
    assert logged(model, "MOCK-SHELL please")["calls"][0]["name"] == "exec_command"


def test_chat_takes_a_gzipped_body_and_ends_its_stream_with_done(model: MockModel) -> None:
    body = {"model": "m", "stream": True, "tools": TOOLS["chat"],
            "messages": [{"role": "user", "content": "hello chat"}]}
    status, _, data = post(model, "/v1/chat/completions", body,
                           {"Content-Encoding": "gzip"}, gzip.compress(json.dumps(body).encode()))
    assert status == 200
    events = sse(data)
    assert all(name is None for name, _ in events) and events[-1][1] == "[DONE]"
    assert logged(model, "hello chat")["dialect"] == "openai-chat"


def gemini_body(prompt: str) -> dict[str, Any]:
    return {"contents": [{"role": "user", "parts": [{"text": prompt}]}],
            "tools": TOOLS["gemini"]}


def test_gemini_streams_candidates_and_a_whole_function_call(model: MockModel) -> None:
    path = "/v1beta/models/gemini-mock:streamGenerateContent?alt=sse"
    status, headers, data = post(model, path, gemini_body("MOCK-SHELL via gemini"))
    assert status == 200 and headers["content-type"] == "text/event-stream"
    chunks = [json.loads(payload) for _, payload in sse(data)]
    parts = [part for c in chunks for part in c["candidates"][0]["content"]["parts"]]
    assert [p["functionCall"] for p in parts if "functionCall" in p] == [{
        "name": "run_shell_command", "args": {"command": "echo hello-from-shell | tee "
                                              "shell-out.txt",
                                              "description": "Write a word to a file"}}]
    assert [c["candidates"][0].get("finishReason") for c in chunks][-1] == "STOP"
    assert all(c["modelVersion"] == "gemini-mock" and c["usageMetadata"] for c in chunks)
    # The tool's answer comes back as a functionResponse: the closing text quotes it.
    body = gemini_body("MOCK-SHELL via gemini")
    body["contents"] += [{"role": "model", "parts": parts},
                         {"role": "user", "parts": [{"functionResponse": {
                             "name": "run_shell_command", "response": {"output": "done!"}}}]}]
    _, _, data = post(model, path, body)
    text = "".join(p.get("text", "") for _, payload in sse(data)
                   for p in json.loads(payload)["candidates"][0]["content"]["parts"])
    assert text.endswith("Last tool result: done!"), text


def test_gemini_side_calls_get_json_of_their_schema_and_a_count(model: MockModel) -> None:
    schema = {"type": "object", "properties": {
        "reasoning": {"type": "string"},
        "next_speaker": {"type": "string", "enum": ["user", "model"]},
        "scores": {"type": "array", "items": {"type": "integer"}}}}
    body = {"contents": [{"role": "user", "parts": [{"text": "who speaks next?"}]}],
            "generationConfig": {"responseMimeType": "application/json",
                                 "responseJsonSchema": schema}}
    status, _, data = post(model, "/v1beta/models/flash:generateContent", body)
    [candidate] = json.loads(data)["candidates"]
    assert status == 200 and json.loads(candidate["content"]["parts"][0]["text"]) == {
        "reasoning": "mock", "next_speaker": "user", "scores": [0]}
    status, _, data = post(model, "/v1beta/models/flash:countTokens", {"contents": []})
    assert (status, json.loads(data)) == (200, {"totalTokens": 100})


def test_gemini_quota_is_resource_exhausted_with_a_quota_failure(model: MockModel) -> None:
    status, _, data = post(model, "/v1beta/models/m:streamGenerateContent?alt=sse",
                           gemini_body("MOCK-ERROR 429 for gemini"))
    error = json.loads(data)["error"]
    assert (status, error["code"], error["status"]) == (429, 429, "RESOURCE_EXHAUSTED")
    kinds = [d["@type"].rsplit(".", 1)[-1] for d in error["details"]]
    assert kinds == ["QuotaFailure", "RetryInfo"]
    assert "PerDay" in error["details"][0]["violations"][0]["quotaId"]


@pytest.mark.parametrize(("path", "tools", "shape"), [
    ("/v1/messages", "anthropic", {"type": "error", "error": {
        "type": "rate_limit_error", "message": "mock: too many requests; try again later"}}),
    ("/v1/chat/completions", "chat", {"error": {
        "type": "rate_limit_exceeded", "code": "rate_limit_exceeded", "param": None,
        "message": "mock: too many requests; try again later"}}),
])
def test_mock_error_answers_in_the_apis_own_shape(model: MockModel, path: str, tools: str,
                                                  shape: dict[str, Any]) -> None:
    prompt = f"MOCK-ERROR 429 through {tools}"
    status, headers, data = post(model, path, {"tools": TOOLS[tools],
                                               "messages": [{"role": "user", "content": prompt}]})
    assert (status, json.loads(data)) == (429, shape)
    if tools == "anthropic":  # a subscriber who hit the five-hour limit
        assert headers["anthropic-ratelimit-unified-status"] == "rejected"
    assert logged(model, prompt)["status"] == 429


def test_an_unknown_path_is_a_logged_404(model: MockModel) -> None:
    status, _, _ = post(model, "/v1/nowhere", {"x": 1})
    assert status == 404
    assert [r["body"] for r in model.requests() if r["path"] == "/v1/nowhere"] == [{"x": 1}]


def test_a_client_that_hangs_up_midway_is_logged(model: MockModel) -> None:
    body = {"stream": True, "tools": TOOLS["chat"],
            "messages": [{"role": "user", "content": "MOCK-SLOW then gone"}]}
    connection = http.client.HTTPConnection("127.0.0.1", model.port, timeout=60)
    connection.request("POST", "/v1/chat/completions", json.dumps(body).encode())
    response = connection.getresponse()
    assert b"slow chunk 0." in response.fp.readline() + response.fp.readline()
    connection.close()
    response.close()
    deadline = time.monotonic() + 60
    while not [r for r in model.requests() if r.get("client_gone") and r["kind"] == "slow"]:
        assert time.monotonic() < deadline, model.requests()[-1]
        time.sleep(0.05)


def test_the_port_file_and_log_are_where_the_harness_reads_them(model: MockModel) -> None:
    assert (Path(model.log_dir) / "port").read_text() == str(model.port)
    assert (Path(model.log_dir) / "requests.jsonl").exists()
