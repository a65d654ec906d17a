"""The session host's routing (louise.serve.router), pure: ids remapped both ways, one
stream to every front end of a session, one prompt queue, permissions to everyone with the
first answer winning, questions that wait for the next front end, fs to the front end
whose buffers are the files, the history replayed once."""

from __future__ import annotations

from typing import Any

from louise.config.sections import PermissionRule, PermissionsConfig
from louise.serve.hello import FrontEnd
from louise.serve.permissions import auto_answer_for
from louise.serve.replay import SessionHistory
from louise.serve.router import AGENT, HOST, Out, Router

Msg = dict[str, Any]
NVIM = FrontEnd("nvim", 11, True)
CLI = FrontEnd("cli", 22, False)
OPTIONS = [{"optionId": "yes", "name": "Allow", "kind": "allow_once"},
           {"optionId": "no", "name": "Reject", "kind": "reject_once"}]


def req(request_id: Any, method: str, **params: Any) -> Msg:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def note(method: str, **params: Any) -> Msg:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def ok(request_id: Any, result: Any) -> Msg:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def chunk(sid: str, text: str, kind: str = "agent_message_chunk") -> Msg:
    return note("session/update", sessionId=sid,
                update={"sessionUpdate": kind, "content": {"type": "text", "text": text}})


IDLE = {"modes": None, "_meta": {"louise": {"turnRunning": False, "queuedPrompts": 0}}}


def to(outs: list[Out], target: Any) -> list[Msg]:
    return [out.message for out in outs if out.to == target]


def with_session(router: Router, *front_ends: int) -> str:
    """A session created by the first front end and loaded by the others."""
    router.initialize_result = {"protocolVersion": 1}
    for fe, info in zip(front_ends, [NVIM, CLI, NVIM, CLI], strict=False):
        router.attach(fe, info)
    outs = router.from_front_end(front_ends[0], req(5, "session/new", cwd="/w"), 0)
    host_id = to(outs, AGENT)[0]["id"]
    router.from_agent(ok(host_id, {"sessionId": "s", "modes": None}), 0)
    for fe in front_ends[1:]:
        outs = router.from_front_end(fe, req(5, "session/load", sessionId="s", cwd="/w"), 0)
        assert to(outs, fe)[-1] == ok(5, IDLE)
    return "s"


def test_initialize_is_answered_by_the_host_with_the_agents_answer() -> None:
    router = Router()
    router.attach(1, NVIM)
    router.initialize_result = {"protocolVersion": 1, "agentCapabilities": {}}
    outs = router.from_front_end(1, req("a", "initialize", protocolVersion=1), 0)
    assert outs == [Out(1, ok("a", {"protocolVersion": 1, "agentCapabilities": {}}))]


def test_ids_of_two_front_ends_do_not_collide_at_the_agent() -> None:
    router = Router()
    sid = with_session(router, 1, 2)
    first = to(router.from_front_end(1, req(7, "session/set_mode", sessionId=sid, modeId="x"),
                                     0), AGENT)[0]
    second = to(router.from_front_end(2, req(7, "session/set_mode", sessionId=sid,
                                             modeId="y"), 0), AGENT)[0]
    assert first["id"] != second["id"]
    assert router.from_agent(ok(second["id"], {}), 0) == [Out(2, ok(7, {}))]
    assert router.from_agent(ok(first["id"], {}), 0) == [Out(1, ok(7, {}))]


def test_updates_go_to_every_front_end_of_the_session_and_into_its_history() -> None:
    router = Router()
    sid = with_session(router, 1, 2)
    router.attach(3, CLI)  # attached to the agent, not to this session
    outs = router.from_agent(chunk(sid, "hel"), 0) + router.from_agent(chunk(sid, "lo"), 0)
    assert [out.to for out in outs] == [1, 2, 1, 2]
    history = router.history(sid)
    assert history is not None and len(history) == 1  # the two chunks merged
    assert history.replay(sid)[0]["params"]["update"]["content"]["text"] == "hello"


