"""`louise inspect [AGENT ...] [--json] [--detail] [--refresh]`: each Agent's cached
account limits.

Starts no agent and sends no request: it reads only the limits cache (`limits.json` in the
state directory) and applies the inspection rules at read time, so a passed reset time or a
vanished holder process shows as `stale`. Known Agents are those in the cache plus those in
the config (when it can be read). With `--refresh`, each configured Agent (of those named)
is started and read first where it can be read without a session (`quota/read` of the ACP
quota RFD); the others are shown from the cache, saying so. Exit status: 0, or 2 for an
unknown Agent name.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing (louise inspect's start)
if TYPE_CHECKING:
    import argparse

    from louise.limits import LimitsState

# Everything heavier than argparse is imported inside `run`: the CLI imports every verb
# module just to build its parser.


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "agents", nargs="*", metavar="AGENT", help="only these Agents (default: every known one)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--detail", action="store_true", help="also print each Agent's detail view"
    )
    parser.add_argument(
        "--refresh", action="store_true",
        help="start the Agents and read their limits now where they can be read without a "
             "session (agents speaking the ACP quota RFD)")


# The bundled Agent every config has (louise.config.agents.DEMO_AGENT_NAME; importing the
# configuration builds every pydantic model, ~120 ms of the ~200 ms inspect took).
DEMO_AGENT_NAME = "demo"


def _config_agent_names_fast() -> list[str] | None:
    """The Agent names of the config as `load_config` lists them (configured ones, then
    the demo Agent), read without validating the rest; None when the file is there but is
    not a plain, readable TOML table of Agent tables (the full load then says what is
    wrong)."""
    from louise.storage import paths

    try:
        with open(paths.config_file_name(), "rb") as config_file:
            raw = config_file.read()
    except FileNotFoundError:
        return [DEMO_AGENT_NAME]
    except OSError:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    from louise.cli.commands.inspect_config import agent_tables

    agents = agent_tables(text)  # a plain file, without tomllib (~8 ms of inspect)
    if agents is None:
        import tomllib

        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            return None
        value = data.get("agents", {})
        agents = ({name: isinstance(agent, dict) for name, agent in value.items()}
                  if isinstance(value, dict) else False)
    if agents is False or not all(agents.values()):
        return None
    return list(dict.fromkeys([*agents, DEMO_AGENT_NAME]))


def _config_agents() -> tuple[list[str], str | None]:
    """Agent names from the config, and a one-line warning when it could not be read.

    The config is optional here: `louise inspect` must work (from the cache alone) even
    when the config is missing, broken or from a louise without `load_config`. Its names
    are read without validating the rest of it (that is `louise agents`' and
    `:checkhealth louise`'s job); a file that is not plain TOML gets the full load and its
    reasons.
    """
    names = _config_agent_names_fast()
    if names is not None:
        return names, None
    import importlib

    from louise.cli.commands._common import setup_logging

    setup_logging()  # the full load may log (the rest of inspect never does)
    try:
        load_config = importlib.import_module("louise.config.loading").load_config
    except (ImportError, AttributeError):
        return [], None
    try:
        config = load_config()
    except Exception as exc:  # any config problem: report it, never crash inspect
        # One line whatever the error renders as; long lists of problems are cut short.
        reason = " ".join(str(exc).split()) or type(exc).__name__
        if len(reason) > 300:
            reason = reason[:299] + "…"
        return [], f"config not read ({reason}); showing the cached Agents only"
    try:
        return [str(name) for name in config.agents], None
    except (AttributeError, TypeError):
        return [], None


REFRESH_TIMEOUT = 120.0


def _refresh(agents: list[str]) -> tuple[dict[str, LimitsState], list[str]]:
    """Each Agent read now without a session where it can be (concurrently, bounded in
    time); what could not be, one note each."""
    import anyio

    from louise.cli.commands._common import config_and_agent, setup_logging
    from louise.cli.commands.limits import read_without_session
    from louise.registry import SessionRegistry

    setup_logging()
    config, _ = config_and_agent(None)
    states: dict[str, LimitsState] = {}
    notes: list[str] = []

    async def one(registry: SessionRegistry, agent: str) -> None:
        try:
            with anyio.fail_after(REFRESH_TIMEOUT):
                state = await read_without_session(registry, agent)
        except Exception as exc:  # one Agent's failure is a note, never the end
            reason = " ".join(str(exc).split())[:200] or type(exc).__name__
            notes.append(f"{agent}: not refreshed ({reason})")
            return
        if state is None:
            notes.append(f"{agent}: not refreshed: it is read through a session "
                         f"(`louise limits refresh {agent}`, or after a prompt)")
        else:
            states[agent] = state

    async def main() -> None:
        async with SessionRegistry(config, transcripts_dir=None) as registry, \
                anyio.create_task_group() as tg:
            for agent in agents:
                tg.start_soon(one, registry, agent)

    anyio.run(main)
    return states, notes


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return lines


def run(args: argparse.Namespace) -> int:
    import time

    from louise.cli.commands._common import (
        EXIT_USAGE,
        CliError,
        err,
        local_zone,
        out,
        print_json,
    )
    from louise.cli.terminal_text import safe as sanitize
    from louise.limits import (
        format_age,
        render_detail,
        render_label,
    )
    from louise.storage.limits_cache import LimitsCache

    cache = LimitsCache(read_only=True)  # inspecting writes nothing
    view = cache.load()
    config_names, config_warning = _config_agents()
    warnings = list(view.warnings)
    if config_warning is not None:
        warnings.append(config_warning)

    known = list(dict.fromkeys([*config_names, *view.agents]))
    requested: list[str] = list(dict.fromkeys(args.agents))
    unknown = [name for name in requested if name not in known]
    if unknown:
        listing = ", ".join(sanitize(name) for name in known) if known else "none yet"
        noun = "agent" if len(unknown) == 1 else "agents"
        quoted = ", ".join(repr(sanitize(name)) for name in unknown)
        raise CliError(f"unknown {noun} {quoted} (known agents: {listing})", EXIT_USAGE,
                       verb="inspect")

    now = time.time()
    names = requested or known
    states = [view.inspect(name, now) for name in names]
    if args.refresh:
        refreshed, notes = _refresh([name for name in names if name in config_names])
        warnings.extend(notes)
        now = time.time()
        states = [refreshed.get(state.agent, state) for state in states]

    if args.json:
        agents = []
        for state in states:
            label = render_label(state, now)
            wire = None
            if state.snapshot is not None:
                from louise.limits.snapshot import snapshot_to_wire

                wire = snapshot_to_wire(state.snapshot)
            agents.append(
                {
                    "agent": state.agent,
                    "status": state.status,
                    "label": None if label is None else label.text,
                    "level": None if label is None else label.level,
                    "updatedAt": state.updated_at,
                    "updatedAgo": None
                    if state.updated_at is None
                    else format_age(state.updated_at, now),
                    "error": state.error,
                    "source": state.source,
                    "snapshot": wire,
                }
            )
            if state.quota is not None:  # the ACP quota RFD's own snapshot, whole
                from louise.limits.quota import quota_to_wire

                agents[-1]["quota"] = quota_to_wire(state.quota)
        document = {
            "cache": view.file,
            "now": now,
            "warnings": warnings,
            "agents": agents,
        }
        print_json(document)
        return 0

    # The missing-file warning only restates what the "nothing observed" line says.
    for warning in warnings if view.file_status != "missing" else warnings[1:]:
        err(f"louise: warning: {sanitize(warning)}")

    if not requested and all(state.status == "not_observed" for state in states):
        out(
            "No account limits have been observed yet on this machine "
            f"(cache: {view.file}). They appear once a louise session has talked to an "
            "Agent that supports the account limits extension."
        )
        return 0

    rows: list[tuple[str, ...]] = [("AGENT", "STATUS", "LABEL", "UPDATED", "NOTE")]
    for state in states:
        label = render_label(state, now)
        rows.append(
            (
                sanitize(state.agent),
                state.status,
                "-" if label is None else label.text,
                "-" if state.updated_at is None else format_age(state.updated_at, now),
                "" if state.error is None else sanitize(state.error),
            )
        )
    out("\n".join(_table(rows)))
    if args.detail:
        for state in states:
            out()
            out("\n".join(render_detail(state, now, local=local_zone())))
    return 0
