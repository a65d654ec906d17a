"""Issue 7, the quota display, end to end: a real headless Neovim, the real plugin, the real
demo agent. Expected labels are computed with `louise.limits` from the demo agent's own
snapshot function, never copied from the screen."""

from __future__ import annotations

import os
import re
import shlex
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from louise import limits as lim
from louise.demo_agent.limits import snapshot as demo_snapshot
from tests.e2e.conftest import Driver

pytestmark = pytest.mark.e2e

COMPONENT = "%{%v:lua.require'louise'.statusline()%}"
COMPONENT_BANG = "%!v:lua.require'louise'.statusline()"
EVAL = "return vim.api.nvim_eval_statusline(..., {use_winbar = false, highlights = true})"
FRESH_LABEL = ("local l = require('louise.limits').labels.demo;"
               " return l and l[1] ~= '' and not l[1]:find('loading', 1, true)"
               " and not l[1]:find('stale', 1, true) and l")
CHAT_WIN = ("local c = require('louise.chat'); local s = c.chats[c.last];"
            " return s and vim.fn.win_findbuf(s.buf)[1]")


# --------------------------------------------------------------------------- helpers


def open_chat(nvim: Driver, agent: str | None = None) -> str:
    nvim.nvim.command("LouiseChat" + (f" {agent}" if agent else ""))
    key = nvim.wait("return require('louise.chat').last")
    nvim.wait_status("ready")
    return str(key)


def evaluate(nvim: Driver, stl: str = COMPONENT) -> dict[str, Any]:
    """`nvim_eval_statusline` run by Lua inside Neovim (never over RPC: see the runtime notes
    §4, a statusline that called rpcrequest would deadlock Neovim)."""
    return dict(nvim.lua(EVAL, stl))


def demo_state(prompts: int, now: float, step: float = 1.0) -> lim.LimitsState:
    """The state louise holds after accepting the demo agent's snapshot at `now` (with
    LOUISE_DEMO_QUOTA_STEP = `step`)."""
    return lim.accepted("demo", lim.parse_snapshot(demo_snapshot(prompts, now, step=step)), now)


def demo_label(prompts: int, now: float, step: float = 1.0) -> lim.Label:
    label = lim.render_label(demo_state(prompts, now, step), now)
    assert label is not None
    return label


def group_of(level: str) -> str:
    """The statusline's group of a level: readable on the statusline (issue 16 item 5)."""
    return "LouiseLimits" + level.capitalize() + "StatusLine"


