"""Quota from the real claude-agent-acp (issue 13.5): the mock model answers with Anthropic's
rate-limit headers (mock_ratelimits.py), Claude Code — signed in as a subscriber, which is
when it reads them — hands them to claude-agent-acp, which sends `_claude/rateLimit` on a
`usage_update`; louise shows the 5h and 7d windows, from `louise chat` then
`louise inspect claude`, and in Neovim's statusline and the chat's winbar.

The expected figures come from the mock's own defaults (mock_ratelimits.DEFAULT) through
louise.limits, never from the output under test."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from louise import limits as lim
from louise.limits.sources import claude
from tests.e2e.conftest import Driver
from tests.real_agents import mock_ratelimits
from tests.real_agents.conftest import RealAgent, available
from tests.real_agents.harness import MockModel, agent_environment, louise_bin, louise_config
from tests.real_agents.install import Installed

START = 180.0  # a real agent's first session, on a loaded machine
# One word: a longer first prompt makes Claude Code name the session with a side request,
# which sees the headers first, and claude-agent-acp only sends figures that changed.
PROMPT = "hello"


def mock_windows() -> dict[int, float]:
    """Used percent per window duration, as the mock sends them (5h and 7d)."""
    fractions = dict(part.split("=") for part in mock_ratelimits.DEFAULT.split(","))
    return {300: float(fractions["5h"]) * 100, 10080: float(fractions["7d"]) * 100}


def window_texts() -> list[str]:
    """`76%/5h` and `87%/7d`: what the label says of each window (reset text aside)."""
    return [f"{lim.format_remaining(100 - used)}/{lim.format_duration(minutes)}"
            for minutes, used in sorted(mock_windows().items())]


def subscriber_env(home: Path, mock: MockModel, installed: Installed) -> dict[str, str]:
    """claude-agent-acp signed in as a claude.ai subscriber (any OAuth token does offline):
    the only sign-in with which Claude Code reads the rate-limit headers."""
    env = agent_environment("claude", home, mock, installed.agents["claude"])
    env["ANTHROPIC_API_KEY"] = ""  # an API key would make Claude Code ignore the headers
    env["CLAUDE_CODE_OAUTH_TOKEN"] = "offline-mock-oauth-token-not-a-credential"
    return env


def subscriber_agent(tmp_path: Path, installed: Installed, mock_model: MockModel,
                     monkeypatch: pytest.MonkeyPatch, *, proxied: bool) -> RealAgent:
    """claude as a subscriber, in its own home, workspace, louise state and config (set in
    the environment too, for a Neovim started afterwards); behind `louise proxy` when
    `proxied`."""
    available(installed, "claude")
    root = tmp_path / "real"
    workspace, wire_dir = root / "work", root / "wire"
    for folder in (workspace, wire_dir):
        folder.mkdir(parents=True)
    env = subscriber_env(root / "home", mock_model, installed)
    install = installed.agents["claude"]
    if proxied:
        install = replace(install, argv=[louise_bin(), "proxy", "--", *install.argv])
    config = root / "config.toml"
    config.write_text(louise_config({"claude": (install, env)}, wire_dir,
                                    default_agent="claude"))
    agent = RealAgent("claude", workspace, root / "state", config, wire_dir, mock_model,
                      root / "home")
    monkeypatch.setenv("LOUISE_CONFIG", str(config))
    monkeypatch.setenv("LOUISE_STATE_DIR", str(agent.state_dir))
    return agent


@pytest.fixture
def subscriber(tmp_path: Path, installed: Installed, mock_model: MockModel,
               monkeypatch: pytest.MonkeyPatch) -> RealAgent:
    return subscriber_agent(tmp_path, installed, mock_model, monkeypatch, proxied=False)


def rate_limit_events(agent: RealAgent) -> list[Any]:
    """Every `_claude/rateLimit` the agent sent (the real agent's own wire)."""
    found = []
    for message in agent.wire.received("session/update"):
        update = message.get("params", {}).get("update", {})
        meta = update.get("_meta") if isinstance(update, dict) else None
        if isinstance(meta, dict) and claude.META_KEY in meta:
            found.append(meta[claude.META_KEY])
    return found


def test_louise_chat_then_inspect_shows_the_5h_and_7d_windows(subscriber: RealAgent) -> None:
    result = subscriber.chat(PROMPT)
    assert result.status == 0, str(result)
    assert rate_limit_events(subscriber), "claude-agent-acp sent no _claude/rateLimit"

    table = subscriber.louise("inspect", "claude")
    assert table.status == 0, str(table)
    [row] = [line for line in table.stdout.splitlines() if line.startswith("claude ")]
    for text in window_texts():
        assert text in row, (text, row)
    assert " stale " in row  # the chat has ended: no live session confirms them

    data = subscriber.louise("inspect", "claude", "--json")
    assert data.status == 0, str(data)
    [state] = json.loads(data.stdout)["agents"]
    assert state["source"] == claude.SOURCE
    [bucket] = state["snapshot"]["buckets"]
    assert {w["windowDurationMins"]: w["usedPercent"] for w in bucket["windows"]} \
        == pytest.approx(mock_windows())
    detail = subscriber.louise("inspect", "claude", "--detail")
    assert f"Source: {claude.SOURCE}" in detail.stdout, str(detail)


def test_louisechat_statusline_and_winbar_show_the_windows(
    subscriber: RealAgent, request: pytest.FixtureRequest,
) -> None:
    from tests.e2e.test_hooks import record_hooks, wait_hooks

    nvim: Driver = request.getfixturevalue("nvim")  # started after `subscriber` set its env
    record_hooks(nvim)
    nvim.nvim.command("LouiseChat claude")
    key = str(nvim.wait("return require('louise.chat').last", timeout=START))
    nvim.wait_status("ready", key, timeout=START)
    nvim.submit(PROMPT, key, timeout=START)
    five, seven = window_texts()
    label = nvim.wait("local l = require('louise.limits').labels.claude;"
                      " return l and l[1]:find(..., 1, true) and l", seven, timeout=START)
    assert label[0].startswith(f"limits {five} ↻"), label
    assert label[1] == "ok", label

    statusline = nvim.lua(
        "return vim.api.nvim_eval_statusline(..., {use_winbar = false}).str",
        "%{%v:lua.require'louise'.statusline({'agent': 'claude'})%}")
    assert statusline == label[0]
    win = nvim.lua("local c = require('louise.chat');"
                   " return vim.fn.win_findbuf(c.chats[...].buf)[1]", key)
    # Wide enough to hold the limits (a narrow winbar drops them first: the statusline has them).
    nvim.lua("vim.o.columns = 300; vim.api.nvim_win_set_width(..., 220)", win)
    winbar = nvim.wait("local w, text = ...; local s = vim.api.nvim_eval_statusline("
                       " vim.wo[w].winbar, {winid = w, use_winbar = true}).str;"
                       " return s:find(text, 1, true) and s", win, label[0], timeout=START)
    assert five in winbar and seven in winbar, winbar
    assert rate_limit_events(subscriber)
    # User LouiseLimits told the same label (once, whatever came before it).
    nvim.wait("for _, h in ipairs(_G.louise_hooks) do if h.pattern == 'LouiseLimits' and"
              " h.data.label == ... then return true end end", label[0], timeout=START)
    told = [d for d in wait_hooks(nvim, "LouiseLimits", 1) if d["label"] == label[0]]
    assert told == [{"agent": "claude", "label": label[0], "level": "ok"}], told


def test_louise_proxy_gives_louise_the_same_windows_through_the_quota_rfd(
        tmp_path: Path, installed: Installed, mock_model: MockModel,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The real claude-agent-acp behind `louise proxy`: louise, as a plain client of the
    ACP quota RFD (it advertises `session.quota`, the proxy answers with the RFD), gets the
    same 5h and 7d windows the translator reads, from the proxy's `quota_update`s (no
    translator named as its source). v1 clients are tests/integration/test_proxy.py's."""
    agent = subscriber_agent(tmp_path, installed, mock_model, monkeypatch, proxied=True)
    result = agent.chat(PROMPT)
    assert result.status == 0, str(result)
    assert rate_limit_events(agent), "claude-agent-acp sent no _claude/rateLimit"

    data = agent.louise("inspect", "claude", "--json")
    assert data.status == 0, str(data)
    [state] = json.loads(data.stdout)["agents"]
    # The proxy's RFD (a push, or the read when the session became ready after the turn),
    # not louise's own translator.
    assert state["source"] in ("quota_update", "quota/read")
    [bucket] = state["snapshot"]["buckets"]
    assert {w["windowDurationMins"]: w["usedPercent"] for w in bucket["windows"]} \
        == pytest.approx(mock_windows())
