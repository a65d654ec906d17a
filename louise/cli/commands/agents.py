"""`louise agents [--json]`: the configured Agents and whether each command can be found.

Exit status 0 when the configuration is valid (even if a command is missing), 2 when it is not.
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    # Imported here: `louise --help` imports every verb module and must stay cheap.
    from louise.acp.install_hints import install_hint
    from louise.cli.commands._common import load_config, out, print_json
    from louise.cli.terminal_text import safe
    from louise.config.agents import resolve_command
    from louise.storage import paths

    source = paths.config_file()
    config = load_config()

    rows: list[dict[str, Any]] = []
    for name, agent in config.agents.items():
        resolved = resolve_command(agent)
        rows.append(
            {
                "name": name,
                "command": agent.command,
                "args": list(agent.args),
                "found": resolved is not None,
                "resolved": resolved,
                "default": name == config.default_agent,
            }
        )

    if args.json:
        document = {
            "config": str(source),
            "config_exists": source.is_file(),
            "default_agent": config.default_agent,
            "agents": rows,
        }
        print_json(document)
        return 0

    name_width = max(len(row["name"]) for row in rows)
    for row in rows:
        marker = "*" if row["default"] else " "
        found = "found" if row["found"] else "NOT FOUND"
        command_line = safe(shlex.join([row["command"], *row["args"]]))
        out(f"{marker} {row['name']:<{name_width}}  {found:<9}  {command_line}")
        if not row["found"] and (hint := install_hint(row["command"])) is not None:
            out(f"  {'':<{name_width}}  {hint.text()}")
    origin = "" if source.is_file() else " (not found; defaults)"
    out(f"(* default Agent; config: {source}{origin})")
    return 0
