"""The commands Lua sends (`rpcnotify(chan, 'louise', name, args)`), run on the engine loop.

Each `cmd_<name>` takes the notification's arguments as keywords. What a command shows
goes through the engine's outbox; errors become one notification, never a traceback.

Protocol decisions are the core's: prompt content from context chips
(`registry.prompt(..., context=...)`), config-option choices (`Session.option_choices()`),
the model and mode shown (`Session.current_model`, `current_mode`), renaming
(`registry.rename()`).
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from louise.registry import SessionRegistry
from louise.registry.records import PromptWithdrawn, RegistryError
from louise.session import Session

if TYPE_CHECKING:
    from louise.nvim.engine import Engine

log = logging.getLogger("louise.nvim")

MAX_LISTED_SESSIONS = 500
MAX_COMMANDS = 200
MAX_COMMAND_TEXT = 160


class Commands:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @property
    def registry(self) -> SessionRegistry:
        registry = self.engine.registry
        assert registry is not None
        return registry

    async def run(self, command: str, args: dict[str, Any]) -> None:
        handler = getattr(self, f"cmd_{command}", None)
        if handler is None:
            self.engine.notify(f"louise: unknown command {command!r}", "error")
            return
        try:
            await handler(**args)
        except OSError as exc:  # "[Errno 2] …" is not for people
            where = f"{exc.filename}: " if exc.filename else ""
            self.engine.notify(f"louise: {where}{exc.strerror or exc}", "error")
        except RegistryError as exc:
            self.engine.notify(f"louise: {exc}", "error")
        except Exception as exc:
            log.exception("command %s failed", command)
            self.engine.notify(f"louise: {command} failed: {exc}", "error")

    def _picker(self, kind: str, data: Any) -> None:
        self.engine.outbox.picker.put({"kind": kind, "data": data})
        self.engine.mark()

    # ------------------------------------------------------------------ chats

    async def cmd_chat(self, agent: str | None = None, cwd: str | None = None) -> None:
        """Open (or focus) the chat of an agent: its last session, else a new one. Without
        an agent: the last chat, else a picker when several Agents are configured."""
        engine = self.engine
        config = self.registry.config
        if agent is None:
            last = engine.last_session()
            if last is not None:
                engine.open(last)
                return
            configured = [n for n in config.agents if n != "demo"] or ["demo"]
            if len(configured) > 1 and not engine.default_named:
                # Sorted (a Lua table has no order), the demo agent last.
                names = sorted(config.agents, key=lambda n: (n == "demo", n))
                self._picker("agent", {"agents": names, "cwd": cwd,
                                       "default": config.default_agent})
                return
        name = agent or config.default_agent
        session = engine.current_session(name)
        if session is not None:
            engine.open(session)
            return
        await self.cmd_new(agent=name, cwd=cwd)

    async def cmd_new(self, agent: str | None = None, cwd: str | None = None) -> None:
        name = agent or self.registry.config.default_agent
        if not self.registry.runtime(name).connected:
            # Starting an agent can take seconds (initialize): say so at once.
            self.engine.notify(f"louise: … starting {name}")
        registry = self.registry
        session = await registry.with_sign_in(name, lambda: registry.new_session(name, cwd))
        self.engine.open(session)

    async def cmd_attach(self, key: str) -> None:
        if self.engine.lookup(key) is not None:
            self.engine.renderer.attach(key)
            self.engine.mark()

    async def cmd_detach(self, key: str) -> None:
        self.engine.renderer.detach(key)

    async def cmd_focus(self, key: str) -> None:
        session = self.engine.lookup(key)
        if session is not None:
            self.engine.open(session)

    async def cmd_switch(self) -> None:
        items = [{"key": s.session_id, "agent": s.agent, "status": s.status, "cwd": s.cwd,
                  "title": status_for(s)["title"] or ""}
                 for s in self.registry.sessions()]
        self._picker("session", items)

    async def cmd_close(self, key: str) -> None:
        self.engine.forget(key)
        await self.registry.close_session(key)
        self.engine.renderer.forget(key)
        self.engine.outbox.chat_closed(key)
        self.engine.mark()

    async def cmd_cancel(self, key: str) -> None:
        await self.registry.cancel(key)

    async def cmd_unpark(self, key: str) -> None:
        if not self.registry.unpark(key):
            self.engine.notify("louise: no prompt of this chat waits for a quota reset", "info")

    async def cmd_prompt(self, key: str, text: str) -> None:
        if text.strip():
            await self._prompt(key, text)

    async def cmd_prompt_with(self, key: str, text: str,
                              context: list[dict[str, Any]] | None = None) -> None:
        """A prompt with context chips (buffer, file, selection, diagnostics)."""
        await self._prompt(key, text, context or [])

    async def _prompt(self, key: str, text: str,
                      context: Sequence[Mapping[str, Any]] = ()) -> None:
        registry = self.registry
        try:
            agent = registry.session(key).agent
            await registry.with_sign_in(
                agent, lambda: registry.prompt(key, text, context=context))
        except PromptWithdrawn:
            pass  # taken off the queue by the person, or its session closed
        except RegistryError as exc:
            self.engine.notify(f"louise: {exc}", "error")
        except Exception as exc:  # the chat already shows the error notice
            log.info("prompt ended with %s", exc)

    # ------------------------------------------------------------------ the prompt queue

    async def cmd_queue_edit(self, key: str, id: int, text: str) -> None:
        self.registry.edit_queued(key, int(id), text)

    async def cmd_queue_remove(self, key: str, id: int) -> None:
        self.registry.remove_queued(key, int(id))

    async def cmd_queue_send_now(self, key: str, id: int) -> None:
        await self.registry.send_queued_now(key, int(id))

    async def cmd_queue_steer(self, key: str, id: int) -> None:
        await self.registry.steer_queued(key, int(id))

    async def cmd_resume(self, agent: str | None = None, cwd: str | None = None,
                         all: bool = False) -> None:
        """The sessions of `agent`, else of every configured Agent (each started only if
        not running; one that cannot list shows why in its place), for this cwd or all;
        then open, fork or delete the pick."""
        registry = self.registry
        default = registry.config.default_agent
        # The default Agent's sessions first (a Lua setup{} table has no order of its own).
        names = [agent] if agent else sorted(registry.agent_names(), key=lambda n: n != default)
        where = None if all else cwd
        if len(names) > 1:
            starting = [n for n in names if not registry.runtime(n).connected]
            if starting:
                self.engine.notify(f"louise: … listing the sessions of {len(names)} agents "
                                   f"(starting {', '.join(starting)})")
        listings = await registry.list_all_sessions(where, names)
        shown = 0
        data = []
        for listing in listings:
            sessions = []
            for info in listing.sessions:
                if shown >= MAX_LISTED_SESSIONS:
                    break
                shown += 1
                sessions.append({"id": str(info.get("sessionId")),
                                 "title": str(info.get("title") or ""),
                                 "cwd": str(info.get("cwd") or ""),
                                 "updated": str(info.get("updatedAt") or "")})
            data.append({"agent": listing.agent, "sessions": sessions, "error": listing.error,
                         "can_load": listing.can_load or not listing.can_resume,
                         "can_fork": listing.can_fork, "can_delete": listing.can_delete})
        self._picker("resume", {"listings": data, "cwd": cwd})

    async def cmd_fork(self, agent: str, id: str, cwd: str | None = None) -> None:
        registry = self.registry
        session = await registry.with_sign_in(
            agent, lambda: registry.fork_session(agent, id, cwd))
        self.engine.open(session)

    async def cmd_delete_session(self, agent: str, id: str) -> None:
        key = f"{agent}:{id}"
        if self.engine.lookup(key) is not None:
            self.engine.forget(key)
            self.engine.renderer.forget(key)
            self.engine.outbox.chat_closed(key)
        await self.registry.delete_session(agent, id)
        self.engine.notify(f"louise: deleted the {agent} session {id}")

    async def cmd_reattach(self, key: str, agent: str, cwd: str | None = None,
                           name: str | None = None) -> None:
        """A chat from a previous louise process (it died): load its session again, with
        the name it had."""
        if self.engine.lookup(key) is not None:
            self.engine.renderer.attach(key)
            self.engine.mark()
            return
        prefix = f"{agent}:"
        if not key.startswith(prefix):
            raise RegistryError(f"cannot reattach {key!r}")
        session = await self.registry.load_session(agent, key[len(prefix):], cwd)
        if name and status_for(session)["title"] is None:
            self.registry.rename(session.session_id, name)
        self.engine.open(session, focus=False)

    async def cmd_load(self, agent: str, id: str, cwd: str | None = None,
                       title: str | None = None, resume: bool = False) -> None:
        registry = self.registry
        attach = registry.resume_session if resume else registry.load_session
        session = await registry.with_sign_in(agent, lambda: attach(agent, id, cwd))
        if title and status_for(session)["title"] is None:
            self.registry.rename(session.session_id, title)  # the name it was listed with
        self.engine.open(session)

    # ------------------------------------------------------------------ review, undo

    async def cmd_review(self, key: str, turn: int | None = None,
                         seq: int | None = None) -> None:
        """`:LouiseReview [turn]`, or `<CR>` on a turn's changes line (`seq`)."""
        await self.engine.review.show(key, turn, seq)

    async def cmd_review_revert(self, key: str, seq: int, path: str, hunk: int) -> None:
        await self.engine.review.revert_hunk(key, int(seq), path, int(hunk))

    async def cmd_review_revert_file(self, key: str, seq: int, path: str) -> None:
        await self.engine.review.revert_file(key, int(seq), path)

    async def cmd_review_comments(self, key: str, seq: int,
                                  comments: list[dict[str, Any]]) -> None:
        await self.engine.review.comments(key, int(seq), comments)

    async def cmd_undo_plan(self, key: str, turn: int | None = None,
                            seq: int | None = None) -> None:
        """`:LouiseUndo [turn]`: what it would do, for the person to confirm."""
        await self.engine.review.plan_undo(key, turn, seq)

    async def cmd_undo(self, key: str, seq: int, expect: list[str] | None = None) -> None:
        await self.engine.review.undo(key, int(seq), expect or [])

    async def cmd_person_saved(self, path: str, before: str | None = None,
                               after: str | None = None) -> None:
        await self.engine.review.person_saved(path, before, after)

    # ------------------------------------------------------------------ modes, options

    async def cmd_modes(self, key: str) -> None:
        session = self.registry.session(key)
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
        self._picker("mode", {"key": key, "items": items, "current": session.current_mode_id})

    async def cmd_models(self, key: str) -> None:
        """`:LouiseModel`: the model picker, whether the agent offers the model as a config
        option or the legacy way (`models`, `session/set_model`)."""
        session = self.registry.session(key)
        if session.status != "ready":
            raise RegistryError("the model can be changed only while the agent is idle")
        option = session.model_option_id
        if option is None:
            raise RegistryError(f"{session.agent} offers no model choice")
        await self.cmd_options(key, only=option)

    async def cmd_options(self, key: str, only: str | None = None) -> None:
        session = self.registry.session(key)
        if session.status != "ready":
            raise RegistryError("options can be changed only while the agent is idle")
        options = session.option_choices(only)
        if not options:
            raise RegistryError(f"{session.agent} offers no options")
        self._picker("option", {"key": key, "options": options})

    async def cmd_set_mode(self, key: str, mode: str) -> None:
        await self.registry.set_mode(key, mode)

    async def cmd_set_option(self, key: str, option: str, value: Any) -> None:
        await self.registry.set_config_option(key, option, value)

    async def cmd_rename(self, key: str, name: str) -> None:
        self.registry.rename(key, name)  # SessionRenamed redraws the header

    # ------------------------------------------------------------------ views

    async def cmd_limits(self, agent: str | None = None, refresh: bool = True,
                         from_view: bool = False) -> None:
        """The limits view of an Agent: shown at once with the state known now, then
        refreshed through a live session when there is one; it follows every change of
        that Agent's limits while it is open (`limits_closed` ends that)."""
        name = agent or self.registry.config.default_agent
        registry = self.registry
        registry.runtime(name)  # unknown agent: a clear error
        engine = self.engine
        engine.limits_view = name
        engine.show_limits(name, registry.inspect_limits(name), open_view=True)
        if not refresh:
            return
        if not engine.has_live_session(name):
            if from_view:  # `r` in the view: say why nothing happens
                engine.notify(f"louise: no live session of {name} to read its limits from; "
                              "s starts one", "warn")
            return
        state = await registry.refresh_limits(name)
        if engine.limits_view == name:
            engine.show_limits(name, state)

    async def cmd_limits_closed(self, agent: str | None = None) -> None:
        if agent is None or self.engine.limits_view == agent:
            self.engine.limits_view = None

    async def cmd_export(self, key: str, path: str | None = None) -> None:
        from louise.storage import transcript

        transcript_path = self.registry.transcript_path(key)
        if transcript_path is None:
            raise RegistryError("transcripts are off for this session")
        await self.registry.flush_transcripts()
        result = await anyio.to_thread.run_sync(transcript.load, transcript_path)
        markdown = transcript.to_markdown(result.session)
        if path:
            target = Path(path).expanduser()
            await anyio.to_thread.run_sync(
                functools.partial(target.write_text, markdown, encoding="utf-8"))
            self.engine.notify(f"louise: exported to {target}")
        else:
            self._show_text(f"louise-export://{key}", markdown.split("\n"), "markdown")

    async def cmd_log(self, key: str | None = None, agent: str | None = None) -> None:
        name = agent or (self.registry.session(key).agent if key else
                         self.registry.config.default_agent)
        self._show_text(f"louise-log://{name}", self.registry.agent_log(name), "log")

    def _show_text(self, name: str, lines: list[str], filetype: str) -> None:
        self.engine.outbox.show_text.put({"name": name, "lines": lines, "ft": filetype})
        self.engine.mark()

    # ------------------------------------------------------------------ signing in

    async def cmd_sign_in(self, agent: str | None = None, method: str | None = None) -> None:
        """`:LouiseSignIn [agent]`: the Agent's sign-in methods in a picker (a terminal
        method's command is shown and runs only on the person's say-so)."""
        name = agent or self.registry.config.default_agent
        if not self.registry.runtime(name).connected:
            self.engine.notify(f"louise: … starting {name}")
        if await self.registry.sign_in(name, method):
            self.engine.notify(f"louise: signed in to {name}")
        else:
            self.engine.notify(f"louise: not signed in to {name}", "warn")

    async def cmd_logout(self, agent: str | None = None) -> None:
        """`:LouiseLogout [agent]`: `logout` where the Agent advertises it."""
        name = agent or self.registry.config.default_agent
        await self.registry.logout(name)
        self.engine.notify(f"louise: logged out of {name}; its next request asks you to "
                           "sign in again")

    async def cmd_answer(self, id: int, value: Any = None) -> None:
        """The person's answer to a question (`lua/louise/ask.lua`)."""
        self.engine.questions.answer(int(id), value)

    # ------------------------------------------------------------------ permissions, fs

    async def cmd_permission_answer(self, id: int, option: str | None = None) -> None:
        self.engine.decider.answer(int(id), option)

    async def cmd_fs_conflict_answer(self, id: int, choice: str = "refuse") -> None:
        self.engine.answer_conflict(int(id), choice)

    async def cmd_permissions(self) -> None:
        memory = self.registry.broker.memory
        rules = await anyio.to_thread.run_sync(memory.list) if memory is not None else []
        self.engine.outbox.permissions_list.put([
            {"id": r.id, "decision": r.decision, "kind": r.kind, "target": r.target,
             "workspace": r.workspace, "agent": r.agent_key} for r in rules])
        self.engine.mark()

    async def cmd_revoke(self, id: str) -> None:
        memory = self.registry.broker.memory
        if memory is None:
            return
        removed = await anyio.to_thread.run_sync(memory.revoke, id)
        if not removed:
            self.engine.notify("louise: that rule was already gone", "warn")
        await self.cmd_permissions()

    async def cmd_ping(self) -> None:
        self.engine.outbox.pong.put(os.getpid())
        self.engine.mark()


