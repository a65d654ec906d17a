"""`fs/read_text_file` of a missing file, over real stdio with the scripted fake: the
protocol's "Resource not found" (-32002) for agents that read it as a missing file, and an
empty file for gemini-cli, which cannot tell that error from any other (its SDK hands it
the error as a plain object) and so failed to write every new file
(`louise/registry/agent_quirks.py`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from louise.config.loading import load_config_mapping
from tests.integration.test_gate import SCRIPT, answers, registry
from tests.integration.test_registry import ScriptedDecider

pytestmark = pytest.mark.anyio


def read(path: Path) -> dict[str, Any]:
    return {"request": "fs/read_text_file", "params": {"path": str(path)}}


async def reads(tmp_path: Path, name: str | None) -> list[tuple[str, Any]]:
    env = {"FAKE_AGENT_NAME": name} if name else {}
    cfg = load_config_mapping({"agents": {"script": {
        "command": SCRIPT[0], "args": SCRIPT[1:], "env": env}}})
    (tmp_path / "there.txt").write_text("here\n")
    async with registry(cfg, ScriptedDecider("reject_once")) as reg:
        session = await reg.new_session("script", str(tmp_path))
        steps = [read(tmp_path / "missing.txt"), read(tmp_path / "there.txt"),
                 read(tmp_path / "no-dir" / "missing.txt")]
        await reg.prompt(session.session_id, json.dumps(steps))
        return answers(reg, session.session_id)


@pytest.mark.parametrize("name", [None, "qwen-code", "claude-agent-acp"])
async def test_a_missing_file_is_resource_not_found(tmp_path: Path, name: str | None) -> None:
    missing, there, deeper = await reads(tmp_path, name)
    for method, answer in (missing, deeper):
        assert method == "fs/read_text_file"
        assert answer["error"]["code"] == -32002, answer
    assert there == ("fs/read_text_file", {"content": "here\n"})


async def test_gemini_cli_reads_a_missing_file_as_an_empty_one(tmp_path: Path) -> None:
    missing, there, deeper = await reads(tmp_path, "gemini-cli")
    assert missing == ("fs/read_text_file", {"content": ""})
    assert deeper == ("fs/read_text_file", {"content": ""})
    assert there == ("fs/read_text_file", {"content": "here\n"})
