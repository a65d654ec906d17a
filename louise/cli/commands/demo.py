"""`louise demo` — a scripted chat with the bundled demo agent, printed to the terminal.

It shows what louise does without Neovim: a streamed reply with a plan and a tool call, an
edit that asks permission (answered by the script, shown as a person would see it), a
command run in a client terminal, and the account limits the agent reports, which
`louise inspect` shows afterwards from the cache.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from louise.config.model import Config
    from louise.permissions.broker import PermissionRequest, QueueView
    from louise.registry import SessionRegistry

SCRIPT = (
    "Hello! What can you do?",
    "/scenario edit",
    "/scenario execute",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cwd", help="workspace for the demo (default: a fresh temp dir)")
    parser.add_argument("--reject", action="store_true",
                        help="answer the demo's permission requests with reject")


class ScriptedDecider:
    """Shows each permission request the way `louise chat` would ask, then answers it."""

    def __init__(self, reject: bool) -> None:
        self.reject = reject

    async def decide(self, request: PermissionRequest, queue: QueueView) -> str | None:
        import anyio

        from louise.cli.commands._common import err
        from louise.cli.console import describe_request, review_changes

        kinds = ("reject_once",) if self.reject else ("allow_once",)
        choice = request.option_of_kind(*kinds)
        changes = await anyio.to_thread.run_sync(review_changes, request)
        err(describe_request(request, queue, changes))
        err(f"choose: (the script picks {choice})")
        return choice


def run(args: argparse.Namespace) -> int:
    import anyio

    from louise.cli.commands._common import existing_directory, load_config

    config = load_config()
    existing_directory(args.cwd, "--cwd")
    with tempfile.TemporaryDirectory(prefix="louise-demo-") as scratch:
        cwd = Path(args.cwd or scratch).resolve()
        if not args.cwd:
            (cwd / "README.md").write_text("# Demo workspace\n\nA scratch project for louise.\n")
        return anyio.run(_demo, config, str(cwd), args.reject)


async def _demo(config: Config, cwd: str, reject: bool) -> int:
    from louise.acp.errors import AcpError
    from louise.cli.commands._common import CliError
    from louise.cli.console import ConsolePrinter
    from louise.registry import SessionRegistry

    failure: CliError | None = None
    async with SessionRegistry(config, decider=ScriptedDecider(reject)) as registry:
        registry.subscribe(ConsolePrinter(registry))
        try:
            await _script(registry, cwd)
        except (AcpError, OSError) as exc:
            # Kept for after the registry: raised inside it, it would come out wrapped in
            # an exception group.
            message, _, detail = str(exc).partition("\n")
            failure = CliError(message, detail=detail)
    if failure is not None:
        raise failure
    return 0


async def _script(registry: SessionRegistry, cwd: str) -> None:
    from louise import limits as lim
    from louise.cli.commands._common import err, local_zone, out
    from louise.config.agents import DEMO_AGENT_NAME

    session = await registry.new_session(DEMO_AGENT_NAME, cwd)
    err(f"── louise demo · agent {DEMO_AGENT_NAME} · session {session.session_id} "
        f"· workspace {cwd}")
    for prompt in SCRIPT:
        out(f"\n> {prompt}")
        sys.stdout.flush()
        reason = await registry.prompt(session.session_id, prompt)
        err(f"── turn ended: {reason}")
    state = await registry.refresh_limits(DEMO_AGENT_NAME)
    now = registry.clock()
    label = lim.render_label(state, now)
    err("\n── account limits (what the statusline shows):")
    err(f"   {label.text if label else '(none)'}")
    for line in lim.render_detail(state, now, local=local_zone()):
        err(f"   {line}")
    err("\nNext: `louise inspect` shows these limits from the cache, starting nothing.")