def wait_for(predicate: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def ping(nvim: Driver) -> None:
    """A round trip through the engine: everything it was asked before has been handled."""
    nvim.lua("require('louise.render').pong = nil; require('louise.engine').send('ping', {})")
    nvim.wait("return require('louise.render').pong")


def parent_pids() -> dict[int, int]:
    out: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        out[int(entry)] = int(stat[stat.rindex(")") + 2:].split()[1])
    return out


def descendants(pid: int) -> set[int]:
    parents = parent_pids()
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def process_state(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2:].split()[0]


# --------------------------------------------------------------------------- (a) label


def test_statusline_shows_the_pushed_label_with_its_highlight(nvim: Driver) -> None:
    open_chat(nvim)  # no prompt yet: the demo account has run 0 prompts
    nvim.wait(FRESH_LABEL)
    before = time.time()
    result = evaluate(nvim)
    after = time.time()
    expected = {demo_label(0, now) for now in (before, after)}
    text = result["str"]
    assert text in {label.text for label in expected}, (text, expected)
    assert text.startswith("limits Requests")
    assert "/5h ↻" in text
    (label,) = [label for label in expected if label.text == text]
    highlights = result["highlights"]
    assert highlights[0]["start"] == 0
    assert highlights[0]["group"] == group_of(label.level), highlights
    assert nvim.lua("return vim.fn.hlexists(...)", group_of(label.level)) == 1
    # The same label for the agent named explicitly, and compactly for every agent.
    assert evaluate(nvim, "%{%v:lua.require'louise'.statusline({'agent': 'demo'})%}")["str"] == text
    every = evaluate(nvim, "%{%v:lua.require'louise'.statusline({'all': v:true})%}")["str"]
    assert every == "demo: " + text.removeprefix("limits ")


# --------------------------------------------------------------------------- (b) percent


def test_a_percent_in_a_label_reaches_neovim_doubled(nvim: Driver) -> None:
    nvim.lua("require('louise.limits').update({demo = {'limits 5% x', 'ok'}})")
    for stl in (COMPONENT, COMPONENT_BANG):
        result = evaluate(nvim, stl)
        assert result["str"] == "limits 5% x", (stl, result)
        assert result["highlights"][0]["group"] == "LouiseLimitsOkStatusLine", (stl, result)
    # Reading the statusline starts nothing.
    assert nvim.lua("return require('louise.engine').chan") is None


# --------------------------------------------------------------------------- (c) stale


def test_the_label_turns_stale_when_the_agent_exits(nvim: Driver) -> None:
    open_chat(nvim)
    nvim.wait(FRESH_LABEL)
    fresh = evaluate(nvim)["str"]
    nvim.prompt("/scenario fail crash")
    nvim.wait_status("error")
    result = wait_for(lambda: (r := evaluate(nvim))["str"].endswith("stale (just now)") and r,
                      "the statusline label to end with 'stale (just now)' (with its age)")
    assert result["str"] == fresh + " · stale (just now)"
    now = time.time()
    stale = lim.render_label(lim.failed(demo_state(0, now), "agent exited"), now)
    assert stale is not None and stale.text.endswith(" stale")
    assert result["highlights"][0]["group"] == group_of(stale.level), result


# --------------------------------------------------------------------------- (d) :LouiseLimits


def test_louise_limits_for_an_unobserved_agent_starts_no_process(
    nvim: Driver, tmp_path: Path
) -> None:
    marker = tmp_path / "MARKER"
    script = (f"touch {shlex.quote(str(marker))};"
              f" exec {shlex.quote(sys.executable)} -P -m louise.demo_agent")
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, default_agent = 'demo',"
             " agents = {other = {command = 'sh', args = {'-c', ...}}}})", script)
    nvim_pid = int(nvim.lua("return vim.fn.getpid()"))
    assert descendants(nvim_pid) == set()

    nvim.nvim.command("LouiseLimits other")
    lines = nvim.wait("local l = require('louise.limits');"
                      " if not (l.win and vim.api.nvim_win_is_valid(l.win)) then return false end;"
                      " local lines = vim.api.nvim_buf_get_lines(l.buf, 0, -1, false);"
                      " return table.concat(lines, '\\n'):find('not observed', 1, true) and lines")
    assert "Agent: other" in lines
    assert "Status: not observed" in lines
    assert nvim.lua("local l = require('louise.limits');"
                    " return vim.api.nvim_win_get_config(l.win).relative") == "editor"
    ping(nvim)

    assert not marker.exists(), "the agent 'other' was started"
    engine = int(nvim.lua("return require('louise.engine').pid"))
    started = descendants(nvim_pid)
    assert started == {engine}, {pid: cmdline(pid) for pid in started}

    # The agent is configured correctly: using it for real does create the marker.
    nvim.nvim.command("LouiseChat other")
    wait_for(marker.exists, "the agent 'other' to start for a chat")


# --------------------------------------------------------------------------- (e) no rpcrequest


