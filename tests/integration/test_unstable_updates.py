"""The schema's unstable updates from the demo agent over real stdio: louise advertises
`plan` and `session.compaction` (the demo sends those only then), and the session model
and `louise chat` show plans by id, a notice and a context compaction."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from louise.config.loading import load_config_mapping
from louise.registry import SessionRegistry
from louise.session import CompactionRef, Notice
from tests.integration.cli_helpers import environment, fake_config, louise

pytestmark = pytest.mark.anyio


def config(tmp_path: Path) -> Any:
    return load_config_mapping({"agents": {"demo": {
        "command": sys.executable, "args": ["-P", "-m", "louise.demo_agent"],
        "env": {"LOUISE_DEMO_STATE_DIR": str(tmp_path / "demo-state")}}}})


async def test_plans_a_notice_and_a_compaction_reach_the_session(tmp_path: Path) -> None:
    async with SessionRegistry(config(tmp_path), grace_seconds=0.5) as reg:
        session = await reg.new_session("demo", str(tmp_path))
        await reg.prompt(session.session_id, "/scenario unstable")
        reply = [m.text for m in session.messages() if m.role == "agent"][-1]
        assert reply == "Sent plans, a notice, a compaction (completed)."
        # The steps plan as it stands; the notes plan was removed.
        assert list(session.id_plans) == ["demo-steps"]
        assert [(e["content"], e["status"]) for e in session.id_plans["demo-steps"].entries] \
            == [("Read the notes", "completed"), ("Change the code", "completed"),
                ("Run the tests", "in_progress")]
        notices = [e for e in session.entries if isinstance(e, Notice)
                   and e.kind.startswith("agent_")]
        assert notices == [Notice("agent_warning", "Demo notice\nShown to you; not part of "
                                                   "the session's history.")]
        (ref,) = [e for e in session.entries if isinstance(e, CompactionRef)]
        record = session.compactions[ref.compaction_id]
        assert (record.status, record.summary, record.error) == (
            "completed", "The person asked for a small change; the tests pass.", None)
        assert list(session.unknown_updates) == []
        await reg.prompt(session.session_id, "/scenario unstable compaction=failed")
        failed = list(session.compactions.values())[-1]
        assert (failed.status, failed.summary, failed.error) == (
            "failed", "", "the summary did not fit")


def test_louise_chat_prints_them(tmp_path: Path) -> None:
    env = environment(fake_config(tmp_path / "config.toml"),
                      LOUISE_DEMO_STATE_DIR=str(tmp_path / "demo-state"))
    result = louise("chat", "--agent", "demo", "--cwd", str(tmp_path),
                    "/scenario unstable compaction=cancelled", env=env)
    assert result.returncode == 0, result.stderr
    err = result.stderr
    assert "plan:\n  [x] Read the notes\n  [x] Change the code\n  [ ] Run the tests" in err
    assert "plan:\n## Notes\n\n- keep the change small\n- test it" in err
    assert "[warning] Demo notice\nShown to you; not part of the session's history." in err
    assert "[compaction] compacting the context…" in err
    assert "[compaction] context compaction cancelled" in err
    assert result.stdout.strip() == "Sent plans, a notice, a compaction (cancelled)."
