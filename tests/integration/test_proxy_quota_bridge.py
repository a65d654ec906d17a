"""`louise proxy` as a quota bridge end to end (issue 26 items 2 and 5): louise's registry
talks to the same fake claude-agent-acp (tests/fakes/claude_limits_agent.py) directly and
through a real proxy process. Through the proxy louise speaks the quota RFD (the proxy
advertises it, reads answer, pushes arrive); both ways it shows the same label: `limits
n/a` before any figures (through the proxy it used to be a red `limits unavailable`), and
the same windows after a prompt."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from louise import limits as lim
from louise.config.loading import load_config_mapping
from louise.registry import SessionRegistry
from tests.integration.agents import FAKES, wait_until

pytestmark = pytest.mark.anyio

CLAUDE = [sys.executable, str(FAKES / "claude_limits_agent.py")]


def label(reg: SessionRegistry) -> lim.Label | None:
    return lim.render_label(reg.inspect_limits("claude"), reg.clock())


async def labels(tmp_path: Path, argv: list[str]) -> tuple[lim.Label | None,
                                                          lim.Label | None, list[str]]:
    """The label before any figures and after one prompt, and the detail then."""
    config = load_config_mapping({"agents": {"claude": {"command": argv[0],
                                                        "args": argv[1:]}}})
    async with SessionRegistry(config, grace_seconds=0.5, limits_cache=None) as reg:
        session = await reg.new_session("claude", str(tmp_path))
        # Settled: read (through the proxy) or known to offer nothing (directly).
        await wait_until(lambda: reg.inspect_limits("claude").status not in (
            "not_observed", "loading"))
        before = label(reg)
        await reg.prompt(session.session_id, "hi")
        await wait_until(lambda: reg.inspect_limits("claude").status == "fresh"
                         and reg.inspect_limits("claude").source != "quota/read")
        return before, label(reg), lim.render_detail(reg.inspect_limits("claude"),
                                                     reg.clock())


async def test_the_same_label_directly_and_through_the_proxy(tmp_path: Path) -> None:
    direct = await labels(tmp_path, CLAUDE)
    proxied = await labels(tmp_path, [sys.executable, "-P", "-m", "louise.cli", "proxy",
                                      "--", *CLAUDE])
    assert direct[0] == proxied[0] == lim.Label("limits n/a", "neutral")
    assert direct[1] is not None and direct[1].text.startswith("limits 76%/5h ↻2h 87%/7d")
    assert direct[1] == proxied[1]
    # Through the proxy louise read the RFD: its detail shows pools and their meters.
    assert "Source: quota_update" in proxied[2]
    assert "- 5-hour limit (five_hour): 24% used · 76% left" in proxied[2]
    assert "Source: claude rate-limit metadata" in direct[2]