def test_a_prompt_while_one_runs_waits_and_the_others_see_it_as_a_user_message() -> None:
    router = Router()
    sid = with_session(router, 1, 2)
    first = router.from_front_end(1, req(10, "session/prompt", sessionId=sid,
                                         prompt=[{"type": "text", "text": "one"}]), 0)
    running = to(first, AGENT)[0]["id"]
    assert to(first, 2)[0]["params"]["update"]["sessionUpdate"] == "user_message_chunk"
    assert to(first, 1) == []  # the sender does not get its own prompt back
    assert router.from_front_end(2, req(10, "session/prompt", sessionId=sid,
                                        prompt=[{"type": "text", "text": "two"}]), 0) == []
    assert router.working()
    ended = router.from_agent(ok(running, {"stopReason": "end_turn"}), 0)
    assert ended[0] == Out(1, ok(10, {"stopReason": "end_turn"}))
    # The other front end did not send that prompt: it is told the turn ended.
    assert to(ended, 2)[0] == note("_louise/turn_ended", sessionId=sid, stopReason="end_turn")
    sent = to(ended, AGENT)
    assert len(sent) == 1 and sent[0]["params"]["prompt"][0]["text"] == "two"
    assert to(ended, 1)[1]["params"]["update"]["content"]["text"] == "two"
    last = router.from_agent(ok(sent[0]["id"], {"stopReason": "end_turn"}), 0)
    assert last == [Out(2, ok(10, {"stopReason": "end_turn"})),
                    Out(1, note("_louise/turn_ended", sessionId=sid, stopReason="end_turn"))]
    assert not router.working()


def test_the_prompt_queue_is_bounded() -> None:
    router = Router(max_queued_prompts=1)
    sid = with_session(router, 1)
    prompt = {"sessionId": sid, "prompt": []}
    router.from_front_end(1, req(1, "session/prompt", **prompt), 0)
    assert router.from_front_end(1, req(2, "session/prompt", **prompt), 0) == []
    refused = router.from_front_end(1, req(3, "session/prompt", **prompt), 0)
    assert refused[0].to == 1 and "error" in refused[0].message


def permission(agent_id: Any, sid: str) -> Msg:
    return req(agent_id, "session/request_permission", sessionId=sid, options=OPTIONS,
               toolCall={"toolCallId": "t1", "kind": "edit", "locations": [{"path": "/w/a"}]})


def test_the_first_answer_to_a_permission_wins_and_the_others_are_told() -> None:
    router = Router()
    sid = with_session(router, 1, 2)
    asked = router.from_agent(permission("p", sid), 0)
    assert {out.to for out in asked} == {1, 2}
    ids = {out.to: out.message["id"] for out in asked}
    answer = {"outcome": {"outcome": "selected", "optionId": "yes"}}
    outs = router.from_front_end(2, ok(ids[2], answer), 0)
    assert to(outs, AGENT) == [ok("p", answer)]
    cancel, told = to(outs, 1)
    assert cancel == note("$/cancel_request", requestId=ids[1])
    assert told["method"] == "_louise/permission_answered"
    assert told["params"] == {"sessionId": sid, "toolCallId": "t1",
                              "outcome": answer["outcome"], "by": "louise chat (pid 22)",
                              "optionKind": "allow_once", "optionName": "Allow"}
    assert router.from_front_end(1, ok(ids[1], answer), 0) == []  # too late: nothing


def test_a_window_that_withdraws_leaves_the_question_to_the_others() -> None:
    router = Router()
    sid = with_session(router, 1, 2)
    ids = {out.to: out.message["id"] for out in router.from_agent(permission("p", sid), 0)}
    assert router.from_front_end(1, ok(ids[1], {"outcome": {"outcome": "cancelled"}}), 0) == []
    answer = {"outcome": {"outcome": "selected", "optionId": "no"}}
    assert to(router.from_front_end(2, ok(ids[2], answer), 0), AGENT) == [ok("p", answer)]


def test_a_question_with_nobody_attached_waits_and_goes_to_the_next_with_its_age() -> None:
    router = Router()
    sid = with_session(router, 1)
    router.detach(1)
    assert router.from_agent(permission("p", sid), 100.0) == []
    assert router.working()
    router.attach(2, CLI)
    outs = router.from_front_end(2, req(9, "session/load", sessionId=sid, cwd="/w"), 130.0)
    assert outs[0] == Out(2, ok(9, IDLE))
    resent = to(outs, 2)[1]
    assert resent["method"] == "session/request_permission"
    assert resent["params"]["_meta"]["louise"] == {"askedAt": 100.0, "waitedSeconds": 30}


def test_a_question_nobody_answers_is_cancelled_after_the_longest_wait() -> None:
    router = Router()
    sid = with_session(router, 1)
    router.detach(1)
    router.from_agent(permission("p", sid), 0)
    assert router.expire_permissions(10.0, 60.0) == []
    assert to(router.expire_permissions(61.0, 60.0), AGENT) == [
        ok("p", {"outcome": {"outcome": "cancelled"}})]