def test_statusline_evaluation_never_waits_for_the_python_side(nvim: Driver) -> None:
    open_chat(nvim)
    label = nvim.wait(FRESH_LABEL)
    pid = int(nvim.lua("return require('louise.engine').pid"))
    code = (
        "local win = select(1, ...); local out = {};"
        " for _, stl in ipairs(select(2, ...)) do"
        "   table.insert(out, vim.api.nvim_eval_statusline(stl, {use_winbar = false}).str) end;"
        " table.insert(out, vim.api.nvim_eval_statusline(vim.wo[win].winbar,"
        "   {winid = win, use_winbar = true}).str);"
        " table.insert(out, vim.api.nvim_eval_statusline(require('louise').lualine[1](),"
        "   {use_winbar = false}).str);"
        " return out"
    )
    win = nvim.lua(CHAT_WIN)
    # Wide enough for the label (a narrow winbar drops it first: the statusline has it).
    nvim.nvim.command("set columns=240")
    nvim.lua("vim.api.nvim_win_set_width(...)", win, 200)
    # The winbar follows the label after a throttled redraw: wait for it before stopping.
    nvim.wait("local w, text = ...; return vim.wo[w].winbar:find(text:gsub('%%', '%%%%'), 1, true)",
              win, label[0])
    stls = [COMPONENT, COMPONENT_BANG, "%{%v:lua.require'louise'.statusline({'all': v:true})%}"]
    results: list[Any] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            results.append(nvim.lua(code, win, stls))
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)

    os.kill(pid, signal.SIGSTOP)
    try:
        wait_for(lambda: process_state(pid) == "T", "the engine to be stopped")
        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        worker.join(30)
        hung = worker.is_alive()
    finally:
        os.kill(pid, signal.SIGCONT)
    if hung:
        worker.join(30)  # the engine runs again: an rpcrequest gets its answer now
    assert not hung, "evaluating the statusline waited for the stopped Python side"
    assert not errors, errors
    (out,) = results
    assert out[0] == label[0] and out[1] == label[0], out
    assert out[2] == "demo: " + label[0].removeprefix("limits ")
    assert label[0] in out[3], out[3]
    assert out[4] == label[0], out[4]  # the lualine component
    ping(nvim)  # and the engine is fine afterwards


# --------------------------------------------------------------------------- (f) winbar


# The winbar's fields in the order they show (issue 7 item 2), and the order they go when
# the window narrows (issue 16 item 1, :h louise-winbar): cost first, then context %,
# model/mode, the session name, the agent; the limits label first (the statusline shows it;
# issue 23 item 5), and the turn state, in words, never.
KEEP_ORDER = ("turn", "name", "agent", "limits", "model/mode", "context", "cost")
DROP_ORDER = ("limits", "cost", "context", "model/mode", "name", "agent")


def classify(part: str, index: int, status: dict[str, Any]) -> str | None:
    """Which winbar field `part` is, or None (e.g. a field cut by Neovim's truncation)."""
    if index == 0:
        return "turn" if status["status"] in part and "<" not in part else None
    if part == status["title"]:
        return "name"
    if part == "demo":
        return "agent"
    if part.startswith("limits ") and "<" not in part:
        return "limits"
    if part in (status["model"], status["mode"], f"{status['model']} {status['mode']}"):
        return "model/mode"
    if re.fullmatch(r"(ctx|context) \d+%( stale)?", part):
        return "context"
    if part == status["cost"] or part == f"cost={status['cost']}":
        return "cost"
    return None


def winbar_fields(nvim: Driver, win: int, status: dict[str, Any]) -> tuple[list[str] | None, str]:
    result = nvim.lua("local w = ...; return vim.api.nvim_eval_statusline(vim.wo[w].winbar,"
                      " {winid = w, use_winbar = true})", win)
    width = nvim.lua("return vim.api.nvim_win_get_width(...)", win)
    text = result["str"]
    parts = [part.strip() for part in text.split(" · ")]
    fields = [classify(part, i, status) for i, part in enumerate(parts)]
    if result["width"] > width or None in fields:
        return None, text
    # model and mode may be two parts: one field
    merged = [f for i, f in enumerate(fields) if f is not None and (i == 0 or f != fields[i - 1])]
    return merged, text


