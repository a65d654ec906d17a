"""Limits in Neovim: the statusline labels (re-rendered as reset times draw near), the
threshold and pace alerts, turns parked at a quota limit (the winbar says until when),
and the limits view (opened at once, live while open). Pure: no pynvim here; the work
goes out through the outbox."""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import anyio

from louise import limits as lim
from louise.limits.sources.expected import expected_figures, known_figures
from louise.nvim.screen import Screen
from louise.registry import SessionRegistry
from louise.registry.events import LimitsChanged, SessionParked, SessionUnparked

LABEL_TICK_SECONDS = 30.0


class LimitsUi:
    """Labels, alerts and the limits view of every Agent, for one engine."""

    def __init__(self, screen: Screen, registry: SessionRegistry, alerts: Any) -> None:
        self._screen = screen
        self._registry = registry
        # setup{alerts = false | true | {warning = 20, error = 10}} (percent left).
        self.alerts_enabled = alerts is not False
        self.alert_thresholds = alert_thresholds(alerts)
        self.labels: dict[str, list[str]] = {}
        self._alert_memory: dict[str, lim.AlertMemory] = {}
        self._pace_alert_memory: dict[str, lim.AlertMemory] = {}
        self.parked: dict[str, str] = {}  # session key -> "parked until 17:02 (…)"
        self.view: str | None = None  # the Agent whose limits view is open

    def changed(self, event: LimitsChanged) -> None:
        """An Agent's limits changed: its label, its alerts, its view if open."""
        self.push_label(event.agent, event.state)
        self.alert(event.agent, event.state)
        if event.agent == self.view:
            self.show(event.agent, event.state)

    def resend(self) -> None:
        """Neovim lost a frame: every label again."""
        self.labels.clear()
        self.push_all_labels()

    def alert(self, agent: str, state: lim.LimitsState) -> None:
        """Threshold alerts once per window per reset cycle, and pace alerts (a window that
        runs out before its reset at this rate) once per cycle (setup{alerts = false} off)."""
        if not self.alerts_enabled:
            return
        registry = self._registry
        warning, error = self.alert_thresholds
        now = time.time()
        if state.quota is not None:  # the RFD: every meter, the agent's grading too
            from louise.limits.quota_render import quota_alerts

            alerts, self._alert_memory[agent] = quota_alerts(
                state, state.quota, self._alert_memory.get(agent), now,
                warning_left=warning, error_left=error)
        else:
            alerts, self._alert_memory[agent] = lim.threshold_alerts(
                state, self._alert_memory.get(agent), now,
                warning_left=warning, error_left=error)
        history = registry.limits_pace(agent)
        paced, self._pace_alert_memory[agent] = lim.pace_alerts(
            state, history, self._pace_alert_memory.get(agent), now, warning_left=warning)
        every = [*alerts, *paced]
        if every:  # one notice for all of them (one per window was a prompt each)
            self._screen.notify(combined_alerts(lim.sanitize(agent), every),
                                "error" if any(a.level == "error" for a in every) else "warn")

    async def ticks(self) -> None:
        """Relative reset text ("↻2h") changes with time: re-render labels now and then."""
        while True:
            await anyio.sleep(LABEL_TICK_SECONDS)
            self.push_all_labels()

    def push_all_labels(self) -> None:
        registry = self._registry
        for agent in registry.agent_names():
            self.push_label(agent, registry.inspect_limits(agent))

    def parked_changed(self, event: SessionParked | SessionUnparked) -> None:
        """A turn parked at a quota limit, or its park over: the chat's winbar says until
        when (local time), and a notification says so once."""
        key = event.session_id
        if isinstance(event, SessionUnparked):
            self.parked.pop(key, None)
            return
        local = datetime.fromtimestamp(event.until).astimezone()
        clock = local.strftime("%H:%M") if event.until - time.time() < 86400 \
            else local.strftime("%a %H:%M")
        why = "limit reached" if event.known else "limit reached; trying again then"
        self.parked[key] = f"parked until {clock} ({why})"
        self._screen.notify(f"louise: {lim.sanitize(event.reason)[:200]}: the prompt waits "
                            f"until {clock} and is sent again then (:LouiseUnpark drops it)",
                            "warn")

    def push_label(self, agent: str, state: lim.LimitsState) -> None:
        now = time.time()
        label = lim.render_label(state, now)
        value: list[Any] = [label.text, label.level] if label is not None else ["", "neutral"]
        risk = self._registry.governor.risk(agent)
        if risk is not None:
            value.append(risk)  # the prompt asks for a second send (context.lua)
        if label is not None and state.status == "stale" and state.updated_at is not None:
            # Unconfirmed figures say how old they are ("… · stale (3h ago)"), apart from
            # the figures so "no data stale just now" cannot happen; the label ticks
            # refresh it.
            head = label.text.removesuffix(" stale")
            value[0] = f"{head} · stale ({lim.format_age(state.updated_at, now)})"
        if self.labels.get(agent) == value:
            return
        self.labels[agent] = value
        self._screen.outbox.limits.put(agent, value)
        self._screen.mark()

    def has_live_session(self, agent: str) -> bool:
        """Whether a session of the Agent runs (a limits read has somewhere to go)."""
        return any(s.status not in ("error", "closed")
                   for s in self._registry.sessions(agent))

    def show(self, agent: str, state: lim.LimitsState, open_view: bool = False) -> None:
        """The limits view's content; `open_view` opens it (else only an open view of
        that Agent changes)."""
        registry, outbox = self._registry, self._screen.outbox
        now = time.time()
        windows = []
        if state.snapshot is not None:
            for bucket in state.snapshot.buckets:
                for window in bucket.windows:
                    windows.append({"bucket": bucket.label or bucket.id,
                                    "used": window.used_percent,
                                    "duration": lim.format_duration(window.duration_mins)})
        waiting = outbox.limits_detail.peek()
        if waiting is not None and waiting.get("open") and waiting.get("agent") == agent:
            open_view = True  # a newer state in the same frame still opens the view
        runtime = registry.runtime(agent)
        info = runtime.initialized
        # Before any figure: what the agent sends and when (an agent not started yet
        # only when louise knows it: it may offer limits of its own).
        words = expected_figures if state.status == "unsupported" else known_figures
        awaiting = words(agent, runtime.command.display(),
                         info.agent_name if info is not None else "")
        lines = lim.render_detail(
            state, now, local=datetime.now().astimezone().tzinfo,
            pace=registry.limits_pace(agent), awaiting=awaiting)
        lines += registry.governor.cost_lines(agent)
        outbox.limits_detail.put({
            "agent": agent, "windows": windows,
            "lines": lines,
            "status": state.status, "live": self.has_live_session(agent), "open": open_view})
        self._screen.mark()


def alert_thresholds(value: Any) -> tuple[float, float]:
    """(warning, error) percent-left thresholds from setup{alerts = …}; bad values fall
    back to the defaults (the health check reports them)."""
    warning, error = 20.0, 10.0
    if isinstance(value, Mapping):
        raw_warning, raw_error = value.get("warning"), value.get("error")
        if isinstance(raw_warning, (int, float)) and 0 < raw_warning <= 100:
            warning = float(raw_warning)
        if isinstance(raw_error, (int, float)) and 0 < raw_error <= 100:
            error = float(raw_error)
    return warning, min(error, warning)


def combined_alerts(agent: str, alerts: list[lim.Alert]) -> str:
    """The alerts of one change of an Agent's limits as one notice, its name said once:
    "louise: demo Requests 5h has 18% remaining; resets in 2h · Tokens 1d window: …"."""
    parts = []
    for index, alert in enumerate(alerts):
        message = alert.message
        if index > 0 and message.startswith(f"{agent} "):
            message = message[len(agent) + 1:]
        parts.append(message)
    return "louise: " + " · ".join(parts)

