"""The person's choice of a mode that approves edits counts (`registry/person_modes.py`),
and a refused mode change says why; over real stdio with the scripted fake, which lists
gemini-cli's modes and refuses a mode as gemini-cli does in an untrusted folder."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from louise.config.loading import load_config_mapping
from louise.registry.records import RegistryError
from tests.integration.test_gate import SCRIPT, answers, registry, write
from tests.integration.test_registry import ScriptedDecider

pytestmark = pytest.mark.anyio
MODES = "default,autoEdit,yolo,plan,refusedAutoEdit"


def config() -> Any:
    return load_config_mapping({"agents": {"script": {
        "command": SCRIPT[0], "args": SCRIPT[1:], "env": {"FAKE_MODES": MODES}}}})


def terminal() -> dict[str, Any]:
    return {"request": "terminal/create",
            "params": {"command": sys.executable, "args": ["-c", "print('ran')"]}}


async def test_a_mode_the_person_picked_approves_the_agents_unasked_edits(
        tmp_path: Path) -> None:
    target = tmp_path / "notes.txt"
    decider = ScriptedDecider("reject_once")
    async with registry(config(), decider) as reg:
        session = await reg.new_session("script", str(tmp_path))
        await reg.set_mode(session.session_id, "autoEdit")
        assert reg.session(session.session_id).current_mode == "autoEdit"
        await reg.prompt(session.session_id, json.dumps([write(target, "by the agent\n"),
                                                         terminal()]))
        [(_, wrote), (_, ran)] = answers(reg, session.session_id)
        assert wrote == {} and target.read_text() == "by the agent\n"
        # Commands are still asked for: the mode covers edits only (and was refused).
        assert "error" in ran and [r.kind for r in decider.asked] == ["execute"]


async def test_yolo_approves_commands_too_and_default_nothing(tmp_path: Path) -> None:
    decider = ScriptedDecider("reject_once")
    async with registry(config(), decider) as reg:
        session = await reg.new_session("script", str(tmp_path))
        await reg.set_mode(session.session_id, "yolo")
        await reg.prompt(session.session_id, json.dumps([terminal()]))
        assert decider.asked == []
        await reg.set_mode(session.session_id, "default")
        await reg.prompt(session.session_id, json.dumps([write(tmp_path / "n", "x")]))
        assert [r.kind for r in decider.asked] == ["edit"]
        assert not (tmp_path / "n").exists()


async def test_a_mode_the_agent_switched_to_by_itself_approves_nothing(tmp_path: Path) -> None:
    decider = ScriptedDecider("reject_once")
    async with registry(config(), decider) as reg:
        session = await reg.new_session("script", str(tmp_path))
        switched = {"update": {"sessionUpdate": "current_mode_update",
                               "currentModeId": "autoEdit"}}
        await reg.prompt(session.session_id, json.dumps([switched, write(tmp_path / "n", "x")]))
        assert reg.session(session.session_id).current_mode == "autoEdit"
        assert [r.kind for r in decider.asked] == ["edit"]
        assert not (tmp_path / "n").exists()


async def test_a_refused_mode_change_says_the_agents_reason(tmp_path: Path) -> None:
    async with registry(config(), ScriptedDecider("reject_once")) as reg:
        session = await reg.new_session("script", str(tmp_path))
        with pytest.raises(RegistryError) as refused:
            await reg.set_mode(session.session_id, "refusedAutoEdit")
        assert str(refused.value) == (
            "script did not set the mode to refusedAutoEdit: Cannot enable "
            "privileged approval modes in an untrusted folder")
        assert reg.session(session.session_id).current_mode == "default"


