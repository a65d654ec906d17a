"""The permission broker: request extraction, derived diffs, fail-closed paths."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from louise.config.sections import PermissionRule, PermissionsConfig
from louise.permissions.broker import (
    CANCELLED,
    AllowKinds,
    MalformedPermission,
    PermissionBroker,
    PermissionRequest,
    QueueView,
    RefuseAll,
    extract_request,
)
from louise.permissions.rules import PermissionMemory

pytestmark = pytest.mark.anyio
OPTIONS = [{"optionId": "a1", "name": "Allow", "kind": "allow_once"},
           {"optionId": "a2", "name": "Always", "kind": "allow_always"},
           {"optionId": "r1", "name": "Reject", "kind": "reject_once"},
           {"optionId": "r2", "name": "Never", "kind": "reject_always"}]


def request(tool_call: dict[str, Any], request_id: int = 1, session: str = "s",
            options: list[dict[str, Any]] | None = None) -> PermissionRequest:
    params = {"sessionId": session, "toolCall": tool_call,
              "options": OPTIONS if options is None else options}
    return extract_request(request_id, "demo", '["demo"]', "/ws", params, None)


def test_diff_content_gives_paths_and_diffs() -> None:
    req = request({"toolCallId": "t", "kind": "edit", "title": "Edit", "content": [
        {"type": "diff", "path": "/ws/a.py", "oldText": "x", "newText": "y"},
        {"type": "diff", "path": "/ws/new.py", "oldText": None, "newText": "z"}]})
    assert req.paths == ("/ws/a.py", "/ws/new.py")
    assert [d["path"] for d in req.diffs] == ["/ws/a.py", "/ws/new.py"]


def test_raw_input_edit_and_write_are_derived_into_diffs() -> None:
    edit = request({"toolCallId": "t", "kind": "edit", "title": "Edit",
                    "rawInput": {"file_path": "/ws/a.py", "old_string": "x = 1",
                                 "new_string": "x = 2"}})
    assert edit.diffs == ({"type": "diff", "path": "/ws/a.py", "derived": "replace",
                           "oldString": "x = 1", "newString": "x = 2"},)
    write = request({"toolCallId": "t", "kind": "edit", "title": "Write",
                     "rawInput": {"file_path": "/ws/b.py", "content": "print(1)\n"}})
    assert write.diffs[0]["derived"] == "write" and write.diffs[0]["newText"] == "print(1)\n"


def test_deletions_are_shown_as_such() -> None:
    req = request({"toolCallId": "t", "kind": "delete", "title": "rm",
                   "locations": [{"path": "/ws/old.txt"}]})
    assert req.diffs == ({"type": "diff", "path": "/ws/old.txt", "derived": "delete",
                          "newText": ""},)


def test_commands_are_extracted_from_raw_input() -> None:
    req = request({"toolCallId": "t", "kind": "execute", "title": "Run",
                   "rawInput": {"command": "git", "args": ["status", "--short"]}})
    assert req.command == "git status --short"
    assert req.targets() == ["git status --short"]


class Scripted:
    def __init__(self, answer: Any = None, error: bool = False, wait: bool = False) -> None:
        self.answer, self.error, self.wait = answer, error, wait
        self.asked: list[QueueView] = []

    async def decide(self, req: PermissionRequest, queue: QueueView) -> str | None:
        self.asked.append(queue)
        if self.wait:
            await anyio.sleep_forever()
        if self.error:
            raise RuntimeError("UI exploded")
        return self.answer  # type: ignore[no-any-return]


async def test_every_fail_closed_path_answers_cancelled() -> None:
    req = request({"toolCallId": "t", "kind": "edit", "title": "Edit"})
    for decider in (Scripted(error=True), Scripted(None), Scripted("not-offered")):
        assert await PermissionBroker(decider).ask(req) == CANCELLED
    # Nobody to ask: refuse, never allow.
    outcome = await PermissionBroker(RefuseAll()).ask(req)
    assert outcome == {"outcome": {"outcome": "selected", "optionId": "r1"}}
    # Only allows what it was told to.
    assert (await PermissionBroker(AllowKinds(frozenset({"read"}))).ask(req))["outcome"][
        "optionId"] == "r1"


async def test_cancel_session_and_cancel_request_answer_cancelled() -> None:
    broker = PermissionBroker(Scripted(wait=True))
    results: list[dict[str, Any]] = []

    async def ask(req: PermissionRequest) -> None:
        results.append(await broker.ask(req))

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask, request({"toolCallId": "t1", "kind": "edit"}, 1, "s1"))
        tg.start_soon(ask, request({"toolCallId": "t2", "kind": "edit"}, 2, "s2"))
        with anyio.fail_after(10):
            while len(broker.pending()) < 2:
                await anyio.sleep(0.01)
        assert broker.presented() is not None
        assert broker.cancel_session("s1") == 1
        assert broker.cancel(2)
    assert results == [CANCELLED, CANCELLED]
    assert broker.pending() == []


async def test_one_decision_at_a_time_in_arrival_order() -> None:
    order: list[str] = []
    gate = anyio.Event()

    class Slow:
        async def decide(self, req: PermissionRequest, queue: QueueView) -> str | None:
            order.append(f"{req.tool_call_id} {queue.position}/{queue.total}")
            await gate.wait()
            return "a1"

    broker = PermissionBroker(Slow())
    async with anyio.create_task_group() as tg:
        for n in range(3):
            tg.start_soon(broker.ask, request({"toolCallId": f"t{n}", "kind": "edit"}, n))
            await anyio.wait_all_tasks_blocked()  # asked before the next one arrives
        with anyio.fail_after(10):
            while not order:
                await anyio.sleep(0.01)
        assert order == ["t0 1/1"]  # presented alone; the UI total follows the queue
        gate.set()
    assert order == ["t0 1/1", "t1 1/2", "t2 1/1"]
    assert broker.pending() == []


# --------------------------------------------------------------------------- remembering


def edit_request(path: str, options: list[dict[str, Any]] | None = None,
                 workspace: str = "/ws") -> PermissionRequest:
    params = {"sessionId": "s", "options": OPTIONS if options is None else options,
              "toolCall": {"toolCallId": "t", "kind": "edit", "title": "Edit",
                           "locations": [{"path": path}]}}
    return extract_request(1, "demo", '["demo"]', workspace, params, None)


async def test_allow_kind_never_answers_or_remembers_an_always_option(tmp_path: Path) -> None:
    """`--allow edit` against an agent that offers no one-time allow: refused, and nothing
    becomes a permanent rule (neither here nor at the agent, which only sees reject)."""
    memory = PermissionMemory(tmp_path / "permissions.json")
    only_always = [{"optionId": "a2", "name": "Always", "kind": "allow_always"},
                   {"optionId": "r1", "name": "Reject", "kind": "reject_once"}]
    broker = PermissionBroker(AllowKinds(frozenset({"edit"})), memory=memory)
    outcome = await broker.ask(edit_request("/ws/a.py", only_always))
    assert outcome == {"outcome": {"outcome": "selected", "optionId": "r1"}}
    assert memory.list() == []
    # With a one-time allow on offer, that is what it answers.
    outcome = await broker.ask(edit_request("/ws/a.py"))
    assert outcome == {"outcome": {"outcome": "selected", "optionId": "a1"}}
    assert memory.list() == []


async def test_refusing_without_a_person_never_remembers_a_refusal(tmp_path: Path) -> None:
    memory = PermissionMemory(tmp_path / "permissions.json")
    only_always = [{"optionId": "a1", "name": "Allow", "kind": "allow_once"},
                   {"optionId": "r2", "name": "Never", "kind": "reject_always"}]
    for decider in (RefuseAll(), AllowKinds(frozenset({"read"}))):
        outcome = await PermissionBroker(decider, memory=memory).ask(
            edit_request("/ws/a.py", only_always))
        assert outcome == CANCELLED
    assert memory.list() == []


async def test_duplicate_option_ids_never_turn_once_into_a_saved_rule(tmp_path: Path) -> None:
    """The agent names "Always" and "Allow once" with one id: the person's "once" must not
    be stored as "always" (nor sent as an id that also means "always")."""
    memory = PermissionMemory(tmp_path / "permissions.json")
    ambiguous = [{"optionId": "x", "name": "Always allow", "kind": "allow_always"},
                 {"optionId": "x", "name": "Allow once", "kind": "allow_once"},
                 {"optionId": "r", "name": "Reject", "kind": "reject_once"}]
    outcome = await PermissionBroker(Scripted("x"), memory=memory).ask(
        edit_request("/ws/a.py", ambiguous))
    assert outcome == {"outcome": {"outcome": "selected", "optionId": "r"}}
    assert memory.list() == []
    # Several options of one kind under one id: the answer is unambiguous, still never saved.
    same_kind = [{"optionId": "y", "name": "Always", "kind": "allow_always"},
                 {"optionId": "y", "name": "Always (again)", "kind": "allow_always"},
                 {"optionId": "r", "name": "Reject", "kind": "reject_once"}]
    outcome = await PermissionBroker(Scripted("y"), memory=memory).ask(
        edit_request("/ws/a.py", same_kind))
    assert outcome == {"outcome": {"outcome": "selected", "optionId": "y"}}
    assert memory.list() == []
    # And a configured allow never picks an ambiguous id either: it asks instead.
    allow_edits = PermissionsConfig(rules=[PermissionRule(kind=["edit"], decision="allow")])
    person = Scripted(None)
    outcome = await PermissionBroker(person, memory=memory, policy=allow_edits).ask(
        edit_request("/ws/a.py", ambiguous))
    assert outcome == CANCELLED and len(person.asked) == 1


async def test_a_remembered_allow_does_not_follow_dotdot_through_a_symlink(
        tmp_path: Path) -> None:
    """A rule for ws/x.txt must not auto-allow ws/evil/../x.txt when evil points outside:
    that path lands next to where evil points, not in the workspace."""
    ws, outside = tmp_path / "ws", tmp_path / "outside" / "deep"
    ws.mkdir()
    outside.mkdir(parents=True)
    (ws / "evil").symlink_to(outside)
    memory = PermissionMemory(tmp_path / "permissions.json")
    person = Scripted("a2")  # "always allow", for ws/x.txt
    broker = PermissionBroker(person, memory=memory)
    await broker.ask(edit_request(str(ws / "x.txt"), workspace=str(ws)))
    assert [rule.target for rule in memory.list()] == [str(ws / "x.txt")]

    person.answer = None  # from now on the person refuses when asked
    sneaky = f"{ws}/evil/../x.txt"  # really tmp_path/outside/x.txt
    assert await broker.ask(edit_request(sneaky, workspace=str(ws))) == CANCELLED
    assert len(person.asked) == 2  # asked, not answered by the remembered rule
    # The remembered rule still answers for the file itself, however it is spelled.
    same = f"{ws}/sub/../x.txt"
    (ws / "sub").mkdir()
    assert (await broker.ask(edit_request(same, workspace=str(ws))))["outcome"] == {
        "outcome": "selected", "optionId": "a1"}
    assert len(person.asked) == 2


async def test_configured_rejects_and_default_reject_beat_a_remembered_allow(
        tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    memory = PermissionMemory(tmp_path / "permissions.json")
    await PermissionBroker(Scripted("a2"), memory=memory).ask(
        edit_request(str(ws / "a.py"), workspace=str(ws)))
    assert [rule.decision for rule in memory.list()] == ["allow"]
    req = edit_request(str(ws / "a.py"), workspace=str(ws))
    reject_edits = PermissionsConfig(rules=[PermissionRule(kind=["edit"], decision="reject")])
    default_reject = PermissionsConfig(default="reject")
    person = Scripted("a1")
    for policy in (reject_edits, default_reject):
        outcome = await PermissionBroker(person, memory=memory, policy=policy).ask(req)
        assert outcome == {"outcome": {"outcome": "selected", "optionId": "r1"}}, policy
    assert person.asked == []
    # With the default "ask", the remembered allow answers (once, never "always" again).
    outcome = await PermissionBroker(person, memory=memory).ask(req)
    assert outcome == {"outcome": {"outcome": "selected", "optionId": "a1"}}
    assert person.asked == []


async def test_a_remembered_reject_beats_a_configured_allow(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    memory = PermissionMemory(tmp_path / "permissions.json")
    await PermissionBroker(Scripted("r2"), memory=memory).ask(
        edit_request(str(ws / "secret.env"), workspace=str(ws)))
    allow_edits = PermissionsConfig(rules=[PermissionRule(kind=["edit"], decision="allow")])
    outcome = await PermissionBroker(Scripted("a1"), memory=memory, policy=allow_edits).ask(
        edit_request(str(ws / "secret.env"), workspace=str(ws)))
    assert outcome == {"outcome": {"outcome": "selected", "optionId": "r1"}}


@pytest.mark.parametrize(("params", "why"), [
    ({"toolCall": {"kind": "edit"}, "options": 5}, "options must be a list, not int"),
    ({"toolCall": {"kind": "edit", "content": 7}, "options": []},
     "toolCall.content must be a list"),
    ({"toolCall": {"kind": "edit", "locations": "/x"}, "options": []},
     "toolCall.locations must be a list"),
    ({"toolCall": 3, "options": []}, "toolCall must be an object"),
])
def test_params_of_the_wrong_shape_say_what_is_wrong(params: dict[str, Any], why: str) -> None:
    with pytest.raises(MalformedPermission, match=why):
        extract_request(1, "demo", '["demo"]', "/ws", params, None)


def test_a_command_is_shown_with_the_environment_it_runs_with() -> None:
    req = request({"toolCallId": "t", "kind": "execute", "title": "Run", "rawInput": {
        "command": "true", "env": [{"name": "BASH_ENV", "value": "evil file.sh"}]}})
    assert req.command == "BASH_ENV='evil file.sh' true"
    req = request({"toolCallId": "t", "kind": "execute", "title": "Run",
                   "rawInput": {"command": ["true"], "env": {"A": "1"}}})
    assert req.command == "A=1 true"
    req = request({"toolCallId": "t", "kind": "execute", "title": "Run",
                   "rawInput": {"command": "true", "env": 5}})
    assert req.command == "env=5 true"


async def test_a_refusal_without_asking_says_why(tmp_path: Path) -> None:
    """Issue 23: a remembered "always reject" showed only `failed`; the answer now comes
    with why nobody was asked, and where to change it."""
    memory = PermissionMemory(tmp_path / "permissions.json")
    person = Scripted("r2")  # "always reject", for /ws/a.py
    broker = PermissionBroker(person, memory=memory)
    _, why = await broker.ask_explained(edit_request("/ws/a.py"))
    assert why is None  # the person was asked
    outcome, why = await broker.ask_explained(edit_request("/ws/a.py"))
    assert outcome["outcome"] == {"outcome": "selected", "optionId": "r1"}
    assert len(person.asked) == 1
    assert why is not None and "always reject" in why and ":LouisePermissions" in why
    rule = PermissionRule(kind=["edit"], decision="reject")
    strict = PermissionBroker(Scripted("a1"), policy=PermissionsConfig(rules=[rule]))
    _, why = await strict.ask_explained(edit_request("/ws/b.py"))
    assert why is not None and "permissions.rules" in why
    default = PermissionBroker(Scripted("a1"), policy=PermissionsConfig(default="reject"))
    _, why = await default.ask_explained(edit_request("/ws/b.py"))
    assert why is not None and 'permissions.default is "reject"' in why
