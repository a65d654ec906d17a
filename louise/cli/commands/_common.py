"""Shared pieces of the CLI verbs: printing through the terminal sanitizer, failures as one
`louise: …` line with an exit status, and the config/agent preamble of the verbs that
start an agent."""

from __future__ import annotations

import io
import os
import sys

from louise.cli.terminal_text import safe, safe_json

TYPE_CHECKING = False  # typing's, without importing typing (louise inspect's start)
if TYPE_CHECKING:
    import logging
    from datetime import tzinfo
    from typing import Any, TextIO

    from louise.config.model import Config

EXIT_ERROR = 1
EXIT_USAGE = 2


class CliError(Exception):
    """A failure the CLI reports as `louise: MESSAGE` (then `detail`, e.g. an agent's
    stderr tail) and exits with `status`; raised by verbs, printed by `louise.cli.main`."""

    def __init__(self, message: str, status: int = EXIT_ERROR, detail: str = "",
                 *, verb: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.detail = detail
        self.verb = verb  # `louise VERB: …` where a verb has always said its name


def whole_writes(stream: TextIO) -> TextIO:
    """`stream` itself, or, when its text layer sits right on the file (PYTHONUNBUFFERED,
    `-u`), the same file through a buffered layer: a write the system cuts short (a signal
    during a large write to a full pipe) then has its rest written instead of dropped,
    which the bare text layer does silently (a reply lost 896 KiB so). Flushed at each
    line, and by whoever streams a partial line."""
    raw = getattr(stream, "buffer", None)
    if not isinstance(raw, io.RawIOBase):
        return stream
    # The original object stays referenced (sys.__stdout__ …): it never closes the fd.
    return io.TextIOWrapper(io.BufferedWriter(raw), encoding=stream.encoding,
                            errors=stream.errors, line_buffering=True, write_through=True)


def out(text: str = "") -> None:
    """Print a line to stdout, sanitized (see `louise.cli.terminal_text`)."""
    print(safe(text, multiline=True))


def err(text: str) -> None:
    """Print a line to stderr, sanitized (nowhere once its reader left: `2>&1 | head`)."""
    from louise.cli.output import put

    put(sys.stderr, safe(text, multiline=True) + "\n")


def report(failure: CliError) -> int:
    err(f"louise{' ' + failure.verb if failure.verb else ''}: {failure.message}")
    if failure.detail.strip():
        err(failure.detail.rstrip())
    return failure.status


def print_json(value: Any) -> None:
    """JSON output: the same document, with terminal-interpreted characters escaped."""
    print(safe_json(value))


def setup_logging() -> None:
    """Warnings (more with LOUISE_LOG=info or debug) to stderr as `louise: warning: …`
    lines, through the terminal sanitizer: their messages often quote what an agent sent.
    A record with an exception is still one line (the exception's type and message); its
    traceback only with LOUISE_LOG=debug."""
    import logging

    setting = os.environ.get("LOUISE_LOG", "WARNING").upper()
    level = getattr(logging, setting, logging.WARNING)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_terminal_formatter("louise: %(level)s: %(message)s",
                                             tracebacks=setting == "DEBUG"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level if isinstance(level, int) else logging.WARNING)


def _terminal_formatter(fmt: str, *, tracebacks: bool = False) -> logging.Formatter:
    import logging

    class TerminalFormatter(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            record.level = record.levelname.lower()
            if tracebacks or not (record.exc_info or record.stack_info):
                return safe(super().format(record), multiline=True)
            # No traceback reaches a person: the exception as the end of the same line.
            exc = record.exc_info[1] if record.exc_info else None
            line = logging.LogRecord(record.name, record.levelno, record.pathname,
                                     record.lineno, record.getMessage(), None, None,
                                     record.funcName)
            line.level = record.levelname.lower()
            text = super().format(line)
            if exc is not None:
                reason = " ".join(str(exc).split())[:200]
                text += f" ({type(exc).__name__}{': ' + reason if reason else ''})"
            return safe(text, multiline=True)

    return TerminalFormatter(fmt)


def local_zone() -> tzinfo | None:
    """This machine's time zone: limits times show in it too, beside UTC."""
    from datetime import datetime

    return datetime.now().astimezone().tzinfo


def load_config() -> Config:
    """The config (through the validated-configuration cache: an unchanged config.toml
    is not validated again); every problem at once as a usage error (exit 2) when it is
    invalid."""
    from louise.config.cached import load_config_cached as load
    from louise.config.louiselm import warnings_message
    from louise.config.problems import ConfigError
    from louise.storage import paths

    try:
        config = load()
    except ConfigError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    if config.warnings:  # LouiseLM settings louise does not use
        err(warnings_message(config.warnings, str(paths.config_file())))
    return config


def config_and_agent(name: str | None) -> tuple[Config, str]:
    """The config and a configured Agent's name (`default_agent` when `name` is None);
    an unknown name is a usage error (exit 2) that lists the configured ones."""
    config = load_config()
    agent = name or config.default_agent
    if agent not in config.agents:
        import difflib

        known = ", ".join(config.agents)
        close = difflib.get_close_matches(agent, list(config.agents), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise CliError(f"unknown agent {safe(agent)!r}; configured: {known}{hint}", EXIT_USAGE)
    return config, agent


def existing_directory(path: str | None, option: str) -> None:
    """A directory option names an existing directory, or it is a usage error (exit 2)."""
    import os

    if path is not None and not os.path.isdir(os.path.expanduser(path)):
        raise CliError(f"{option} {safe(path)}: no such directory", EXIT_USAGE)
