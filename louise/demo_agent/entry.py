"""The demo agent's entry point (`louise-demo-agent`, `python -m louise.demo_agent`): its
arguments, its settings from the environment, logging, and serving stdin and stdout."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Sequence

from . import failures
from .agent import DemoAgent
from .auth import login
from .settings import ENV_HELP, KnobError, Settings, version
from .storage import default_directory
from .wire import StdioPeer

log = logging.getLogger("louise.demo_agent")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="louise-demo-agent",
        description="A deterministic scripted ACP agent speaking NDJSON JSON-RPC on stdin/stdout.",
        epilog=ENV_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    parser.add_argument("--login", action="store_true",
                        help="sign in interactively (the demo-login terminal method)")
    options = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        settings = Settings.from_env(os.environ)
        if settings.fail is not None and settings.fail not in failures.FAIL_MODES:
            raise KnobError(f"LOUISE_DEMO_FAIL: unknown mode {settings.fail!r}")
    except KnobError as error:
        print(f"louise-demo-agent: {error}", file=sys.stderr)
        return 2
    if options.login:
        return login(default_directory(settings.state_dir))
    logging.basicConfig(
        stream=sys.stderr,
        level=settings.log_level,
        format="louise-demo-agent: %(levelname)s %(message)s",
    )
    try:
        asyncio.run(_serve(settings))
    except KeyboardInterrupt:
        return 130
    return 0


async def _serve(settings: Settings) -> None:
    peer = StdioPeer(max_line=settings.max_line)
    agent = DemoAgent(peer, settings)
    await peer.serve(agent.handle, agent.on_notification)
    peer.flush()
    log.info("stdin closed; exiting")
