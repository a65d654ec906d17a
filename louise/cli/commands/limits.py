"""`louise limits refresh AGENT` — start the agent, read its account limits once, update
the cache and print the label (and the detail with `--detail`). An agent that speaks the
ACP quota RFD is read with `quota/read` and no session (one is opened only when it answers
for a session alone); the v1 extension reads through a session.

Exit status 0 when the read gave current figures; otherwise 1 with one `louise: …` line on
stderr saying why (the read failed or timed out, or the agent does not offer the
extension and its figures only arrive with its own rate-limit data after a prompt)."""

from __future__ import annotations

import argparse
import tempfile
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from louise.limits import LimitsState
    from louise.registry import SessionRegistry


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    refresh = sub.add_parser("refresh", help="read an Agent's limits once and cache them")
    refresh.add_argument("agent", help="configured Agent")
    refresh.add_argument("--detail", action="store_true", help="print the detail view too")


def _why(agent: str, state: LimitsState) -> str:
    """The `louise: …` line for a refresh that gave no current figures."""
    if state.status == "unsupported":
        from louise.limits.sources.expected import expected_figures

        return (f"{agent}: {expected_figures(agent)} (after a prompt: `louise chat "
                f"--agent {agent} …`, then `louise inspect {agent}`)")
    if state.error is not None:
        return f"{agent}: {state.error}"
    return f"{agent}: no account limits read ({state.status.replace('_', ' ')})"


async def read_without_session(registry: SessionRegistry, agent: str) -> LimitsState | None:
    """The Agent's limits by `quota/read` without a session, when it speaks the RFD and
    answers one; None otherwise (a session is needed)."""
    await registry.connection(agent)
    if not registry.runtime(agent).quota:
        return None
    state = await registry.refresh_limits(agent)
    return state if state.status in ("fresh", "empty") else None


def run(args: argparse.Namespace) -> int:
    import anyio

    from louise import limits as lim
    from louise.cli.commands._common import CliError, config_and_agent, err, local_zone, out

    config, agent = config_and_agent(args.agent)

    async def refresh() -> tuple[lim.LimitsState, float] | CliError:
        # Failures are returned, not raised: raised inside the registry they would come
        # out wrapped in an exception group.
        from louise.acp.errors import AcpError
        from louise.registry import SessionRegistry

        async with SessionRegistry(config, transcripts_dir=None) as registry:
            try:
                state = await read_without_session(registry, agent)
                if state is None:
                    with tempfile.TemporaryDirectory(prefix="louise-limits-") as cwd:
                        await registry.new_session(agent, cwd)
                        state = await registry.refresh_limits(agent)
            except (AcpError, OSError) as exc:
                message, _, detail = str(exc).partition("\n")
                return CliError(message, detail=detail)
        return state, registry.clock()

    result = anyio.run(refresh)
    if isinstance(result, CliError):
        raise result
    state, now = result
    label = lim.render_label(state, now)
    out(label.text if label is not None else f"limits {state.status}")
    if args.detail:
        out("\n".join(lim.render_detail(state, now, local=local_zone())))
    if state.status in ("fresh", "empty", "unlimited"):
        return 0
    err(f"louise: limits refresh {_why(agent, state)}")
    return 1
