"""Agent terminals in Neovim: louise's own (`terminal/*`) and those an agent runs itself
and reports in its tool calls, mirrored into Neovim terminal buffers, filtered, in bounded
slices per frame (at most the Agent's terminal output limit waits for the screen), a
bounded number per chat (terminals.py); their exits and releases on the tool lines."""

from __future__ import annotations

from louise.capabilities.terminal import MAX_OUTPUT_BYTE_LIMIT
from louise.capabilities.terminal_events import (
    ExitStatus,
    TerminalCreated,
    TerminalEvent,
    TerminalExited,
    TerminalOutput,
)
from louise.nvim.render import ChatRenderer
from louise.nvim.screen import Screen
from louise.nvim.terminals import DEFAULT_TERMINAL_BACKLOG_BYTES
from louise.registry import SessionRegistry
from louise.registry.records import RegistryError
from louise.session import TerminalReported


class AgentTerminals:
    def __init__(self, screen: Screen, renderer: ChatRenderer,
                 registry: SessionRegistry) -> None:
        self._screen = screen
        self._renderer = renderer
        self._registry = registry
        feeds = screen.outbox.terminals
        feeds.limit_for = self._backlog
        feeds.on_release = self._released

    def session_added(self, key: str) -> None:
        """A new session: louise's terminals for it are mirrored from now on."""
        host = self._registry.terminal_host(key)
        if host is not None:
            host.subscribe(lambda event: self.on_terminal(key, event), replay=False)

    def on_terminal(self, key: str, event: TerminalEvent) -> None:
        feeds, terminal_id = self._screen.outbox.terminals, event.terminal_id
        if isinstance(event, TerminalCreated):
            feeds.created(key, terminal_id, " ".join([event.command, *event.args]))
        elif isinstance(event, TerminalOutput):
            feeds.output(key, terminal_id, event.text)
        elif isinstance(event, TerminalExited):
            code, signal = event.status.exit_code, event.status.signal
            text = f"exit {code}" if code is not None else f"signal {signal}"
            self._renderer.terminal_exited(key, terminal_id, text)
            feeds.exited(key, terminal_id, event.status.to_wire())
        self._screen.mark()

    def on_agent_terminal(self, event: TerminalReported) -> None:
        """A terminal the agent runs itself shows as louise's own do (its output in a
        terminal buffer, its exit on the tool line)."""
        key, terminal_id = event.session_id, event.terminal_id
        if event.command is not None:
            self.on_terminal(key, TerminalCreated(terminal_id, event.command, (), ""))
        if event.data:
            self.on_terminal(key, TerminalOutput(
                terminal_id, event.data.encode("utf-8", "replace"), event.data))
        if event.exited and (event.exit_code is not None or event.signal is not None):
            self.on_terminal(key, TerminalExited(terminal_id,
                                                 ExitStatus(event.exit_code, event.signal)))

    def _released(self, key: str, terminal_id: str) -> None:
        """An old terminal left Neovim (the chat keeps only its newest): its tool line
        says so."""
        self._renderer.terminal_released(key, terminal_id)
        self._screen.mark()

    def _backlog(self, key: str) -> int:
        """How much of a terminal's output may wait for the screen: its Agent's terminal
        output limit (what the agent itself may read back), within the host's maximum."""
        try:
            agent = self._registry.session(key).agent
        except RegistryError:
            return DEFAULT_TERMINAL_BACKLOG_BYTES
        limit = self._registry.config.terminal_for(agent).output_byte_limit
        return min(limit, MAX_OUTPUT_BYTE_LIMIT)