def test_with_nobody_attached_the_configured_rules_answer_and_never_allow_by_default(
        ) -> None:
    def router_with(policy: PermissionsConfig) -> tuple[Router, str]:
        router = Router(auto_answer=auto_answer_for(policy))
        sid = with_session(router, 1)
        router.detach(1)
        return router, sid

    router, sid = router_with(PermissionsConfig())
    assert router.from_agent(permission("p", sid), 0) == []  # asks: waits for a person
    reject = PermissionsConfig(rules=[PermissionRule(kind=["edit"], decision="reject")])
    router, sid = router_with(reject)
    assert to(router.from_agent(permission("p", sid), 0), AGENT) == [
        ok("p", {"outcome": {"outcome": "selected", "optionId": "no"}})]
    router, sid = router_with(PermissionsConfig(default="reject"))
    assert to(router.from_agent(permission("p", sid), 0), AGENT) == [
        ok("p", {"outcome": {"outcome": "selected", "optionId": "no"}})]


def test_session_cancel_answers_the_sessions_questions_cancelled_for_everyone() -> None:
    router = Router()
    sid = with_session(router, 1, 2)
    ids = {out.to: out.message["id"] for out in router.from_agent(permission("p", sid), 0)}
    outs = router.from_front_end(1, note("session/cancel", sessionId=sid), 0)
    assert to(outs, AGENT) == [note("session/cancel", sessionId=sid),
                               ok("p", {"outcome": {"outcome": "cancelled"}})]
    assert note("$/cancel_request", requestId=ids[2]) in to(outs, 2)


def test_fs_goes_to_the_prompting_front_end_on_this_machine_else_to_the_host() -> None:
    router = Router()
    sid = with_session(router, 1, 2)
    router.from_front_end(1, req("i", "initialize", clientCapabilities={
        "fs": {"readTextFile": True, "writeTextFile": True}}), 0)
    router.from_front_end(2, req("i", "initialize", clientCapabilities={
        "fs": {"readTextFile": True, "writeTextFile": True}}), 0)
    read = req(40, "fs/read_text_file", sessionId=sid, path="/w/a")
    assert router.from_agent(read, 0) == [Out(HOST, read)]  # no prompt running
    running = to(router.from_front_end(1, req(1, "session/prompt", sessionId=sid,
                                              prompt=[]), 0), AGENT)[0]["id"]
    asked = router.from_agent(read, 0)
    assert asked[0].to == 1 and asked[0].message["method"] == "fs/read_text_file"
    back = router.from_front_end(1, ok(asked[0].message["id"], {"content": "x"}), 0)
    assert back == [Out(AGENT, ok(40, {"content": "x"}))]
    assert router.from_agent(req(41, "terminal/create", sessionId=sid, command="ls"), 0)[
        0].to == HOST
    router.from_agent(ok(running, {"stopReason": "end_turn"}), 0)
    # The other machine's front end (sameMachine false) never gets the files.
    router.from_front_end(2, req(2, "session/prompt", sessionId=sid, prompt=[]), 0)
    assert router.from_agent(read, 0) == [Out(HOST, read)]


def test_a_front_end_that_leaves_fails_the_agents_requests_to_it() -> None:
    router = Router()
    sid = with_session(router, 1)
    router.from_front_end(1, req("i", "initialize", clientCapabilities={
        "fs": {"readTextFile": True}}), 0)
    router.from_front_end(1, req(1, "session/prompt", sessionId=sid, prompt=[]), 0)
    router.from_agent(req(40, "fs/read_text_file", sessionId=sid, path="/w/a"), 0)
    outs = router.detach(1)
    assert [out.to for out in outs] == [AGENT] and outs[0].message["error"]


def test_loading_a_live_session_replays_once_then_goes_live() -> None:
    router = Router()
    sid = with_session(router, 1)
    router.from_agent(chunk(sid, "before"), 0)
    router.attach(2, CLI)
    outs = router.from_front_end(2, req(3, "session/load", sessionId=sid, cwd="/w"), 0)
    replayed = [m for m in to(outs, 2) if m.get("method") == "session/update"]
    assert [m["params"]["update"]["content"]["text"] for m in replayed] == ["before"]
    assert replayed[0]["params"]["_meta"] == {"louise": {"replay": True}}
    again = router.from_front_end(2, req(4, "session/load", sessionId=sid, cwd="/w"), 0)
    assert again == [Out(2, ok(4, IDLE))]  # already attached: no second replay
    assert [out.to for out in router.from_agent(chunk(sid, "after"), 0)] == [1, 2]


