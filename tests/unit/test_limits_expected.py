"""Issue 23 item 9: before the first figure, what each agent sends of its limits and when,
recognised by its name, its command or its agentInfo name."""

from __future__ import annotations

from louise.limits.sources.expected import expected_figures, known_figures


def test_each_known_agent_says_what_it_sends_and_when() -> None:
    assert expected_figures("claude") == (
        "no figures yet: claude sends them with its replies, for a claude.ai subscription "
        "(an API key has no such limits)")
    # Recognised by its command when the configured name says nothing.
    cc = expected_figures("cc", "npx @agentclientprotocol/claude-agent-acp")
    assert cc.startswith("no figures yet: cc sends them with its replies")
    assert "/status" in expected_figures("codex")
    assert "refuses a turn" in expected_figures("gemini")
    assert "refuses a turn" in expected_figures("mine", "", "vibe-acp")
    assert expected_figures("other").startswith("no figures: other sends none")
    assert known_figures("other", "sh -c my-agent") is None
    assert "unsupported" not in " ".join(expected_figures(a) for a in ("claude", "x"))