def test_the_chat_winbar_narrows_in_a_defined_order(nvim: Driver) -> None:
    nvim.nvim.command("set columns=240")
    open_chat(nvim)
    win = nvim.lua(CHAT_WIN)
    nvim.lua("vim.api.nvim_win_set_width(...)", win, 200)
    nvim.prompt("Review")  # the demo agent names the session after its first prompt
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return s.status and s.status.title == 'Review'")
    nvim.wait_status("ready")
    nvim.wait(FRESH_LABEL)
    status = nvim.lua("local c = require('louise.chat'); return c.chats[c.last].status")

    shown: list[Any] = [None, ""]

    def everything() -> bool:
        shown[:] = winbar_fields(nvim, win, status)
        return shown[0] is not None and set(shown[0]) == set(KEEP_ORDER)

    try:
        wait_for(everything, "every field in the winbar at width 200")
    except AssertionError:
        raise AssertionError(f"at width 200 the winbar is {shown[1]!r}") from None
    assert shown[0] == list(KEEP_ORDER), shown  # and in the order of issue 7 item 2
    full_width = nvim.lua("local w = ...; return vim.api.nvim_eval_statusline(vim.wo[w].winbar,"
                          " {winid = w, use_winbar = true}).width", win)

    widths = [full_width - 1] + [w for w in (75, 60, 50, 40, 24, 12) if w < full_width - 1]
    seen: dict[int, list[str]] = {}
    problems: list[str] = []
    previous = set(KEEP_ORDER)
    for width in widths:
        nvim.lua("vim.api.nvim_win_set_width(...)", win, width)

        def fits() -> bool:
            shown[:] = winbar_fields(nvim, win, status)
            return shown[0] is not None

        try:
            wait_for(fits, f"the winbar to fit in {width} columns", timeout=5)
        except AssertionError:
            problems.append(f"width {width}: not narrowed, Neovim truncates it: {shown[1]!r}")
            continue
        fields = seen[width] = shown[0]
        # Whole fields go in DROP_ORDER, the rest keep their places; the turn state always
        # stays.
        dropped = DROP_ORDER[:len(KEEP_ORDER) - len(fields)]
        if fields != [f for f in KEEP_ORDER if f not in dropped] or "turn" not in fields:
            problems.append(f"width {width}: fields {fields} are not {KEEP_ORDER} less a"
                            f" prefix of {DROP_ORDER}: {shown[1]!r}")
        if not set(fields) <= previous:
            problems.append(f"width {width}: {fields} came back after being dropped")
        previous = set(fields)
    assert not problems, "\n".join(problems)
    assert seen[widths[0]] != list(KEEP_ORDER), "one column short, something must go"


# --------------------------------------------------------------------------- alerts


def test_a_threshold_alert_fires_once_per_threshold_per_reset(nvim: Driver) -> None:
    nvim.lua("_G.__notified = {}; local orig = vim.notify;"
             " vim.notify = function(msg, level, opts)"
             "   table.insert(_G.__notified, {tostring(msg), level or vim.log.levels.INFO});"
             "   return orig(msg, level, opts) end")
    levels = nvim.lua("return vim.log.levels")
    nvim.lua("vim.env.LOUISE_DEMO_QUOTA_STEP = '4'")  # the demo's fast pace: 22 prompts
    open_chat(nvim)
    nvim.wait(FRESH_LABEL)

    # What louise.limits says should alert, prompt by prompt, for the demo account.
    now = time.time()
    expected: dict[int, list[lim.Alert]] = {}
    seen: lim.AlertMemory | None = None
    for prompts in range(22):
        alerts, seen = lim.threshold_alerts(demo_state(prompts, now, 4), seen, now)
        expected[prompts] = alerts
    wanted = [(p, alert) for p, alerts in expected.items() for alert in alerts]
    assert [p for p, _ in wanted] == [17, 20], wanted  # ≤20 % left, then ≤10 % left
    last = max(expected)

    def alert_lines() -> list[tuple[str, int]]:
        notified = nvim.lua("return _G.__notified")
        return [(str(m), int(lvl)) for m, lvl in notified
                if "remaining;" in m or "limit reached" in m]

    def matching(alert: lim.Alert) -> list[tuple[str, int]]:
        stem = alert.message.split("; resets in")[0]
        return [(m, lvl) for m, lvl in alert_lines() if stem in m]

    for prompts in range(1, last + 1):
        nvim.prompt("/scenario limits")
        nvim.wait_status("ready")
        nvim.wait("local l = require('louise.limits').labels.demo; return l and l[1] == ...",
                  demo_label(prompts, time.time(), 4).text)
        for alert in expected[prompts]:
            wait_for(lambda alert=alert: matching(alert),
                     f"the alert {alert.message!r} after {prompts} prompts", timeout=30)
    ping(nvim)

    for _, alert in wanted:
        found = matching(alert)
        assert len(found) == 1, (alert.message, found)
        level = levels["WARN"] if alert.level == "warning" else levels["ERROR"]
        assert found[0][1] == level, (alert, found)
    assert len(alert_lines()) == len(wanted), alert_lines()


