"""`louise permissions [--json]` lists remembered "always" choices;
`louise permissions revoke ID` forgets one (the id from the listing)."""

from __future__ import annotations

import argparse
import json
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", nargs="?", choices=["list", "revoke"], default="list")
    parser.add_argument("rule_id", nargs="?", help="with revoke: the rule's id")
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    from louise.permissions import PermissionMemory, PermissionStoreError

    memory = PermissionMemory()
    if args.action == "revoke":
        if not args.rule_id:
            print("louise: revoke needs a rule id (see `louise permissions`)", file=sys.stderr)
            return 2
        try:
            removed = memory.revoke(args.rule_id)
        except PermissionStoreError as exc:
            print(f"louise: {exc}", file=sys.stderr)
            return 1
        if not removed:
            print(f"louise: no remembered rule has id {args.rule_id!r}", file=sys.stderr)
            return 2
        print(f"revoked {args.rule_id}")
        return 0
    rules = memory.list()
    for warning in memory.warnings:
        print(f"louise: {warning}", file=sys.stderr)
    if args.json:
        print(json.dumps([rule.to_json() for rule in rules], indent=2, ensure_ascii=False))
        return 0
    if not rules:
        print('no remembered permission choices ("always" answers appear here)')
        return 0
    for rule in rules:
        try:
            agent = " ".join(json.loads(rule.agent_key))
        except (ValueError, TypeError):
            agent = rule.agent_key
        print(f"{rule.id}  {rule.decision:<6} {rule.kind:<8} {rule.target}\n"
              f"{'':18}in {rule.workspace} · agent {agent}")
    return 0
