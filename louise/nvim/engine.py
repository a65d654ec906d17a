"""The engine inside Neovim's louise process: the registry on its own anyio loop in a
daemon thread, commands in from Lua, one coalesced and awaited UI flush per frame out.

Nothing here calls pynvim directly: Neovim is reached only through `UiBridge`.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.from_thread import BlockingPortal

from louise import limits as lim
from louise.broker import PermissionRequest, QueueView
from louise.client_terminal import TerminalCreated, TerminalEvent, TerminalExited, TerminalOutput
from louise.config import Config, ConfigError, load_config, load_config_mapping
from louise.nvim.bridge import UiBridge
from louise.nvim.render import ChatRenderer, diff_lines
from louise.registry import (
    AgentStatus,
    LimitsChanged,
    PermissionQueueChanged,
    RegistryError,
    RegistryEvent,
    SessionAdded,
    SessionRegistry,
)
from louise.session import Event, Session

log = logging.getLogger("louise.nvim")

FRAME_SECONDS = 0.016
MAX_TERMINAL_BYTES_PER_FRAME = 1024 * 1024
MAX_NOTIFY_PER_FRAME = 20
LABEL_TICK_SECONDS = 30.0
ENGINE_KEYS = ("agents", "default_agent", "permissions", "fs", "terminal", "request_timeout")
APPLY = "return require('louise.render').apply(...)"


def engine_config(opts: Mapping[str, Any] | None) -> Config:
    """`setup{}` engine options when given (validated whole), else config.toml."""
    chosen = {k: v for k, v in (opts or {}).items() if k in ENGINE_KEYS}
    if chosen:
        return load_config_mapping(chosen)
    return load_config()


@dataclass
class PendingPermission:
    request: PermissionRequest
    answered: anyio.Event = field(default_factory=anyio.Event)
    option_id: str | None = None


class NvimDecider:
    """Asks the person in Neovim: Python notifies, Lua answers with a notification."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.pending: dict[int, PendingPermission] = {}

    async def decide(self, request: PermissionRequest, queue: QueueView) -> str | None:
        pending = PendingPermission(request)
        self.pending[request.request_id] = pending
        try:
            self.engine.show_permission(request, queue)
            await pending.answered.wait()
            return pending.option_id
        finally:
            self.pending.pop(request.request_id, None)
            self.engine.close_permission(request.request_id)

    def answer(self, request_id: int, option_id: str | None) -> None:
        pending = self.pending.get(request_id)
        if pending is not None:
            pending.option_id = option_id
            pending.answered.set()