def command_info(command: Mapping[str, Any]) -> dict[str, str]:
    """A slash command for completion: its name, description and input hint, bounded."""
    raw_input = command.get("input")
    hint = raw_input.get("hint") if isinstance(raw_input, Mapping) else None
    return {"name": str(command.get("name"))[:MAX_COMMAND_TEXT],
            "description": str(command.get("description") or "")[:MAX_COMMAND_TEXT],
            "hint": str(hint or "")[:MAX_COMMAND_TEXT]}


def status_for(session: Session) -> dict[str, Any]:
    """The chat header of a session: turn state, names, model and mode, usage."""
    model, mode = session.current_model, session.current_mode
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
        "context_stale": session.context_stale,
        "cost": cost,
        "error": session.error,
        "stop_reason": session.last_stop_reason,
        "commands": [str(c.get("name")) for c in session.commands][:MAX_COMMANDS],
        "command_info": [command_info(c) for c in session.commands[:MAX_COMMANDS]],
        "turn": session.turn,
        "cwd": session.cwd,
        "image": session.prompt_capabilities.get("image") is True,
        "embedded": session.prompt_capabilities.get("embeddedContext") is True,
        "turns_done": session.turn if session.status in ("ready", "closing", "error", "closed")
        else session.turn - 1,
    }
