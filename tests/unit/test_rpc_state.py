"""The JSON-RPC state machine without I/O: every kind of malformed input becomes one
enumerated protocol error and the state goes on; ids, tables and cancels."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from louise.acp.errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    PARSE_ERROR,
    LocalProtocolError,
    ProtocolErrorKind,
    RpcError,
)
from louise.acp.rpc_events import (
    CancelRequest,
    ErrorResponse,
    Event,
    Notification,
    ProtocolViolation,
    RejectRequest,
    Request,
    Response,
)
from louise.acp.rpc_state import RpcState

Kind = ProtocolErrorKind
BAD_IDS = [{}, {"a": 1}, [], [1], 1.5, 1.0, True, False]
NOTE = {"jsonrpc": "2.0", "method": "session/update", "params": {"n": 1}}


def line(message: Any) -> bytes:
    return json.dumps(message).encode() + b"\n"


def kinds(events: list[Event]) -> list[ProtocolErrorKind]:
    return [e.kind for e in events if isinstance(e, ProtocolViolation)]


def still_works(state: RpcState) -> None:
    """After any bad input, the next good message goes through."""
    assert state.receive_data(line(NOTE)) == [Notification("session/update", {"n": 1})]


def test_notification_request_and_response_round_trip() -> None:
    state = RpcState()
    request_id, sent = state.send_request("session/new", {"cwd": "/"})
    assert json.loads(sent) == {"jsonrpc": "2.0", "id": request_id, "method": "session/new",
                                "params": {"cwd": "/"}}
    events = state.receive_data(
        line(NOTE) + line({"jsonrpc": "2.0", "id": request_id, "result": {"sessionId": "s"}})
        + line({"jsonrpc": "2.0", "id": "a", "method": "fs/read_text_file", "params": {}}))
    assert events == [Notification("session/update", {"n": 1}),
                      Response(request_id, "session/new", {"sessionId": "s"}),
                      Request("a", "fs/read_text_file", {})]
    assert state.pending == {}
    assert json.loads(state.respond("a", {"content": "x"})) == {
        "jsonrpc": "2.0", "id": "a", "result": {"content": "x"}}
    assert state.inbound == {}


def test_ids_are_allocated_in_order_and_never_reused() -> None:
    state = RpcState()
    ids = [state.send_request("m")[0] for _ in range(3)]
    assert ids == [0, 1, 2]
    state.abandon(1)
    assert state.send_request("m")[0] == 3


def test_error_response_keeps_code_message_and_data() -> None:
    state = RpcState()
    request_id, _ = state.send_request("session/prompt")
    [event] = state.receive(
        {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32000, "message": "auth",
                                                       "data": {"x": 1}}})
    assert isinstance(event, ErrorResponse) and event.method == "session/prompt"
    assert (event.error.code, event.error.message, event.error.data) == (-32000, "auth", {"x": 1})


def test_error_null_means_a_result() -> None:
    state = RpcState()
    request_id, _ = state.send_request("m")
    assert state.receive({"jsonrpc": "2.0", "id": request_id, "result": 5, "error": None}) == [
        Response(request_id, "m", 5)]


# ---------------------------------------------------------------------- each kind


def test_oversized_line() -> None:
    state = RpcState(max_line_bytes=100)
    events = state.receive_data(line({"jsonrpc": "2.0", "method": "x", "params": "y" * 500}))
    assert kinds(events) == [Kind.OVERSIZED_LINE]
    assert "limit 100 bytes" in events[0].detail  # type: ignore[union-attr]
    still_works(state)


def test_invalid_utf8() -> None:
    state = RpcState()
    assert kinds(state.receive_data(b'{"jsonrpc":"2.0","method":"m","params":"\xff"}\n')) == [
        Kind.INVALID_UTF8]
    still_works(state)


@pytest.mark.parametrize("raw", [b"not json", b"{", b'{"a":1} extra', b'{"a":1} {"b":2}',
                                 b"NaN", b"[Infinity]",
                                 b'{"x":-Infinity}', b"1" * 5000])
def test_invalid_json(raw: bytes) -> None:
    state = RpcState()
    assert kinds(state.receive_data(raw + b"\n")) == [Kind.INVALID_JSON]
    still_works(state)


def test_whitespace_around_a_message_is_fine() -> None:
    state = RpcState()
    raw = b' \t{"jsonrpc":"2.0","method":"a"}  \n{"jsonrpc":"2.0","method":"b"} \r\n'
    assert state.receive_data(raw) == [Notification("a", None), Notification("b", None)]


def test_too_large() -> None:
    state = RpcState(max_json_values=1000)
    raw = b'{"jsonrpc":"2.0","method":"m","params":[' + b"{}," * 2000 + b"{}]}\n"
    assert kinds(state.receive_data(raw)) == [Kind.TOO_LARGE]
    still_works(state)


def test_brackets_and_commas_inside_strings_do_not_count() -> None:
    state = RpcState(max_json_values=1000, max_json_depth=10)
    text = '[{,"\\"' * 5000  # brackets, commas and escaped quotes, all inside one string
    [event] = state.receive_data(line({"jsonrpc": "2.0", "method": "m", "params": text}))
    assert event == Notification("m", text)


@pytest.mark.parametrize("depth", [129, 5000, 100_000])
def test_too_deep(depth: int) -> None:
    state = RpcState()
    nested = b"[" * depth + b"]" * depth
    assert kinds(state.receive_data(nested + b"\n")) == [Kind.TOO_DEEP]
    assert kinds(state.receive_data(b'{"method":"m","params":' + nested + b"}\n")) == [
        Kind.TOO_DEEP]
    still_works(state)


def test_nesting_at_the_limit_is_fine() -> None:
    state = RpcState()
    params = b"[" * 127 + b"]" * 127  # plus the envelope object: 128 levels
    [event] = state.receive_data(b'{"method":"m","params":' + params + b"}\n")
    assert isinstance(event, Notification)


def test_recursion_error_from_the_decoder_is_a_protocol_error() -> None:
    # Even with the structural check off, the decoder's own recursion limit is caught.
    state = RpcState(max_json_depth=10**9, max_json_values=10**9)
    assert kinds(state.receive_data(b"[" * 100_000 + b"]" * 100_000 + b"\n")) == [Kind.TOO_DEEP]
    still_works(state)


@pytest.mark.parametrize("value", [[1, 2], [], "text", 42, 1.5, None, True])
def test_not_an_object(value: Any) -> None:
    state = RpcState()
    assert kinds(state.receive(value)) == [Kind.NOT_AN_OBJECT]
    still_works(state)


def test_not_json_rpc() -> None:
    state = RpcState()
    assert kinds(state.receive({"jsonrpc": "2.0"})) == [Kind.NOT_JSON_RPC]
    assert kinds(state.receive({"result": 1})) == [Kind.NOT_JSON_RPC]


def test_invalid_method() -> None:
    state = RpcState()
    assert kinds(state.receive({"jsonrpc": "2.0", "method": ["m"]})) == [Kind.INVALID_METHOD]
    events = state.receive({"jsonrpc": "2.0", "id": 3, "method": 5})
    assert kinds(events) == [Kind.INVALID_METHOD]
    assert isinstance(events[1], RejectRequest) and events[1].error.code == INVALID_REQUEST
    assert json.loads(state.reject(events[1]))["id"] == 3


@pytest.mark.parametrize("bad_id", BAD_IDS)
def test_request_with_a_bad_id_is_rejected_with_a_null_id(bad_id: Any) -> None:
    state = RpcState()
    events = state.receive({"jsonrpc": "2.0", "id": bad_id, "method": "fs/read_text_file"})
    assert kinds(events) == [Kind.INVALID_ID]
    reject = events[1]
    assert isinstance(reject, RejectRequest) and reject.request_id is None
    assert json.loads(state.reject(reject)) == {
        "jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST,
                                                "message": "Invalid request id"}}
    assert state.inbound == {}
    still_works(state)


@pytest.mark.parametrize("bad_id", BAD_IDS)
def test_response_with_a_bad_id(bad_id: Any) -> None:
    state = RpcState()
    state.send_request("m")  # id 0 pending: neither 0.0, False nor [0] may resolve it
    assert kinds(state.receive({"jsonrpc": "2.0", "id": bad_id, "result": {}})) == [
        Kind.INVALID_ID]
    assert state.pending == {0: "m"}


def test_bool_and_float_ids_do_not_resolve_integer_ids() -> None:
    state = RpcState()
    state.send_request("m")
    state.send_request("m")  # ids 0 and 1; True == 1 and 0.0 == 0 in Python
    for bad_id in (True, False, 0.0, 1.0):
        assert kinds(state.receive({"jsonrpc": "2.0", "id": bad_id, "result": 1})) == [
            Kind.INVALID_ID]
    assert state.pending == {0: "m", 1: "m"}


@pytest.mark.parametrize("bad_id", BAD_IDS)
def test_cancel_request_with_a_bad_id(bad_id: Any) -> None:
    state = RpcState()
    state.receive({"jsonrpc": "2.0", "id": 1, "method": "m"})
    events = state.receive({"jsonrpc": "2.0", "method": "$/cancel_request",
                            "params": {"requestId": bad_id}})
    assert kinds(events) == [Kind.INVALID_ID]
    assert not state.is_cancelled(1)


@pytest.mark.parametrize("params", [None, {}, [1], "x", {"id": 1}])
def test_invalid_cancel(params: Any) -> None:
    state = RpcState()
    message = {"jsonrpc": "2.0", "method": "$/cancel_request"}
    if params is not None:
        message["params"] = params
    assert kinds(state.receive(message)) == [Kind.INVALID_CANCEL]


def test_duplicate_request_id() -> None:
    state = RpcState()
    assert state.receive({"jsonrpc": "2.0", "id": 7, "method": "a"}) == [Request(7, "a", None)]
    events = state.receive({"jsonrpc": "2.0", "id": 7, "method": "b"})
    assert kinds(events) == [Kind.DUPLICATE_REQUEST_ID]
    assert isinstance(events[1], RejectRequest) and events[1].request_id == 7
    assert state.inbound == {7: False}  # the first is still there, to be answered
    state.respond(7, {})
    assert state.receive({"jsonrpc": "2.0", "id": 7, "method": "c"}) == [Request(7, "c", None)]


def test_unknown_response_id() -> None:
    state = RpcState()
    for request_id in (5, "5", None):
        assert kinds(state.receive({"jsonrpc": "2.0", "id": request_id, "result": 1})) == [
            Kind.UNKNOWN_RESPONSE_ID]


def test_an_answer_with_a_null_id_says_what_the_agent_complained_about() -> None:
    state = RpcState()
    [event] = state.receive({"jsonrpc": "2.0", "id": None,
                             "error": {"code": PARSE_ERROR, "message": "Parse error"}})
    assert isinstance(event, ProtocolViolation) and "Parse error" in event.detail


def test_result_and_error() -> None:
    state = RpcState()
    request_id, _ = state.send_request("m")
    events = state.receive({"jsonrpc": "2.0", "id": request_id, "result": {},
                            "error": {"code": -1, "message": "no"}})
    assert kinds(events) == [Kind.RESULT_AND_ERROR]
    # The request fails (never a half-believed result), so nobody waits for ever.
    assert isinstance(events[1], ErrorResponse) and events[1].error.message == "no"
    # For an id nobody waits for: one report, not two.
    assert kinds(state.receive({"jsonrpc": "2.0", "id": 99, "result": 1,
                                "error": {"code": 1, "message": "x"}})) == [Kind.RESULT_AND_ERROR]


def test_incomplete_response() -> None:
    state = RpcState()
    request_id, _ = state.send_request("m")
    events = state.receive({"jsonrpc": "2.0", "id": request_id})
    assert kinds(events) == [Kind.INCOMPLETE_RESPONSE]
    assert isinstance(events[1], ErrorResponse) and events[1].error.code == INTERNAL_ERROR


@pytest.mark.parametrize("error", ["boom", 5, [], {"message": "no code"},
                                   {"code": "1", "message": "x"}, {"code": True, "message": "x"},
                                   {"code": 1}])
def test_malformed_error(error: Any) -> None:
    state = RpcState()
    request_id, _ = state.send_request("m")
    events = state.receive({"jsonrpc": "2.0", "id": request_id, "error": error})
    assert kinds(events) == [Kind.MALFORMED_ERROR]
    assert isinstance(events[1], ErrorResponse)


def test_every_kind_has_a_test_above() -> None:
    tested = {Kind.OVERSIZED_LINE, Kind.INVALID_UTF8, Kind.INVALID_JSON, Kind.TOO_LARGE,
              Kind.TOO_DEEP, Kind.NOT_AN_OBJECT, Kind.NOT_JSON_RPC, Kind.INVALID_METHOD,
              Kind.INVALID_ID, Kind.DUPLICATE_REQUEST_ID, Kind.INVALID_CANCEL,
              Kind.UNKNOWN_RESPONSE_ID, Kind.RESULT_AND_ERROR, Kind.INCOMPLETE_RESPONSE,
              Kind.MALFORMED_ERROR}
    assert tested == set(Kind)


# ---------------------------------------------------------------------- unreadable lines


def test_an_unreadable_request_is_answered_when_its_head_names_it() -> None:
    state = RpcState(max_line_bytes=200)
    raw = b'{"jsonrpc":"2.0","id":12,"method":"fs/write_text_file","params":{"content":"' \
        + b"x" * 1000 + b'"}}\n'
    events = state.receive_data(raw)
    assert kinds(events) == [Kind.OVERSIZED_LINE]
    reject = events[1]
    assert isinstance(reject, RejectRequest) and reject.request_id == 12
    assert reject.error.code == INVALID_REQUEST
    assert f"{len(raw) - 1}-byte line" in reject.error.message
    broken = b'{"jsonrpc": "2.0", "id": "s-1", "method": "m", "params": {"x": "\xff"}}\n'
    events = state.receive_data(broken)
    assert isinstance(events[1], RejectRequest) and events[1].request_id == "s-1"
    assert events[1].error.code == PARSE_ERROR


def test_an_unreadable_answer_fails_our_request_instead_of_leaving_it_waiting() -> None:
    state = RpcState(max_line_bytes=200)
    request_id, _ = state.send_request("session/load")
    raw = b'{"jsonrpc":"2.0","id":%d,"result":{"x":"' % request_id + b"x" * 1000 + b'"}}\n'
    events = state.receive_data(raw)
    assert kinds(events) == [Kind.OVERSIZED_LINE]
    assert isinstance(events[1], ErrorResponse) and events[1].method == "session/load"
    assert state.pending == {}


def test_a_head_naming_a_request_in_progress_is_not_answered() -> None:
    state = RpcState(max_line_bytes=200)
    state.receive({"jsonrpc": "2.0", "id": 12, "method": "m"})
    raw = b'{"jsonrpc":"2.0","id":12,"method":"m","params":"' + b"x" * 1000 + b'"}\n'
    assert [type(e) for e in state.receive_data(raw)] == [ProtocolViolation]


def test_a_head_out_of_order_or_of_a_notification_answers_nothing() -> None:
    state = RpcState(max_line_bytes=100)
    for raw in (b'{"method":"m","id":3,"params":"', b'{"jsonrpc":"2.0","method":"m","params":"'):
        events = state.receive_data(raw + b"x" * 1000 + b'"}\n')
        assert [type(e) for e in events] == [ProtocolViolation]


# ---------------------------------------------------------------------- cancels and tables


def test_cancel_of_an_unanswered_request_is_an_event_once() -> None:
    state = RpcState()
    state.receive({"jsonrpc": "2.0", "id": 4, "method": "session/request_permission"})
    cancel = {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 4}}
    assert state.receive(cancel) == [CancelRequest(4)]
    assert state.is_cancelled(4)
    assert state.receive(cancel) == []  # already cancelled
    state.respond_error(4, RpcError.cancelled())
    assert state.receive(cancel) == []  # already answered: the cancel crossed our reply
    assert not state.is_cancelled(4)


def test_late_answer_to_an_abandoned_request_is_dropped_quietly() -> None:
    state = RpcState()
    request_id, _ = state.send_request("session/load")
    cancel = state.abandon(request_id)
    assert cancel is not None and json.loads(cancel) == {
        "jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": request_id}}
    assert state.receive({"jsonrpc": "2.0", "id": request_id,
                          "error": {"code": -32800, "message": "cancelled"}}) == []
    # Only once: a second answer to the same id is a protocol error.
    assert kinds(state.receive({"jsonrpc": "2.0", "id": request_id, "result": 1})) == [
        Kind.UNKNOWN_RESPONSE_ID]


def test_abandoning_a_request_never_sent_sends_nothing() -> None:
    state = RpcState()
    request_id, _ = state.send_request("m")
    assert state.abandon(request_id, sent=False) is None
    assert state.abandon(request_id) is None  # and only once
    assert kinds(state.receive({"jsonrpc": "2.0", "id": request_id, "result": 1})) == [
        Kind.UNKNOWN_RESPONSE_ID]


def test_local_misuse_raises_local_protocol_error() -> None:
    state = RpcState()
    with pytest.raises(LocalProtocolError):
        state.respond(1, {})  # nothing to answer
    state.receive({"jsonrpc": "2.0", "id": 1, "method": "m"})
    with pytest.raises(LocalProtocolError):
        state.respond(1, {"not json": object()})
    assert state.inbound == {1: False}  # still owed an answer
    state.respond(1, {})
    with pytest.raises(LocalProtocolError):
        state.respond_error(1, RpcError.cancelled())  # twice


def test_lone_surrogates_from_the_agent_can_be_echoed_back() -> None:
    state = RpcState()
    [request] = state.receive_data(b'{"jsonrpc":"2.0","id":1,"method":"\\ud800"}\n')
    assert isinstance(request, Request)
    sent = state.respond_error(1, RpcError.method_not_found(request.method))
    assert json.loads(sent)["error"]["data"] == {"method": "\ud800"}


def test_eof_delivers_a_last_line_without_newline() -> None:
    state = RpcState()
    assert state.receive_data(json.dumps(NOTE).encode()) == []
    assert state.receive_eof() == [Notification("session/update", {"n": 1})]


# ---------------------------------------------------------------------- never raises

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20)
envelopes = st.fixed_dictionaries({}, optional={
    "jsonrpc": st.just("2.0") | json_values, "id": json_values, "method": json_values,
    "params": json_values, "result": json_values, "error": json_values})


@settings(max_examples=300)
@given(message=envelopes | json_values)
def test_no_decoded_message_makes_it_raise(message: Any) -> None:
    state = RpcState()
    state.send_request("m")
    state.receive({"jsonrpc": "2.0", "id": 0, "method": "held"})
    state.receive(message)
    still_works(state)


@settings(max_examples=300)
@given(data=st.lists(st.binary(max_size=60) | envelopes.map(lambda m: json.dumps(m).encode()),
                     max_size=8))
def test_no_bytes_make_it_raise(data: list[bytes]) -> None:
    state = RpcState(max_line_bytes=80, max_json_values=20, max_json_depth=3)
    for chunk in data:
        state.receive_data(chunk)
    state.receive_data(b"\n")
    still_works(state)


def test_reports_stay_short_whatever_the_agent_sent() -> None:
    state = RpcState()
    huge = "m" * 1_000_000
    state.receive({"jsonrpc": "2.0", "id": huge, "method": huge})
    events = [
        *state.receive({"jsonrpc": "2.0", "id": [1], "method": huge}),
        *state.receive({"jsonrpc": "2.0", "id": huge, "method": huge}),
        *state.receive({"jsonrpc": "2.0", "id": None, "error": {"code": 1, "message": huge}}),
        *state.receive({"jsonrpc": "2.0", "id": int("9" * 4000), "result": 1}),
    ]
    details = [e.detail for e in events if isinstance(e, ProtocolViolation)]
    assert len(details) == 4
    assert all(len(detail) < 200 for detail in details)


def test_the_state_does_no_io() -> None:
    """rpc_state (and what it builds on) imports nothing that can do I/O or run tasks."""
    import ast
    from pathlib import Path

    import louise.acp.rpc_state as module

    allowed = {"__future__", "json", "re", "dataclasses", "typing", "collections.abc",
               "enum", "louise.acp.errors", "louise.acp.framing", "louise.acp.rpc_events",
               "louise.acp.json_lines"}
    for name in ("rpc_state", "rpc_events", "framing", "errors", "json_lines"):
        tree = ast.parse((Path(module.__file__).parent / f"{name}.py").read_text())
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                    for alias in node.names}
        imported |= {node.module or "" for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom)}
        assert imported <= allowed, (name, imported - allowed)


# Lines an agent may send, well-formed or not: a read made of them is parsed at once when
# it is all stream notifications (RpcState._notifications), line by line otherwise.
_LINES = [
    b'{"jsonrpc":"2.0","method":"session/update","params":{"u":{"t":"x"}}}',
    b'{"jsonrpc":"2.0","method":"session/update","params":{"text":"\\u00e9 \\ud800"}}',
    b'{"jsonrpc":"2.0","id":3,"method":"fs/read_text_file","params":{}}',
    b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}',
    b'{"jsonrpc":"2.0","id":1,"result":null}',
    b' {"jsonrpc":"2.0","method":"padded"}',
    b'{"jsonrpc":"2.0","method":"trailing"} x',
    b'{"jsonrpc":"2.0","method":"cr"}\r',
    b'{"method":' + b'[' * 40 + b']' * 40 + b'}',
    b'[1,2,3]',
    b'not json',
    b'',
    b'\xff\xfe',
    b'{"method":"' + b'x' * 300 + b'"}',
]


@given(st.lists(st.sampled_from(_LINES), min_size=1, max_size=12))
def test_a_read_of_whole_lines_gives_what_the_lines_one_by_one_give(lines: list[bytes]) -> None:
    data = b"".join(line + b"\n" for line in lines)
    limits = {"max_line_bytes": 256, "max_json_values": 2000, "max_json_depth": 32}
    at_once = RpcState(**limits).receive_data(data)
    by_byte = RpcState(**limits)
    one_by_one: list[object] = []
    for i in range(len(data)):
        one_by_one += by_byte.receive_data(data[i:i + 1])
    assert repr(at_once) == repr(one_by_one)