class Engine:
    """Owns the registry and the frame loop. Start with `start()` from the pynvim thread."""

    def __init__(self, bridge: UiBridge, opts: Mapping[str, Any] | None = None) -> None:
        self.bridge = bridge
        self.opts = dict(opts or {})
        self.config: Config | None = None
        self.config_error: str | None = None
        self.registry: SessionRegistry | None = None
        self.portal: BlockingPortal | None = None
        self.decider = NvimDecider(self)
        self.renderer = ChatRenderer(self._lookup)
        self._wake = anyio.Event()
        self._wake_due = False
        self._globals: dict[str, Any] = {}
        self._labels: dict[str, list[str]] = {}
        self._current: dict[str, str] = {}  # agent -> last focused session key
        self._last_key: str | None = None
        self._ready = threading.Event()
        self._conflicts: dict[int, tuple[anyio.Event, list[str]]] = {}
        # setup{alerts = false | true | {warning = 20, error = 10}} (percent left).
        alerts = self.opts.pop("alerts", True)
        self.alerts_enabled = alerts is not False
        self.alert_thresholds = alert_thresholds(alerts)
        self._alert_memory: dict[str, lim.AlertMemory] = {}
        self._conflict_ids = 0
        self._thread: threading.Thread | None = None
        self.frames = 0

    # ------------------------------------------------------------------ thread

    def start(self) -> None:
        self._thread = threading.Thread(target=anyio.run, args=(self._main,),
                                        name="louise-engine", daemon=True)
        self._thread.start()
        self._ready.wait(30)

    def stop(self, timeout: float = 5.0) -> None:
        portal = self.portal
        if portal is None:
            return
        try:
            portal.call(portal.stop, True)
        except Exception:
            log.debug("engine already stopped", exc_info=True)
        if self._thread is not None:
            self._thread.join(timeout)

    def submit(self, command: str, args: Mapping[str, Any]) -> None:
        """From the pynvim thread: run a command on the engine loop, never blocking."""
        if self.portal is None:
            return
        try:
            self.portal.start_task_soon(self._run_command, command, dict(args))
        except RuntimeError:
            log.debug("engine stopped; dropped %s", command)

    async def _main(self) -> None:
        async with BlockingPortal() as portal:
            self.portal = portal
            try:
                self.config = engine_config(self.opts)
            except ConfigError as exc:
                self.config_error = str(exc)
                self.config = load_config_mapping({})
                self._notify(f"louise: configuration error; using only the demo agent.\n{exc}",
                             "error")
            from louise.nvim.editor import NvimEditor

            self.registry = SessionRegistry(self.config, decider=self.decider,
                                            editor=NvimEditor(self))
            async with self.registry, anyio.create_task_group() as tg:
                self.registry.subscribe(self._on_event)
                tg.start_soon(self._frames)
                tg.start_soon(self._label_ticks)
                self._push_all_labels()
                self._ready.set()
                await portal.sleep_until_stopped()
                tg.cancel_scope.cancel()

    # ------------------------------------------------------------------ frames

    def _lookup(self, key: str) -> Session | None:
        if self.registry is None:
            return None
        try:
            return self.registry.session(key)
        except RegistryError:
            return None

    def _mark(self) -> None:
        if not self._wake_due:  # once per frame, not once per chunk
            self._wake_due = True
            self._wake.set()

    def _on_event(self, event: RegistryEvent) -> None:
        if isinstance(event, Event):
            self.renderer.on_event(event)
            if self.renderer.dirty:
                self._mark()
            if isinstance(event, SessionAdded) and self.registry is not None:
                host = self.registry.terminal_host(event.session_id)
                if host is not None:
                    key = event.session_id
                    host.subscribe(lambda e: self._on_terminal(key, e), replay=False)
        elif isinstance(event, LimitsChanged):
            self._push_label(event.agent, event.state)
            self._alert(event.agent, event.state)
        elif isinstance(event, PermissionQueueChanged):
            self._globals["queue"] = len(event.pending)
            self._mark()
        elif isinstance(event, AgentStatus) and event.state in ("exited", "failed"):
            if self.registry is not None and not self._closing():
                self._notify(f"louise: {event.agent} {event.state}: {event.message[:2000]}",
                             "warn")

    def _on_terminal(self, key: str, event: TerminalEvent) -> None:
        """Agent terminals mirror into Neovim terminal buffers, coalesced per frame."""
        terms = self._globals.setdefault("term", {})
        entry = terms.setdefault(event.terminal_id, {"key": key, "data": b""})
        if isinstance(event, TerminalCreated):
            entry["command"] = " ".join([event.command, *event.args])
        elif isinstance(event, TerminalOutput):
            if len(entry["data"]) < MAX_TERMINAL_BYTES_PER_FRAME:
                entry["data"] += event.data
        elif isinstance(event, TerminalExited):
            entry["exit"] = event.status.to_wire()
            code, signal = event.status.exit_code, event.status.signal
            text = f"exit {code}" if code is not None else f"signal {signal}"
            self.renderer.terminal_exited(key, event.terminal_id, text)
        self._mark()

    def _alert(self, agent: str, state: lim.LimitsState) -> None:
        """Threshold alerts once per window per reset cycle (setup{alerts = false} off)."""
        if not self.alerts_enabled:
            return
        warning, error = self.alert_thresholds
        alerts, self._alert_memory[agent] = lim.threshold_alerts(
            state, self._alert_memory.get(agent), time.time(),
            warning_left=warning, error_left=error)
        for alert in alerts:
            self._notify(f"louise: {alert.message}", "error" if alert.level == "error" else "warn")

    def _closing(self) -> bool:
        return self.portal is None

    async def _frames(self) -> None:
        """One awaited Lua call per frame at most; the first change after idle goes out
        at once, so batching adds no first-token delay."""
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            self._wake_due = False
            started = time.monotonic()
            batch = self.renderer.take_batch(self._status_for)
            pending = bool(batch["chats"] or batch["status"] or self._globals)
            if self._globals:  # an empty list is news too (e.g. no rules left)
                batch.update(self._globals)
                self._globals = {}
            if pending:
                try:
                    await self.bridge.exec_lua(APPLY, batch)
                    self.frames += 1
                except Exception as exc:
                    log.warning("render batch failed: %s", exc)
            elapsed = time.monotonic() - started
            await anyio.sleep(max(FRAME_SECONDS - elapsed, 0))

    async def _label_ticks(self) -> None:
        """Relative reset text ("↻2h") changes with time: re-render labels now and then."""
        while True:
            await anyio.sleep(LABEL_TICK_SECONDS)
            self._push_all_labels()

    def _push_all_labels(self) -> None:
        if self.registry is None:
            return
        for agent in self.registry.agent_names():
            self._push_label(agent, self.registry.inspect_limits(agent))

    def _push_label(self, agent: str, state: lim.LimitsState) -> None:
        now = time.time()
        label = lim.render_label(state, now)
        value = [label.text, label.level] if label is not None else ["", "neutral"]
        if label is not None and state.status == "stale" and state.updated_at is not None:
            # Unconfirmed figures say how old they are ("… stale 3h ago"); the label
            # ticks refresh it.
            value[0] = f"{label.text} {lim.format_age(state.updated_at, now)}"
        if self._labels.get(agent) == value:
            return
        self._labels[agent] = value
        self._globals.setdefault("limits", {})[agent] = value
        self._mark()

    def _status_for(self, session: Session) -> dict[str, Any]:
        model = next((str(o.get("currentValue")) for o in session.config_options
                      if o.get("category") == "model"), None)
        mode = session.current_mode_id
        for option in session.config_options:
            if option.get("category") == "mode":
                mode = str(option.get("currentValue"))
        context = None
        if session.usage_used is not None and session.usage_size:
            context = round(100 * session.usage_used / session.usage_size)
        cost = None
        if session.cost and isinstance(session.cost.get("amount"), (int, float)):
            cost = f"{session.cost['amount']:.2f} {session.cost.get('currency', '')}".strip()
        title = session.name or session.info.get("title")
        return {
            "status": session.status,
            "agent": session.agent,
            "title": title if isinstance(title, str) else None,
            "mode": mode,
            "model": model,
            "context": context,
            "cost": cost,
            "error": session.error,
            "commands": [str(c.get("name")) for c in session.commands][:200],
            "turn": session.turn,
            "cwd": session.cwd,
            "turns_done": session.turn if session.status in ("ready", "error", "closed")
            else session.turn - 1,
        }

    def _notify(self, message: str, level: str = "info") -> None:
        pending = self._globals.setdefault("notify", [])
        if len(pending) < MAX_NOTIFY_PER_FRAME:  # bounded even if Neovim stalls
            pending.append([message, level])
        self._mark()

    # ------------------------------------------------------------------ permissions

    def show_permission(self, request: PermissionRequest, queue: QueueView) -> None:
        self._globals["permission"] = {
            "id": request.request_id,
            "agent": request.agent,
            "session": request.session_id,
            "title": request.title,
            "kind": request.kind or "other",
            "paths": list(request.paths),
            "command": request.command,
            "options": [{"id": o.get("optionId"), "name": o.get("name"), "kind": o.get("kind")}
                        for o in request.options],
            "position": queue.position,
            "total": queue.total,
            "diff": diff_lines(request.diffs, request.workspace),
            "diffs": [{"path": d.get("path"), "old": d.get("oldText"), "new": d.get("newText"),
                       "mode": d.get("derived") or "diff", "old_string": d.get("oldString"),
                       "new_string": d.get("newString")} for d in request.diffs],
        }
        self._mark()

    def close_permission(self, request_id: int) -> None:
        self._globals["permission_close"] = request_id
        self._mark()

    async def ask_conflict(self, path: Path, session_id: str) -> str:
        """A write to a buffer with unsaved edits: the person chooses (notification out,
        notification back; never a blocking request)."""
        self._conflict_ids += 1
        ident = self._conflict_ids
        answered = anyio.Event()
        self._conflicts[ident] = (answered, [])
        session = self._lookup(session_id)
        self._globals["fs_conflict"] = {"id": ident, "path": str(path),
                                        "agent": session.agent if session else "agent"}
        self._mark()
        try:
            await answered.wait()
            choices = self._conflicts[ident][1]
            return choices[0] if choices else "refuse"
        finally:
            self._conflicts.pop(ident, None)

    async def cmd_fs_conflict_answer(self, id: int, choice: str = "refuse") -> None:
        entry = self._conflicts.get(int(id))
        if entry is not None:
            entry[1].append(choice)
            entry[0].set()

    # ------------------------------------------------------------------ commands

    async def _run_command(self, command: str, args: dict[str, Any]) -> None:
        handler = getattr(self, f"cmd_{command}", None)
        if handler is None:
            self._notify(f"louise: unknown command {command!r}", "error")
            return
        try:
            await handler(**args)
        except (RegistryError, OSError) as exc:
            self._notify(f"louise: {exc}", "error")
        except Exception as exc:
            log.exception("command %s failed", command)
            self._notify(f"louise: {command} failed: {exc}", "error")

    @property
    def _registry(self) -> SessionRegistry:
        assert self.registry is not None
        return self.registry

    def _open(self, session: Session, focus: bool = True) -> None:
        self._current[session.agent] = session.session_id
        self._last_key = session.session_id
        self._globals.setdefault("open", []).append(
            {"key": session.session_id, "agent": session.agent, "focus": focus})
        self.renderer.attach(session.session_id)
        self._mark()

    async def cmd_chat(self, agent: str | None = None, cwd: str | None = None) -> None:
        """Open (or focus) the chat of an agent: its last session, else a new one. Without
        an agent: the last chat, else a picker when several Agents are configured."""
        config = self._registry.config
        if agent is None:
            if self._last_key is not None and self._lookup(self._last_key) is not None:
                self._open(self._registry.session(self._last_key))
                return
            configured = [n for n in config.agents if n != "demo"] or ["demo"]
            if len(configured) > 1:
                # Sorted (a Lua table has no order), the demo agent last.
                names = sorted(config.agents, key=lambda n: (n == "demo", n))
                self._globals["pick_agent"] = {"agents": names, "cwd": cwd,
                                               "default": config.default_agent}
                self._mark()
                return
        name = agent or config.default_agent
        key = self._current.get(name)
        if key is not None and self._lookup(key) is not None:
            self._open(self._registry.session(key))
            return
        await self.cmd_new(agent=name, cwd=cwd)

    async def cmd_new(self, agent: str | None = None, cwd: str | None = None) -> None:
        name = agent or self._registry.config.default_agent
        session = await self._registry.new_session(name, cwd)
        self._open(session)

    async def cmd_attach(self, key: str) -> None:
        if self._lookup(key) is not None:
            self.renderer.attach(key)
            self._mark()

    async def cmd_detach(self, key: str) -> None:
        self.renderer.detach(key)

    async def cmd_prompt(self, key: str, text: str) -> None:
        if not text.strip():
            return
        try:
            await self._registry.prompt(key, text)
        except RegistryError as exc:
            self._notify(f"louise: {exc}", "error")
        except Exception as exc:  # the chat already shows the error notice
            log.info("prompt ended with %s", exc)

    async def cmd_cancel(self, key: str) -> None:
        await self._registry.cancel(key)

    async def cmd_close(self, key: str) -> None:
        await self._registry.close_session(key)
        self.renderer.forget(key)
        self._globals.setdefault("closed", []).append(key)
        self._mark()

    async def cmd_permission_answer(self, id: int, option: str | None = None) -> None:
        self.decider.answer(int(id), option)

    async def cmd_switch(self) -> None:
        items = [{"key": s.session_id, "agent": s.agent, "status": s.status, "cwd": s.cwd,
                  "title": s.info.get("title") if isinstance(s.info.get("title"), str) else ""}
                 for s in self._registry.sessions()]
        self._globals["pick_session"] = items
        self._mark()

    async def cmd_focus(self, key: str) -> None:
        session = self._lookup(key)
        if session is not None:
            self._open(session)

    async def cmd_limits(self, agent: str | None = None, refresh: bool = True) -> None:
        name = agent or self._registry.config.default_agent
        registry = self._registry
        registry.runtime(name)  # unknown agent: a clear error
        state = await registry.refresh_limits(name) if refresh else registry.inspect_limits(name)
        now = time.time()
        windows = []
        if state.snapshot is not None:
            for bucket in state.snapshot.buckets:
                for window in bucket.windows:
                    windows.append({"bucket": bucket.label or bucket.id,
                                    "used": window.used_percent,
                                    "duration": lim.format_duration(window.duration_mins)})
        self._globals["limits_detail"] = {"agent": name, "lines": lim.render_detail(state, now),
                                          "windows": windows}
        self._mark()

    async def cmd_set_mode(self, key: str, mode: str) -> None:
        await self._registry.set_mode(key, mode)

    async def cmd_set_option(self, key: str, option: str, value: Any) -> None:
        await self._registry.set_config_option(key, option, value)

    async def cmd_rename(self, key: str, name: str) -> None:
        session = self._registry.session(key)
        session.name = " ".join(name.split())[:200] or None
        self.renderer.on_event(InfoRenamed(key))
        self._mark()

    async def cmd_resume(self, agent: str | None = None, cwd: str | None = None,
                         all: bool = False) -> None:
        """The agent's sessions (for this cwd, or all), then `session/load` of the pick."""
        name = agent or self._registry.config.default_agent
        infos = await self._registry.list_sessions(name, None if all else cwd)
        items = [{"agent": name, "id": str(info.get("sessionId")),
                  "title": str(info.get("title") or ""), "cwd": str(info.get("cwd") or ""),
                  "updated": str(info.get("updatedAt") or "")}
                 for info in infos[:500] if isinstance(info.get("sessionId"), str)]
        self._globals["pick_resume"] = items
        self._mark()

    async def cmd_reattach(self, key: str, agent: str, cwd: str | None = None) -> None:
        """A chat from a previous louise process (it died): load its session again."""
        if self._lookup(key) is not None:
            self.renderer.attach(key)
            self._mark()
            return
        prefix = f"{agent}:"
        if not key.startswith(prefix):
            raise RegistryError(f"cannot reattach {key!r}")
        session = await self._registry.load_session(agent, key[len(prefix):], cwd)
        self._open(session, focus=False)

    async def cmd_load(self, agent: str, id: str, cwd: str | None = None) -> None:
        session = await self._registry.load_session(agent, id, cwd)
        self._open(session)

    async def cmd_modes(self, key: str) -> None:
        session = self._registry.session(key)
        if session.status != "ready":
            raise RegistryError("modes can be changed only while the agent is idle")
        option = next((o for o in session.config_options if o.get("category") == "mode"), None)
        if option is not None:
            await self.cmd_options(key, only=str(option.get("id")))
            return
        items = [{"id": str(m.get("id")), "name": str(m.get("name") or m.get("id")),
                  "description": str(m.get("description") or "")} for m in session.modes]
        if not items:
            raise RegistryError(f"{session.agent} offers no modes")
        self._globals["pick_mode"] = {"key": key, "items": items,
                                      "current": session.current_mode_id}
        self._mark()

    async def cmd_options(self, key: str, only: str | None = None) -> None:
        session = self._registry.session(key)
        if session.status != "ready":
            raise RegistryError("options can be changed only while the agent is idle")
        options = []
        for option in session.config_options:
            if only is not None and option.get("id") != only:
                continue
            values: list[dict[str, Any]] = []
            if option.get("type") == "boolean":
                values = [{"value": True, "name": "on"}, {"value": False, "name": "off"}]
            else:
                for entry in option.get("options") or []:
                    group = entry.get("options") if isinstance(entry, dict) else None
                    for item in group if isinstance(group, list) else [entry]:
                        if isinstance(item, dict) and "value" in item:
                            values.append({"value": item["value"],
                                           "name": str(item.get("name") or item["value"])})
            options.append({"id": str(option.get("id")), "name": str(option.get("name")),
                            "current": option.get("currentValue"), "values": values})
        if not options:
            raise RegistryError(f"{session.agent} offers no options")
        self._globals["pick_option"] = {"key": key, "options": options}
        self._mark()

    async def cmd_export(self, key: str, path: str | None = None) -> None:
        from louise import transcript

        transcript_path = self._registry.transcript_path(key)
        if transcript_path is None:
            raise RegistryError("transcripts are off for this session")
        await self._registry.flush_transcripts()
        result = await anyio.to_thread.run_sync(transcript.load, transcript_path)
        markdown = transcript.to_markdown(result.session)
        if path:
            target = Path(path).expanduser()
            await anyio.to_thread.run_sync(target.write_text, markdown)
            self._notify(f"louise: exported to {target}")
        else:
            self._globals["show_text"] = {"name": f"louise-export://{key}",
                                          "lines": markdown.split("\n"), "ft": "markdown"}
            self._mark()

    async def cmd_log(self, key: str | None = None, agent: str | None = None) -> None:
        name = agent or (self._registry.session(key).agent if key else
                         self._registry.config.default_agent)
        self._globals["show_text"] = {"name": f"louise-log://{name}",
                                      "lines": self._registry.agent_log(name), "ft": "log"}
        self._mark()

    async def cmd_permissions(self) -> None:
        memory = self._registry.broker.memory
        rules = await anyio.to_thread.run_sync(memory.list) if memory is not None else []
        self._globals["permissions_list"] = [
            {"id": r.id, "decision": r.decision, "kind": r.kind, "target": r.target,
             "workspace": r.workspace, "agent": r.agent_key} for r in rules]
        self._mark()

    async def cmd_revoke(self, id: str) -> None:
        memory = self._registry.broker.memory
        if memory is None:
            return
        removed = await anyio.to_thread.run_sync(memory.revoke, id)
        if not removed:
            self._notify("louise: that rule was already gone", "warn")
        await self.cmd_permissions()

    async def cmd_prompt_with(self, key: str, text: str,
                              context: list[dict[str, Any]] | None = None) -> None:
        """A prompt with context chips (buffer, file, selection, diagnostics)."""
        session = self._registry.session(key)
        runtime = self._registry.runtime(session.agent)
        caps = runtime.initialized.agent_capabilities if runtime.initialized else {}
        prompt_caps = caps.get("promptCapabilities")
        embedded = isinstance(prompt_caps, dict) and prompt_caps.get("embeddedContext") is True
        blocks: list[dict[str, Any]] = [{"type": "text", "text": text}]
        for chip in (context or [])[:50]:
            blocks.extend(context_blocks(chip, embedded))
        try:
            await self._registry.prompt(key, blocks)
        except RegistryError as exc:
            self._notify(f"louise: {exc}", "error")
        except Exception as exc:
            log.info("prompt ended with %s", exc)

    async def cmd_ping(self) -> None:
        self._globals["pong"] = os.getpid()
        self._mark()


@dataclass(slots=True)
class InfoRenamed(Event):
    """Local: the person renamed a session (only the header changes)."""


def context_blocks(chip: Mapping[str, Any], embedded: bool) -> list[dict[str, Any]]:
    """Prompt content for one context chip, as the agent's prompt capabilities allow:
    a resource_link always; the text embedded only with `embeddedContext`."""
    kind = chip.get("kind")
    path = str(chip.get("path") or "")
    uri = "file://" + path if path.startswith("/") else path
    name = os.path.basename(path) or path or "context"
    text = str(chip.get("text") or "")[:1_000_000]
    if kind in ("buffer", "file"):
        if embedded and kind == "buffer" and text:
            return [{"type": "resource", "resource": {"uri": uri, "text": text,
                                                       "mimeType": "text/plain"}}]
        return [{"type": "resource_link", "uri": uri, "name": name}]
    if kind == "selection":
        where = f"{path}:{chip.get('first')}-{chip.get('last')}"
        return [{"type": "text", "text": f"Selection from {where}:\n````\n{text}\n````"}]
    if kind == "diagnostics":
        return [{"type": "text", "text": f"Diagnostics in {path}:\n{text}"}]
    return []


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
