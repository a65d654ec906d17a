"""Issue 23 item 9: louise's own hint for failures whose cause it knows, in words a person
acts on, from the agents' own words (their errors, their stderr)."""

from __future__ import annotations

from louise.registry.error_hints import hint_for, with_hint

CLAUDE_AS_ROOT = ("Error: --dangerously-skip-permissions cannot be used with root/sudo "
                  "privileges for security reasons")


def test_claude_run_as_root_is_told_to_set_is_sandbox() -> None:
    hint = hint_for("claude", CLAUDE_AS_ROOT)
    assert hint is not None
    assert 'env = { IS_SANDBOX = "1" }' in hint and "[agents.claude]" in hint
    assert "setup{ agents = { claude = { env = { IS_SANDBOX = \"1\" } } } }" in hint


def test_not_signed_in_and_unreachable_apis_have_their_hints() -> None:
    signed_out = hint_for("claude", "Invalid API key · Please run /login")
    assert signed_out is not None and ":LouiseSignIn claude" in signed_out
    assert "louise login claude" in signed_out
    for said in ("TypeError: fetch failed\n  cause: connect ECONNREFUSED 127.0.0.1:9",
                 "stream disconnected before completion: error sending request",
                 "Reconnecting... 5/5 (waiting for network)"):
        hint = hint_for("codex", said)
        assert hint is not None and "model API could not be reached" in hint, said
    assert hint_for("claude", "the model said no") is None


def test_the_hint_follows_the_message_once() -> None:
    message = "claude: it failed without saying why"
    hinted = with_hint(message, "claude", "connect ECONNREFUSED 127.0.0.1:1")
    assert hinted.startswith(message + " — the model API could not be reached")
    assert with_hint(hinted, "claude", "ECONNREFUSED") == hinted
    assert with_hint(message, "claude", "") == message


def test_a_timeout_says_what_the_agent_was_asked_in_words() -> None:
    from louise.acp.errors import RequestTimeout

    assert str(RequestTimeout("session/new", 30)).startswith(
        "the agent did not open a new session within 30 s")
    assert str(RequestTimeout("initialize", 30, unread=True)).startswith(
        "the agent did not read what louise sent (to start up) within 30 s")