def test_a_session_the_host_does_not_have_is_loaded_by_the_agent() -> None:
    router = Router()
    router.initialize_result = {}
    router.attach(1, NVIM)
    outs = router.from_front_end(1, req(3, "session/load", sessionId="old", cwd="/w"), 0)
    forwarded = to(outs, AGENT)[0]
    # The agent's replay streams to the loading front end and into the history.
    assert [o.to for o in router.from_agent(chunk("old", "then"), 0)] == [1]
    assert router.from_agent(ok(forwarded["id"], {}), 0) == [Out(1, ok(3, {}))]
    router.attach(2, CLI)
    later = router.from_front_end(2, req(3, "session/load", sessionId="old", cwd="/w"), 0)
    assert len([m for m in to(later, 2) if m.get("method") == "session/update"]) == 1


def test_the_agent_exiting_fails_every_request_at_it() -> None:
    router = Router()
    sid = with_session(router, 1)
    router.from_front_end(1, req(1, "session/prompt", sessionId=sid, prompt=[]), 0)
    router.from_front_end(1, req(2, "session/prompt", sessionId=sid, prompt=[]), 0)
    outs = router.agent_gone()
    assert sorted(out.message["id"] for out in outs) == [1, 2]
    assert all(out.to == 1 and "error" in out.message for out in outs)
    assert not router.working()


def test_the_history_keeps_within_its_budget_dropping_the_oldest() -> None:
    history = SessionHistory(max_bytes=2000)
    for index in range(100):
        history.record({"sessionUpdate": "tool_call", "toolCallId": str(index),
                        "title": "x" * 50})
    assert history.size <= 2000 and history.dropped > 0
    assert history.replay("s")[-1]["params"]["update"]["toolCallId"] == "99"


def test_updates_before_the_answer_that_creates_a_session_follow_that_answer() -> None:
    router = Router()
    router.initialize_result = {}
    router.attach(1, NVIM)
    sent = to(router.from_front_end(1, req(5, "session/new", cwd="/w"), 0), AGENT)[0]
    assert router.from_agent(chunk("n", "early"), 0) == []
    outs = router.from_agent(ok(sent["id"], {"sessionId": "n"}), 0)
    assert outs[0] == Out(1, ok(5, {"sessionId": "n"}))
    assert outs[1] == Out(1, chunk("n", "early"))
    history = router.history("n")
    assert history is not None and len(history) == 1


def test_a_forked_session_is_attached_to_the_front_end_that_forked_it() -> None:
    router = Router()
    sid = with_session(router, 1)
    sent = to(router.from_front_end(1, req(6, "session/fork", sessionId=sid, cwd="/w"), 0),
              AGENT)[0]
    router.from_agent(ok(sent["id"], {"sessionId": "f"}), 0)
    assert router.from_agent(chunk("f", "forked"), 0) == [Out(1, chunk("f", "forked"))]


def test_closing_a_session_others_look_at_only_detaches_the_closing_front_end() -> None:
    router = Router()
    sid = with_session(router, 1, 2)
    assert router.from_front_end(1, req(8, "session/close", sessionId=sid), 0) == [
        Out(1, ok(8, {}))]
    assert [out.to for out in router.from_agent(chunk(sid, "x"), 0)] == [2]
    closing = router.from_front_end(2, req(8, "session/close", sessionId=sid), 0)
    assert to(closing, AGENT)[0]["method"] == "session/close"  # the last one: closed
    assert router.history(sid) is None


def test_closing_a_session_whose_turn_runs_leaves_the_turn_running() -> None:
    router = Router()
    sid = with_session(router, 1)
    router.from_front_end(1, req(1, "session/prompt", sessionId=sid, prompt=[]), 0)
    assert router.from_front_end(1, req(8, "session/close", sessionId=sid), 0) == [
        Out(1, ok(8, {}))]
    assert router.working()


