"""The permission broker: request extraction, derived diffs, fail-closed paths."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from louise.broker import (
    CANCELLED,
    AllowKinds,
    PermissionBroker,
    PermissionRequest,
    QueueView,
    RefuseAll,
    extract_request,
)

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
            await anyio.sleep(0.01)
        with anyio.fail_after(10):
            while not order:
                await anyio.sleep(0.01)
        assert order == ["t0 1/1"]  # presented alone; the UI total follows the queue
        gate.set()
    assert order == ["t0 1/1", "t1 1/2", "t2 1/1"]
    assert broker.pending() == []
