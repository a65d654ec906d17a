"""The commands Lua sends (`rpcnotify(chan, 'louise', name, args)`), run on the engine loop.

Each `cmd_<name>` takes the notification's arguments as keywords and hands the work to the
registry or to the part of the engine that owns it (chats, limits, review, questions);
what it shows goes through the outbox; errors become one notification, never a
traceback.

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
from typing import Any

import anyio

from louise.nvim.chat_status import status_for
from louise.nvim.chats import Chats
from louise.nvim.fs_conflicts import FsConflicts
from louise.nvim.limits_ui import LimitsUi
from louise.nvim.permissions import NvimDecider
from louise.nvim.questions import Questions
from louise.nvim.resume_progress import ListingProgress
from louise.nvim.review import ReviewUi
from louise.nvim.screen import Screen
from louise.registry import SessionRegistry
from louise.registry.agent_sessions import AgentListing
from louise.registry.records import PromptWithdrawn, RegistryError, TurnFailed
from louise.storage.transcript_preview import preview_lines

log = logging.getLogger("louise.nvim")

MAX_LISTED_SESSIONS = 500
MAX_PREVIEWED_SESSIONS = 100  # of an Agent's, in a :LouiseResume with a preview


class Commands:
    def __init__(self, registry: SessionRegistry, screen: Screen, chats: Chats, *,
                 limits: LimitsUi, review: ReviewUi, decider: NvimDecider,
                 questions: Questions, conflicts: FsConflicts, default_named: bool) -> None:
        self.registry = registry
        self._screen = screen
        self._chats = chats
        self._limits = limits
        self._review = review
        self._decider = decider
        self._questions = questions
        self._conflicts = conflicts
        # The person named `default_agent` (setup{} or config.toml): :LouiseChat uses it
        # without asking.
        self._default_named = default_named

    async def run(self, command: str, args: dict[str, Any]) -> None:
        handler = getattr(self, f"cmd_{command}", None)
        if handler is None:
            self._screen.notify(f"louise: unknown command {command!r}", "error")
            return
        try:
            await handler(**args)
        except OSError as exc:  # "[Errno 2] …" is not for people
            where = f"{exc.filename}: " if exc.filename else ""
            self._screen.notify(f"louise: {where}{exc.strerror or exc}", "error")
        except RegistryError as exc:
            self._screen.notify(f"louise: {exc}", "error")
        except Exception as exc:
            log.exception("command %s failed", command)
            self._screen.notify(f"louise: {command} failed: {exc}", "error")

    def _picker(self, kind: str, data: Any) -> None:
        self._screen.outbox.picker.put({"kind": kind, "data": data})
        self._screen.mark()

    # ------------------------------------------------------------------ chats

    async def cmd_chat(self, agent: str | None = None, cwd: str | None = None,
                       pending: int | None = None) -> None:
        """Open (or focus) the chat of an agent: its last session, else a new one. Without
        an agent: the last chat, else a picker when several Agents are configured.
        `pending`: the placeholder Lua shows meanwhile (a new session takes it)."""
        try:
            await self._chat(agent, cwd, pending)
        finally:
            self._chats.settle_placeholder(pending)

    async def _chat(self, agent: str | None, cwd: str | None, pending: int | None) -> None:
        chats = self._chats
        config = self.registry.config
        if agent is None:
            last = chats.last()
            if last is not None:
                chats.open(last)
                return
            shown = config.shown_agents()
            if len([n for n in shown if n != "demo"]) > 1 and not self._default_named:
                # Sorted (a Lua table has no order), the demo agent (when shown) last.
                names = sorted(shown, key=lambda n: (n == "demo", n))
                self._picker("agent", {"agents": names, "cwd": cwd,
                                       "default": config.default_agent})
                return
        name = agent or config.default_agent
        session = chats.current(name)
        if session is not None:
            chats.open(session)
            return
        await self._new(name, cwd, pending)

    async def cmd_new(self, agent: str | None = None, cwd: str | None = None,
                      pending: int | None = None) -> None:
        try:
            await self._new(agent, cwd, pending)
        finally:
            self._chats.settle_placeholder(pending)

    async def _new(self, agent: str | None, cwd: str | None, pending: int | None) -> None:
        name = agent or self.registry.config.default_agent
        if pending is None and not self.registry.runtime(name).connected:
            # Starting an agent can take seconds (initialize): say so at once (a
            # placeholder chat on screen says it otherwise).
            self._screen.notify(f"louise: … starting {name}")
        registry = self.registry
        session = await registry.with_sign_in(name, lambda: registry.new_session(name, cwd))
        self._chats.open(session, pending=pending)

    async def cmd_attach(self, key: str) -> None:
        self._chats.show(key)

    async def cmd_detach(self, key: str) -> None:
        self._chats.hide(key)

    async def cmd_focus(self, key: str) -> None:
        session = self._chats.lookup(key)
        if session is not None:
            self._chats.open(session)

    async def cmd_switch(self) -> None:
        items = [{"key": s.session_id, "agent": s.agent, "status": s.status, "cwd": s.cwd,
                  "title": status_for(s)["title"] or "",
                  "updated": self.registry.last_active(s.session_id)}
                 for s in self.registry.sessions()]
        self._picker("session", items)

    async def cmd_close(self, key: str) -> None:
        self._chats.forget(key)
        await self.registry.close_session(key)
        self._chats.gone(key)

    async def cmd_cancel(self, key: str) -> None:
        await self.registry.cancel(key)

    async def cmd_unpark(self, key: str) -> None:
        if not self.registry.unpark(key):
            self._screen.notify("louise: no prompt of this chat waits for a quota reset", "info")

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
        except TurnFailed as exc:
            # The chat says it already; said again only for a chat no window shows.
            if not self._chats.shown(key):
                self._screen.notify(f"louise: {exc}", "error")
        except RegistryError as exc:
            self._screen.notify(f"louise: {exc}", "error")
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
                         all: bool = False, preview: bool = False) -> None:
        """The sessions of `agent`, else of every configured Agent (each started only if
        not running; one that cannot list shows why in its place), for this cwd or all;
        then open, fork or delete the pick. `preview`: the picker shows one (telescope,
        …): each session's last exchange from louise's transcript, where it has one."""
        registry = self.registry
        default = registry.config.default_agent
        # The default Agent's sessions first (a Lua setup{} table has no order of its own).
        # The demo agent only when named, or when no real agent is configured.
        names = [agent] if agent else sorted(registry.config.shown_agents(),
                                             key=lambda n: n != default)
        where = None if all else cwd
        starting = [n for n in names if not registry.runtime(n).connected]
        if len(names) > 1 and starting:
            # Which agents are still listing, said again as each ends and each second.
            progress = ListingProgress(names, starting)
            progress.say(self._screen)

            def listed(listing: AgentListing) -> None:
                progress.listed(listing)
                if not progress.over:
                    progress.say(self._screen)

            async with anyio.create_task_group() as tg:
                tg.start_soon(progress.tick, self._screen)
                listings = await registry.list_all_sessions(where, names, listed)
                tg.cancel_scope.cancel()
        else:
            if starting:  # one agent, not running yet: starting it can take seconds
                self._screen.notify(f"louise: … starting {starting[0]} to list its sessions")
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
            if preview and self.registry.transcripts_dir is not None:
                await anyio.to_thread.run_sync(functools.partial(
                    _add_previews, self.registry.transcripts_dir, listing.agent, sessions))
            data.append({"agent": listing.agent, "sessions": sessions, "error": listing.error,
                         "can_load": listing.can_load or not listing.can_resume,
                         "can_fork": listing.can_fork, "can_delete": listing.can_delete})
        self._picker("resume", {"listings": data, "cwd": cwd})

    async def cmd_fork(self, agent: str, id: str, cwd: str | None = None) -> None:
        registry = self.registry
        session = await registry.with_sign_in(
            agent, lambda: registry.fork_session(agent, id, cwd))
        self._chats.open(session)

    async def cmd_delete_session(self, agent: str, id: str) -> None:
        key = f"{agent}:{id}"
        if self._chats.lookup(key) is not None:
            self._chats.forget(key)
            self._chats.gone(key)
        await self.registry.delete_session(agent, id)
        self._screen.notify(f"louise: deleted the {agent} session {id}")

    async def cmd_reattach(self, key: str, agent: str, cwd: str | None = None,
                           name: str | None = None) -> None:
        """A chat from a previous louise process (it died): its session attached again by
        the path an agent's crash takes too (load where the agent can, else resume), with
        the name it had."""
        if self._chats.lookup(key) is not None:
            self._chats.show(key)
            return
        if not key.startswith(f"{agent}:"):
            raise RegistryError(f"cannot reattach {key!r}")
        registry = self.registry
        session = await registry.with_sign_in(agent, lambda: registry.reattach(key, cwd))
        if name and status_for(session)["title"] is None:
            self.registry.rename(session.session_id, name)
        self._chats.open(session, focus=False)

    async def cmd_load(self, agent: str, id: str, cwd: str | None = None,
                       title: str | None = None, resume: bool = False) -> None:
        registry = self.registry
        attach = registry.resume_session if resume else registry.load_session
        session = await registry.with_sign_in(agent, lambda: attach(agent, id, cwd))
        if title and status_for(session)["title"] is None:
            self.registry.rename(session.session_id, title)  # the name it was listed with
        self._chats.open(session)

    # ------------------------------------------------------------------ review, undo

    async def cmd_review(self, key: str, turn: int | None = None,
                         seq: int | None = None) -> None:
        """`:LouiseReview [turn]`, or `<CR>` on a turn's changes line (`seq`)."""
        await self._review.show(key, turn, seq)

    async def cmd_review_revert(self, key: str, seq: int, path: str, hunk: int) -> None:
        await self._review.revert_hunk(key, int(seq), path, int(hunk))

    async def cmd_review_revert_file(self, key: str, seq: int, path: str) -> None:
        await self._review.revert_file(key, int(seq), path)

    async def cmd_review_comments(self, key: str, seq: int,
                                  comments: list[dict[str, Any]]) -> None:
        """Review comments go to the agent as the next prompt (queued while it works)."""
        await self.cmd_prompt(key, await self._review.comments_prompt(key, int(seq), comments))

    async def cmd_undo_plan(self, key: str, turn: int | None = None,
                            seq: int | None = None) -> None:
        """`:LouiseUndo [turn]`: what it would do, for the person to confirm."""
        await self._review.plan_undo(key, turn, seq)

    async def cmd_undo(self, key: str, seq: int, expect: list[str] | None = None) -> None:
        await self._review.undo(key, int(seq), expect or [])

    async def cmd_person_saved(self, path: str, before: str | None = None,
                               after: str | None = None) -> None:
        await self._review.person_saved(path, before, after)

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
        limits = self._limits
        limits.view = name
        limits.show(name, registry.inspect_limits(name), open_view=True)
        if not refresh:
            return
        if not limits.has_live_session(name):
            if from_view:  # `r` in the view: say why nothing happens
                self._screen.notify(f"louise: no live session of {name} to read its limits "
                                    "from; s starts one", "warn")
            return
        state = await registry.refresh_limits(name)
        if limits.view == name:
            limits.show(name, state)

    async def cmd_limits_closed(self, agent: str | None = None) -> None:
        if agent is None or self._limits.view == agent:
            self._limits.view = None

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
            self._screen.notify(f"louise: exported to {target}")
        else:
            self._show_text(f"louise-export://{key}", markdown.split("\n"), "markdown")

    async def cmd_log(self, key: str | None = None, agent: str | None = None) -> None:
        name = agent or (self.registry.session(key).agent if key else
                         self.registry.config.default_agent)
        self._show_text(f"louise-log://{name}", self.registry.agent_log(name), "log")

    def _show_text(self, name: str, lines: list[str], filetype: str) -> None:
        self._screen.outbox.show_text.put({"name": name, "lines": lines, "ft": filetype})
        self._screen.mark()

    # ------------------------------------------------------------------ signing in

    async def cmd_sign_in(self, agent: str | None = None, method: str | None = None) -> None:
        """`:LouiseSignIn [agent]`: the Agent's sign-in methods in a picker (a terminal
        method's command is shown and runs only on the person's say-so)."""
        name = agent or self.registry.config.default_agent
        if not self.registry.runtime(name).connected:
            self._screen.notify(f"louise: … starting {name}")
        if await self.registry.sign_in(name, method):
            self._screen.notify(f"louise: signed in to {name}")
        else:
            self._screen.notify(f"louise: not signed in to {name}", "warn")

    async def cmd_logout(self, agent: str | None = None) -> None:
        """`:LouiseLogout [agent]`: `logout` where the Agent advertises it."""
        name = agent or self.registry.config.default_agent
        await self.registry.logout(name)
        self._screen.notify(f"louise: logged out of {name}; its next request asks you to "
                           "sign in again")

    async def cmd_answer(self, id: int, value: Any = None) -> None:
        """The person's answer to a question (`lua/louise/ask.lua`)."""
        self._questions.answer(int(id), value)

    # ------------------------------------------------------------------ permissions, fs

    async def cmd_permission_answer(self, id: int, option: str | None = None) -> None:
        self._decider.answer(int(id), option)

    async def cmd_fs_conflict_answer(self, id: int, choice: str = "refuse") -> None:
        self._conflicts.answer(int(id), choice)

    async def cmd_permissions(self) -> None:
        memory = self.registry.broker.memory
        rules = await anyio.to_thread.run_sync(memory.list) if memory is not None else []
        self._screen.outbox.permissions_list.put([
            {"id": r.id, "decision": r.decision, "kind": r.kind, "target": r.target,
             "workspace": r.workspace, "agent": r.agent_key} for r in rules])
        self._screen.mark()

    async def cmd_revoke(self, id: str) -> None:
        memory = self.registry.broker.memory
        if memory is None:
            return
        removed = await anyio.to_thread.run_sync(memory.revoke, id)
        if not removed:
            self._screen.notify("louise: that rule was already gone", "warn")
        await self.cmd_permissions()

    async def cmd_ping(self) -> None:
        self._screen.outbox.pong.put(os.getpid())
        self._screen.mark()


def _add_previews(directory: Path, agent: str, sessions: list[dict[str, Any]]) -> None:
    """Each listed session's last exchange, as louise recorded it (blocking)."""
    for session in sessions[:MAX_PREVIEWED_SESSIONS]:
        session["preview"] = preview_lines(directory, agent, session["id"])
