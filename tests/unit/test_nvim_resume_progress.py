""":LouiseResume's progress line while several agents list their sessions."""

from __future__ import annotations

from louise.nvim.resume_progress import ListingProgress
from louise.registry.agent_sessions import AgentListing


def test_the_line_names_what_each_agent_is_doing_and_counts_the_wait() -> None:
    now = [100.0]
    progress = ListingProgress(["claude", "codex", "demo"], ["codex"], clock=lambda: now[0])
    assert progress.line() == ("louise: … listing sessions: claude listing 0s, "
                               "codex starting 0s, demo listing 0s")
    now[0] = 104.4
    progress.listed(AgentListing("claude"))
    progress.listed(AgentListing("demo", error="demo exited"))
    assert progress.line() == ("louise: … listing sessions: claude done, codex starting 4s, "
                               "demo failed")
    assert not progress.over
    progress.listed(AgentListing("codex"))
    assert progress.over
