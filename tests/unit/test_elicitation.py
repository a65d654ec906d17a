"""Elicitation requests as agents send them (claude's AskUserQuestion form, codex's user
input form, a URL) and the checking of a person's answers."""

from __future__ import annotations

from typing import Any

import pytest

from louise.acp.elicitation import (
    ElicitationError,
    UrlRefused,
    check_content,
    parse_request,
)

# claude-agent-acp 0.101's AskUserQuestion form (askUserQuestionsToCreateRequest).
CLAUDE_FORM = {
    "mode": "form", "sessionId": "s1", "toolCallId": "toolu_1",
    "message": "Which database should we use?",
    "requestedSchema": {"type": "object", "properties": {
        "question_0": {"type": "string", "title": "Database", "oneOf": [
            {"const": "Postgres", "title": "Postgres", "description": "relational"},
            {"const": "SQLite", "title": "SQLite"}]},
        "question_0_custom": {"type": "string", "title": "Other",
                              "description": "Type your own answer (optional)."}}},
}


def test_claudes_question_form() -> None:
    request = parse_request(CLAUDE_FORM)
    assert (request.mode, request.session_id, request.tool_call_id) == ("form", "s1", "toolu_1")
    choice, other = request.fields
    assert choice.kind == "choice" and [c.value for c in choice.choices] == ["Postgres",
                                                                              "SQLite"]
    assert other.kind == "string" and not other.required
    content, problems = check_content(request.fields, {"question_0": "SQLite",
                                                       "question_0_custom": ""})
    assert (content, problems) == ({"question_0": "SQLite"}, [])


def test_every_field_kind_is_checked() -> None:
    request = parse_request({"mode": "form", "requestId": 7, "message": "m",
                             "requestedSchema": {"properties": {
                                 "n": {"type": "integer", "minimum": 1, "maximum": 3},
                                 "x": {"type": "number"},
                                 "b": {"type": "boolean", "default": True},
                                 "e": {"type": "string", "format": "email"},
                                 "d": {"type": "string", "format": "date"},
                                 "p": {"type": "string", "pattern": "^v[0-9]+$",
                                       "maxLength": 4},
                                 "m": {"type": "array", "minItems": 1, "items": {
                                     "anyOf": [{"const": "a", "title": "A"},
                                               {"const": "b", "title": "B"}]}}},
                                 "required": ["n", "m"]}})
    assert request.request_id == 7 and request.session_id is None
    good = {"n": "2", "x": 1.5, "b": False, "e": "a@b.co", "d": "2026-01-31", "p": "v12",
            "m": ["b", "a", "b"], "unknown": "dropped"}
    assert check_content(request.fields, good) == (
        {"n": 2, "x": 1.5, "b": False, "e": "a@b.co", "d": "2026-01-31", "p": "v12",
         "m": ["b", "a"]}, [])
    bad = {"n": 4, "x": "one", "b": "yes", "e": "nope", "d": "31/01", "p": "v12345",
           "m": ["c"]}
    _, problems = check_content(request.fields, bad)
    assert problems == ["n: at most 3", "x: not a number", "b: yes or no",
                        "e: not an email address", "d: not a date (YYYY-MM-DD)",
                        "p: at most 4 characters", "m: pick among the choices"]
    assert check_content(request.fields, {})[1] == ["n: required", "m: required"]
    assert check_content(request.fields, None)[1] == ["n: required", "m: required"]


@pytest.mark.parametrize("params, message", [
    ({"mode": "form", "message": "m", "requestedSchema": {}}, "neither sessionId"),
    ({"mode": "telepathy", "sessionId": "s"}, "unknown elicitation mode"),
    ({"mode": "form", "sessionId": "s"}, "needs requestedSchema"),
    ({"mode": "form", "sessionId": "s", "requestedSchema": {"properties": {
        "f": {"type": "_secret"}}}}, "type louise cannot show"),
    ({"mode": "form", "sessionId": "s", "requestedSchema": {"properties": {
        f"f{i}": {"type": "string"} for i in range(51)}}}, "at most 50 fields"),
    ({"mode": "url", "sessionId": "s", "url": "https://a.example"}, "elicitationId"),
    ({"mode": "url", "sessionId": "s", "elicitationId": "e", "url": "javascript:alert(1)"},
     "only http and https"),
    ({"mode": "url", "sessionId": "s", "elicitationId": "e", "url": "file:///etc/passwd"},
     "only http and https"),
    ({"mode": "url", "sessionId": "s", "elicitationId": "e",
      "url": "https://a.example/\x1b[2J"}, "control characters"),
])
def test_what_louise_will_not_answer(params: dict[str, Any], message: str) -> None:
    with pytest.raises(ElicitationError, match=message):
        parse_request(params)


def test_a_url_names_its_host_and_warns() -> None:
    request = parse_request({"mode": "url", "sessionId": "s", "elicitationId": "e",
                             "url": "https://github.com/login/device", "message": "m"})
    assert (request.host, request.warnings) == ("github.com", ())
    odd = parse_request({"mode": "url", "requestId": 1, "elicitationId": "e",
                         "url": "http://xn--gthub-n4a.com/x"})
    assert odd.warnings == ("the host name is punycode (it may imitate another name)",
                            "the URL is not https")
    ip = parse_request({"mode": "url", "requestId": 1, "elicitationId": "e",
                        "url": "https://10.0.0.1/"})
    assert ip.warnings == ("the host is a bare IP address (10.0.0.1)",)
    loopback = parse_request({"mode": "url", "requestId": 1, "elicitationId": "e",
                              "url": "http://[::1]:8080/callback"})
    assert (loopback.host, loopback.warnings) == (
        "[::1]", ("the host is a bare IP address ([::1])",))
    decimal = parse_request({"mode": "url", "requestId": 1, "elicitationId": "e",
                             "url": "http://2130706433/"})
    assert (decimal.host, decimal.warnings) == (
        "127.0.0.1", ("the host is a bare IP address (127.0.0.1)",))
    wide = parse_request({"mode": "url", "requestId": 1, "elicitationId": "e",
                          "url": "https://\uff45\uff56\uff49\uff4c.example/"})
    assert (wide.host, wide.warnings) == (
        "evil.example", ("the host name has non-ASCII letters (it may imitate another name)",))


@pytest.mark.parametrize("url, shown", [
    ("https://evil.example\\.accounts.google.com/", "a backslash in its address, which a "
     "browser reads as a /: a browser would open evil.example"),
    ("https://accounts.google.com@evil.example/", "a name before an @ in its address, "
     "which is not where it goes: a browser would open evil.example"),
    ("https://accounts.google.com%2F@evil.example/", "a browser would open evil.example"),
    ("https://evil%2Eexample/", "its host is written with %-escapes: a browser would open "
     "evil.example"),
    ("https://evil%2Fexample/", "the URL's host is not a valid name"),
    ("https:evil.example", "it does not start with https://: a browser would open "
     "evil.example"),
    ("https:////evil.example/", "it does not start with https://"),
])
def test_a_url_written_to_disguise_where_it_goes_is_refused(url: str, shown: str) -> None:
    with pytest.raises(UrlRefused) as refused:
        parse_request({"mode": "url", "sessionId": "s", "elicitationId": "e", "url": url})
    assert shown in str(refused.value)
