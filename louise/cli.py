"""The `louise` command line: one verb per module under `louise.commands`, imported lazily.

Each verb module exposes `add_arguments(parser)` and `run(args) -> int`.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import sys
from collections.abc import Sequence

# verb -> (module under louise.commands, one-line help)
VERBS: dict[str, tuple[str, str]] = {
    "demo": ("demo", "run a scripted chat against the bundled demo agent and print it"),
    "inspect": ("inspect", "show each Agent's cached account limits (starts nothing)"),
    "chat": ("chat", "one prompt turn against an Agent, streamed to the terminal"),
    "agents": ("agents", "list configured Agents and whether each command is found"),
    "sessions": ("sessions", "list an Agent's sessions (session/list)"),
    "login": ("login", "sign in to an Agent (its methods, chosen on the terminal)"),
    "logout": ("logout", "log out of an Agent"),
    "limits": ("limits", "read an Agent's account limits now (limits refresh AGENT)"),
    "permissions": ("permissions", "list remembered permission choices, or revoke one"),
    "export": ("export", "write a session's transcript as Markdown"),
    "proxy": ("proxy", "run an ACP agent behind a proxy that adds the account-limits extension"),
}

# Verbs that change nothing on disk (not even the modes of the state directory).
READ_ONLY_VERBS = frozenset({"inspect", "agents", "export", "proxy"})
# Verbs that set up their own logging (the proxy: stdout is the protocol).
OWN_LOGGING_VERBS = frozenset({"proxy"})


def build_parser() -> argparse.ArgumentParser:
    from louise import __version__

    parser = argparse.ArgumentParser(prog="louise", description="louise: ACP client with quotas")
    parser.add_argument("--version", action="version", version=f"louise {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    for verb, (module_name, help_text) in VERBS.items():
        module = importlib.import_module(f"louise.commands.{module_name}")
        verb_parser = sub.add_parser(verb, help=help_text, description=help_text)
        module.add_arguments(verb_parser)
        verb_parser.set_defaults(_module=module)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(list(argv) if argv is not None else sys.argv[1:])
    if args.verb is None:
        parser.print_help()
        return 2
    from louise.commands._common import CliError, err, report

    if args.verb not in OWN_LOGGING_VERBS:
        _setup_logging()
    if args.verb not in READ_ONLY_VERBS:
        _private_state()
    try:
        code: int = args._module.run(args)
    except CliError as failure:
        return report(failure)
    except BrokenPipeError:
        # `louise … | head`: the reader left; say nothing more.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        # No traceback reaches a person; LOUISE_LOG=debug shows it.
        if os.environ.get("LOUISE_LOG", "").lower() == "debug":
            import traceback

            traceback.print_exc()
        err(f"louise: unexpected error: {_describe(exc)}")
        return 1
    return code


class _TerminalFormatter(logging.Formatter):
    """Log records as `louise: warning: …` lines, through the terminal sanitizer: their
    messages often quote what an agent sent."""

    def format(self, record: logging.LogRecord) -> str:
        from louise.terminal_text import safe

        record.level = record.levelname.lower()
        return safe(super().format(record), multiline=True)


def _setup_logging() -> None:
    """Warnings (more with LOUISE_LOG=info or debug) to stderr, sanitized."""
    level = getattr(logging, os.environ.get("LOUISE_LOG", "WARNING").upper(), logging.WARNING)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_TerminalFormatter("louise: %(level)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level if isinstance(level, int) else logging.WARNING)


def _describe(exc: BaseException) -> str:
    """One line for an unexpected exception: the first leaf of an exception group."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _private_state() -> None:
    """On start: louise's state directory and what an older louise left there become
    private (0700/0600); nothing to say when it cannot be (the verb reports its own
    problems with the state it uses)."""
    from louise import paths

    with contextlib.suppress(OSError):
        paths.private_state_dir()


if __name__ == "__main__":
    sys.exit(main())
