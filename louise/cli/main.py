"""The `louise` command line: one verb per module under `commands/`, imported lazily.

Each verb module exposes `add_arguments(parser)` and `run(args) -> int`. Only the module
of the verb being run is imported (and `logging` only when it is set up): `louise inspect`
is meant to answer about as fast as Python starts (issue 14, item 8).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing's, without importing typing (louise inspect's start)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from typing import Any

# argparse (with re, gettext, locale and shutil behind it) is imported when a parser is
# built: `louise inspect`'s usual command lines are read without it (`_inspect_words`).

# verb -> (module under louise.cli.commands, one-line help)
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
    "review": ("review", "show what a turn changed in this workspace (starts nothing)"),
    "undo": ("undo", "restore the workspace's files as they were before a turn"),
    "proxy": ("proxy", "run an ACP agent behind a proxy that adds the account-limits extension"),
    "serve": ("serve", "run the session host that keeps agents and sessions for every front end"),
    "attach": ("attach", "an ACP agent command piped to the session host (--via: a remote one)"),
}

# Verbs that change nothing on disk (not even the modes of the state directory).
READ_ONLY_VERBS = frozenset({"inspect", "agents", "export", "proxy", "review"})
# Verbs that set up their own logging: the proxy (stdout is the protocol) and inspect (only
# on the one path of it that logs, the full config load: it starts faster without logging).
OWN_LOGGING_VERBS = frozenset({"proxy", "inspect", "attach"})
# Short read-only verbs that run without the cyclic garbage collector when they are the
# program (see `main`).
NO_GC_VERBS = frozenset({"inspect"})
# Verbs that run an event loop: as the program, they import asyncio without ssl (louise
# never speaks TLS) and pydantic without what it loads for nothing (storage/first_use.py).
# `louise serve` does it in its foreground path (`serve --stdio` and the proxy run no
# event loop).
EVENT_LOOP_VERBS = frozenset({"chat", "demo", "sessions", "login", "logout", "limits"})
# The code cache of the Neovim engine's start (louise/nvim/__main__.py), which makes the
# same limits dataclasses `louise inspect` makes.
ENGINE_CODE_CACHE = "engine"


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; with `only` (a verb), a parser of that verb alone: it parses that
    verb's command lines and says the same (usage lines show `VERB`, not the list), without
    importing the other verbs' modules or building their parsers."""
    import argparse
    import importlib

    from louise import __version__

    parser = argparse.ArgumentParser(prog="louise", description="louise: ACP client with quotas")
    parser.add_argument("--version", action="version", version=f"louise {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    for verb, (module_name, help_text) in VERBS.items():
        if only is not None and verb != only:
            continue
        module = importlib.import_module(f"louise.cli.commands.{module_name}")
        verb_parser = sub.add_parser(verb, help=help_text, description=help_text)
        module.add_arguments(verb_parser)
        verb_parser.set_defaults(_module=module)
    return parser


def _verb_in(argv: Sequence[str]) -> str | None:
    """The verb `argv` starts with, else None (`-h` before a verb lists every verb)."""
    return argv[0] if argv and argv[0] in VERBS else None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the verb `argv` (default: the program's arguments) names; its exit status."""
    words = list(argv) if argv is not None else sys.argv[1:]
    verb = _verb_in(words)
    if argv is None and verb in NO_GC_VERBS:
        # The program is a short read-only verb: it makes no cycles worth collecting, and the
        # collector's passes while it imports and at interpreter exit (over every module's
        # objects) were a quarter of `louise inspect`'s time. Frozen objects are left out
        # of the exit collections; the process ends right after.
        import gc

        gc.disable()
        # Its dataclasses' methods come compiled from the engine's last start (the same
        # classes: storage/code_cache.py), read only: a read-only verb writes nothing.
        from louise.storage import code_cache

        code_cache.import_dataclasses_without_inspect()
        code_cache.install(ENGINE_CODE_CACHE)
        try:
            return _run(words, verb)
        finally:
            code_cache.finish(ENGINE_CODE_CACHE, keep_new=False)
            gc.freeze()
    if argv is None and verb in EVENT_LOOP_VERBS:
        from louise.storage import first_use

        first_use.import_asyncio_without_ssl()
        first_use.pydantic_without_extras_on_first_use()  # when they validate
    if argv is not None or verb is None or verb in READ_ONLY_VERBS:
        return _run(words, verb)
    # A verb that writes its state (`louise chat`, …) as the program: its dataclasses'
    # methods come compiled from the last run (storage/code_cache.py), and what it compiled
    # anew is kept for the next.
    from louise.storage import code_cache

    code_cache.install(f"cli-{verb}")
    try:
        return _run(words, verb)
    finally:
        code_cache.finish(f"cli-{verb}")


# `louise inspect`'s flags, each a switch (see commands/inspect.py's `add_arguments`).
INSPECT_SWITCHES = frozenset({"--json", "--detail", "--refresh"})


def _inspect_words(words: list[str]) -> Any:
    """`louise inspect`'s arguments as its parser reads them, without building it, for
    the plain command lines: its switches, spelled out, and Agent names in one run. Any
    other line (`--help`, `--`, an abbreviation, a name starting with `-`, names on both
    sides of a switch, …) gives None: the parser then reads it and says what it says."""
    agents: list[str] = []
    switches: set[str] = set()
    run_ended = False  # a switch came after the run of Agent names
    for word in words[1:]:
        if word in INSPECT_SWITCHES:
            switches.add(word)
            run_ended = bool(agents)
        elif word.startswith("-") or run_ended:
            return None
        else:
            agents.append(word)
    from types import SimpleNamespace

    from louise.cli.commands import inspect

    return SimpleNamespace(verb="inspect", agents=agents, json="--json" in switches,
                           detail="--detail" in switches, refresh="--refresh" in switches,
                           _module=inspect)


def _run(words: list[str], verb: str | None) -> int:
    args: Any = _inspect_words(words) if verb == "inspect" else None
    if args is None:
        parser = build_parser(verb)
        args = parser.parse_args(words)
        if args.verb is None:
            parser.print_help()
            return 2
    from louise.cli.commands._common import CliError, err, report, setup_logging, whole_writes

    sys.stdout, sys.stderr = whole_writes(sys.stdout), whole_writes(sys.stderr)
    if args.verb not in OWN_LOGGING_VERBS:
        setup_logging()
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
    import contextlib

    from louise.storage import paths

    with contextlib.suppress(OSError):
        paths.private_state_dir()

