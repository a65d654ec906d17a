"""`louise limits refresh AGENT` — start the agent, open a session, read its account limits
once, update the cache and print the label (and the detail with `--detail`)."""

from __future__ import annotations

import argparse
import sys
import tempfile


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    refresh = sub.add_parser("refresh", help="read an Agent's limits once and cache them")
    refresh.add_argument("agent", help="configured Agent")
    refresh.add_argument("--detail", action="store_true", help="print the detail view too")


def run(args: argparse.Namespace) -> int:
    import anyio

    from louise.commands._common import load_config_or_exit

    config = load_config_or_exit()
    if config is None:
        return 2
    if args.agent not in config.agents:
        print(f"louise: unknown agent {args.agent!r}; configured: {', '.join(config.agents)}",
              file=sys.stderr)
        return 2

    async def refresh() -> int:
        from louise import limits as lim
        from louise.acp.errors import AcpError
        from louise.registry import RegistryError, SessionRegistry

        async with SessionRegistry(config, transcripts_dir=None) as registry:
            try:
                with tempfile.TemporaryDirectory(prefix="louise-limits-") as cwd:
                    await registry.new_session(args.agent, cwd)
                    state = await registry.refresh_limits(args.agent)
            except (AcpError, RegistryError, OSError) as exc:
                print(f"louise: {exc}", file=sys.stderr)
                return 1
        now = registry.clock()
        label = lim.render_label(state, now)
        print(label.text if label is not None else f"limits {state.status}")
        if args.detail:
            print("\n".join(lim.render_detail(state, now)))
        return 0 if state.status in ("fresh", "empty", "unlimited") else 1

    return anyio.run(refresh)