def test_a_queued_prompt_cancelled_by_its_front_end_leaves_the_queue() -> None:
    router = Router()
    sid = with_session(router, 1)
    prompt = {"sessionId": sid, "prompt": []}
    running = to(router.from_front_end(1, req(1, "session/prompt", **prompt), 0), AGENT)[0]
    router.from_front_end(1, req(2, "session/prompt", **prompt), 0)
    assert router.from_front_end(1, note("$/cancel_request", requestId=2), 0) == [
        Out(1, ok(2, {"stopReason": "cancelled"}))]
    assert to(router.from_agent(ok(running["id"], {"stopReason": "end_turn"}), 0),
              AGENT) == []  # nothing more to send
    # Any other request at the agent is cancelled there, under its host id.
    asked = to(router.from_front_end(1, req(3, "session/set_mode", sessionId=sid,
                                            modeId="x"), 0), AGENT)[0]
    assert router.from_front_end(1, note("$/cancel_request", requestId=3), 0) == [
        Out(AGENT, note("$/cancel_request", requestId=asked["id"]))]


def test_a_front_end_that_stops_waiting_for_its_running_prompt_leaves_the_turn_going() -> None:
    # `$/cancel_request` says "I no longer wait for this answer"; a turn is stopped by
    # `session/cancel`, so the agent never hears of it and the others keep the turn.
    router = Router()
    sid = with_session(router, 1, 2)
    running = to(router.from_front_end(1, req(10, "session/prompt", sessionId=sid,
                                              prompt=[]), 0), AGENT)[0]
    outs = router.from_front_end(1, note("$/cancel_request", requestId=10), 0)
    assert to(outs, AGENT) == []
    assert [out.to for out in outs] == [1]  # answered, as a cancelled request must be
    assert outs[0].message["id"] == 10 and outs[0].message["error"]["code"] == -32800
    assert router.working()
    assert [out.to for out in router.from_agent(chunk(sid, "still going"), 0)] == [1, 2]
    ended = router.from_agent(ok(running["id"], {"stopReason": "end_turn"}), 0)
    # Its answer no longer goes to the front end that stopped waiting: like the others it
    # hears of the turn's end.
    turn_ended = note("_louise/turn_ended", sessionId=sid, stopReason="end_turn")
    assert sorted((out.to, out.message == turn_ended) for out in ended) == [
        (1, True), (2, True)]
    assert not router.working()


def test_loading_a_session_whose_turn_runs_says_so() -> None:
    router = Router()
    sid = with_session(router, 1)
    prompt = {"sessionId": sid, "prompt": []}
    router.from_front_end(1, req(1, "session/prompt", **prompt), 0)
    router.from_front_end(1, req(2, "session/prompt", **prompt), 0)
    router.attach(2, CLI)
    outs = router.from_front_end(2, req(3, "session/load", sessionId=sid, cwd="/w"), 0)
    assert to(outs, 2)[-1]["result"]["_meta"] == {
        "louise": {"turnRunning": True, "queuedPrompts": 1}}


def test_the_rules_read_the_paths_the_tool_calls_updates_gave() -> None:
    reject = PermissionsConfig(rules=[PermissionRule(kind=["edit"], decision="reject")])
    router = Router(auto_answer=auto_answer_for(reject))
    sid = with_session(router, 1)
    router.detach(1)
    router.from_agent(note("session/update", sessionId=sid, update={
        "sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Edit", "kind": "edit",
        "content": [{"type": "diff", "path": "/w/a", "oldText": "x", "newText": "y"}]}), 0)
    # The request names the tool call only, as the demo agent's does.
    bare = req("p", "session/request_permission", sessionId=sid, options=OPTIONS,
               toolCall={"toolCallId": "t1"})
    assert to(router.from_agent(bare, 0), AGENT) == [
        ok("p", {"outcome": {"outcome": "selected", "optionId": "no"}})]


def test_the_hosts_own_methods_from_the_agent_reach_no_front_end() -> None:
    router = Router()
    sid = with_session(router, 1, 2)
    answered = {"sessionId": sid, "toolCallId": "t1", "by": "Neovim (pid 1)",
                "outcome": {"outcome": "selected", "optionId": "yes"}}
    assert router.from_agent(note("_louise/permission_answered", **answered), 0) == []
    assert router.from_agent(note("_louise/turn_ended", sessionId=sid,
                                  stopReason="end_turn"), 0) == []
    assert router.from_agent(note("_louise/anything"), 0) == []  # not to every front end
    refused = router.from_agent(req(9, "_louise/permission_answered", **answered), 0)
    assert [out.to for out in refused] == [AGENT]
    assert refused[0].message["id"] == 9 and refused[0].message["error"]["code"] == -32601
    assert router.history(sid) is not None and len(router.history(sid) or []) == 0