def test_background_sessions_show_on_the_right_and_collapse_keeping_permission_named(
    nvim: Driver,
) -> None:
    nvim.nvim.command("LouiseChat")
    first = str(nvim.wait("return require('louise.chat').last"))
    nvim.wait_status("ready", first)
    nvim.nvim.command("LouiseNew")
    second = str(nvim.wait("local c = require('louise.chat'); return c.last ~= ... and c.last",
                           first))
    nvim.wait_status("ready", second)
    nvim.prompt("/scenario edit", first)  # first now waits for a permission
    nvim.wait("return require('louise.permission').current ~= nil")
    wide = str(nvim.lua("local c = require('louise.chat'); return c.winbar(c.chats[...], 400)",
                        second))
    assert "%=" in wide and "! demo 1" in wide
    narrow = str(nvim.lua("local c = require('louise.chat'); return c.winbar(c.chats[...], 70)",
                          second))
    assert "! demo 1" in narrow  # still named: it needs the person
    nvim.permission_key("q")


def test_winbar_click_targets_open_the_limits_float_and_switch_sessions(nvim: Driver) -> None:
    nvim.nvim.command("LouiseChat")
    first = str(nvim.wait("return require('louise.chat').last"))
    nvim.wait_status("ready", first)
    nvim.wait(FRESH_LABEL)
    nvim.nvim.command("LouiseNew")
    second = str(nvim.wait("local c = require('louise.chat'); return c.last ~= ... and c.last",
                           first))
    nvim.wait_status("ready", second)
    nvim.prompt("/scenario slow delay_ms=100", first)  # first works in the background
    nvim.wait("local c = require('louise.chat'); local s = c.chats[...];"
              " return s.status.status == 'prompting'", first)
    bar = str(nvim.lua("local c = require('louise.chat'); return c.winbar(c.chats[...], 300)",
                       second))
    # Plain global handlers: Neovim never invokes `v:lua.require(...)` click targets.
    assert "%@v:lua.__louise_limits_click@" in bar
    minwid = int(bar.split("@v:lua.__louise_session_click@")[0].rsplit("%", 1)[1])
    nvim.lua("_G.__louise_limits_click()")
    nvim.wait("local l = require('louise.limits'); return l.win and"
              " vim.api.nvim_win_is_valid(l.win)")
    nvim.lua("vim.api.nvim_win_close(require('louise.limits').win, true)")
    nvim.lua("_G.__louise_session_click(...)", minwid)
    nvim.wait("return require('louise.chat').last == ...", first)
    nvim.lua("local c = require('louise.chat'); require('louise.engine').send('cancel',"
             " {key = ...})", first)


def test_the_readme_recipe_shows_the_label_once_not_in_every_window(nvim: Driver) -> None:
    """Issue 23: the README's statusline recipe showed the label in every window."""
    open_chat(nvim)
    nvim.wait(FRESH_LABEL)
    current = "%{%v:lua.require'louise'.statusline({'current': v:true})%}"
    shown = nvim.lua(
        "local out = {}; local cur = vim.api.nvim_get_current_win();"
        " for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do"
        "   out[#out + 1] = {win == cur, vim.api.nvim_eval_statusline(..., {winid = win}).str}"
        " end; return out", current)
    assert len(shown) >= 2, shown
    assert [bool(text) for is_current, text in shown] == [bool(c) for c, _ in shown], shown
    assert any("Requests" in text for is_current, text in shown if is_current), shown
