"""`louise permissions [--json]` lists remembered "always" choices;
`louise permissions revoke ID` forgets one (the id from the listing)."""

from __future__ import annotations

import argparse
import json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", nargs="?", choices=["list", "revoke"], default="list")
    parser.add_argument("rule_id", nargs="?", help="with revoke: the rule's id")
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    from louise.cli.commands._common import EXIT_USAGE, CliError, err, out, print_json
    from louise.cli.terminal_text import safe
    from louise.permissions.rules import PermissionMemory, PermissionStoreError

    memory = PermissionMemory()
    if args.action == "revoke":
        if not args.rule_id:
            raise CliError("revoke needs a rule id (see `louise permissions`)", EXIT_USAGE)
        try:
            removed = memory.revoke(args.rule_id)
        except PermissionStoreError as exc:
            raise CliError(str(exc)) from None
        if not removed:
            raise CliError(f"no remembered rule has id {safe(args.rule_id)!r}", EXIT_USAGE)
        out(f"revoked {args.rule_id}")
        return 0
    rules = memory.list()
    for warning in memory.warnings:
        err(f"louise: {warning}")
    if args.json:
        print_json([rule.to_json() for rule in rules])
        return 0
    if not rules:
        out('no remembered permission choices ("always" answers appear here)')
        return 0
    for rule in rules:
        try:
            agent = " ".join(json.loads(rule.agent_key))
        except (ValueError, TypeError):
            agent = rule.agent_key
        # Targets and agents come from what agents sent: each on one sanitized line.
        out(f"{rule.id}  {rule.decision:<6} {rule.kind:<8} {safe(rule.target)}\n"
            f"{'':18}in {safe(rule.workspace)} · agent {safe(agent)}")
    return 0
