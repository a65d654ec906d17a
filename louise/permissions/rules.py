"""Permission decisions that answer without asking: configured rules and remembered choices.

`policy_decision` evaluates the configured rules (`config.PermissionsConfig`). `PermissionMemory`
keeps a person's "always" choices in `permissions.json` under the state directory, each scoped to
the agent command and args, the canonical workspace, the tool kind and the exact path or command
prefix. Both fail closed: whatever is ambiguous yields no decision, so the person is asked.
"""

from __future__ import annotations

import builtins
import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from louise.config.sections import TOOL_KINDS, PermissionsConfig
from louise.storage import durable, paths
from louise.storage.digests import sha256_hex

Decision = Literal["allow", "reject"]

FILE_NAME = "permissions.json"
FORMAT_VERSION = 1
COMMAND_KIND = "execute"
LOCK_TIMEOUT = 30.0
# After a matched command prefix, these make the rest more than plain arguments to that
# command (another command, a substitution, a redirection), so a prefix rule must not cover it.
_SHELL_CONTROL = frozenset(";&|`$()<>\n\r")


class PermissionStoreError(Exception):
    """`permissions.json` cannot be written safely (e.g. it was written by a newer louise)."""


def agent_key(command: str, args: Sequence[str]) -> str:
    """The stable key of an agent command line: its argv as compact JSON."""
    return json.dumps([command, *args], ensure_ascii=False, separators=(",", ":"))


def canonical_workspace(path: str | os.PathLike[str]) -> str:
    """A workspace as remembered rules store it: absolute, symlinks resolved."""
    return os.path.realpath(os.path.expanduser(os.fspath(path)))


_RULE_FIELDS = ("agent_key", "workspace", "kind", "target", "decision", "created_at")


@dataclass(frozen=True, slots=True, kw_only=True)
class RememberedRule:
    """A person's "always" choice. Its `id` depends on the scope only, not on the decision,
    so remembering the same scope again replaces the earlier choice. Checked when made
    (ValueError): a non-empty agent key, an absolute workspace (kept normalized), a known
    tool kind, a non-empty target (kept stripped), allow or reject, an aware time (a
    naive one is UTC). Checked by hand: no pydantic on a start that reads the file."""

    agent_key: str
    workspace: str
    kind: str
    target: str
    decision: Decision
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    def __post_init__(self) -> None:
        for name in _RULE_FIELDS[:4]:
            if type(getattr(self, name)) is not str:
                raise ValueError(f"{name} must be a string")
        if not self.agent_key:
            raise ValueError("agent_key is empty")
        if not os.path.isabs(self.workspace):
            raise ValueError("workspace must be an absolute path (see canonical_workspace)")
        if self.kind not in TOOL_KINDS:
            raise ValueError(f"unknown tool kind {self.kind!r}")
        if not self.target.strip():
            raise ValueError("target is empty")
        if self.decision not in ("allow", "reject"):
            raise ValueError(f"unknown decision {self.decision!r}")
        if not isinstance(self.created_at, datetime):
            raise ValueError("created_at must be a time")
        object.__setattr__(self, "workspace", os.path.normpath(self.workspace))
        object.__setattr__(self, "target", self.target.strip())
        if self.created_at.tzinfo is None:
            object.__setattr__(self, "created_at", self.created_at.replace(tzinfo=UTC))

    @classmethod
    def from_json(cls, fields: dict[str, Any]) -> RememberedRule:
        """A rule as `to_json` writes it (its `id` aside: derived, never trusted);
        ValueError when it is not one."""
        unknown = set(fields).difference(_RULE_FIELDS)
        if unknown:
            raise ValueError(f"unknown fields: {sorted(unknown)}")
        when = fields.get("created_at")
        if isinstance(when, str):
            try:
                when = datetime.fromisoformat(when)
            except ValueError:
                raise ValueError("created_at is not an ISO 8601 time") from None
        kept = {k: v for k, v in fields.items() if k != "created_at"}
        try:
            return cls(**kept) if when is None else cls(**kept, created_at=when)
        except TypeError as exc:  # a field missing
            raise ValueError(str(exc)) from None

    @property
    def id(self) -> str:
        # Length-prefixed parts, so that no two different scopes can concatenate alike.
        parts = (self.agent_key, self.workspace, self.kind, self.target)
        blob = "".join(f"{len(part)}:{part}" for part in parts)
        return sha256_hex(blob.encode("utf-8"))[:16]

    def to_json(self) -> dict[str, Any]:
        when = self.created_at.isoformat()
        # as pydantic wrote it, which earlier louise versions read: UTC as "Z"
        when = when[:-len("+00:00")] + "Z" if when.endswith("+00:00") else when
        return {"id": self.id, "agent_key": self.agent_key, "workspace": self.workspace,
                "kind": self.kind, "target": self.target, "decision": self.decision,
                "created_at": when}

    def covers(self, kind: str, target: str, resolved: str | None = None) -> bool:
        """Whether this rule's kind and target cover a request (scope checked by the caller).

        A path is compared by where it lands: `resolved` is the request's path with every
        symlink resolved (`resolve_inside`), None when it does not resolve inside the
        workspace. An allow rule covers only a path that resolves inside the workspace to
        exactly its target; a reject rule also covers the same path spelled alike, so
        that a rule never stops refusing because a link changed.
        """
        if kind != self.kind:
            return False
        if kind == COMMAND_KIND:
            return _command_covered(self.target, target)
        own = _normalize_target(self.target)
        if resolved is not None and resolved == own:
            return True
        return self.decision == "reject" and _normalize_target(target) == own


def _normalize_target(target: str) -> str:
    target = target.strip()
    return os.path.normpath(target) if os.path.isabs(target) else target


def resolve_inside(workspace: str, target: str) -> str | None:
    """`target` with every symlink resolved, when it is an absolute path that lands inside
    the (canonical) `workspace`; None otherwise, or when it cannot be resolved.

    Blocking (it reads symlinks on disk). A lexical `..` is never trusted: `ws/link/../x`
    is where `link` points, then up.
    """
    target = target.strip()
    if not os.path.isabs(target) or not os.path.isabs(workspace) or "\x00" in target:
        return None
    try:
        resolved = os.path.realpath(target)
    except (OSError, ValueError):
        return None
    root = os.path.normpath(workspace)
    if resolved == root or resolved.startswith(root.rstrip(os.sep) + os.sep):
        return resolved
    return None


def rememberable_target(kind: str, target: str, workspace: str, decision: Decision) -> str | None:
    """What a remembered rule stores for a request's target: a command as given, a path as
    it resolves inside the workspace. None when an allow could never match again (a path
    that does not resolve inside the workspace); a reject is kept as given then, since a
    refusal that matches too much fails closed. Blocking."""
    if kind == COMMAND_KIND:
        return target
    resolved = resolve_inside(workspace, target)
    if resolved is not None:
        return resolved
    return None if decision == "allow" else target


def _command_covered(prefix: str, command: str) -> bool:
    command = command.strip()
    if command == prefix:
        return True
    if not command.startswith(prefix + " "):
        return False
    return not any(char in _SHELL_CONTROL for char in command[len(prefix) :])


_Rules = builtins.list[RememberedRule]


class PermissionMemory:
    """Remembered permission choices in `permissions.json` (versioned JSON).

    Every call reads the file afresh, so several processes share one view; changes are made
    under the store's cross-process lock and written atomically. A corrupt or unreadable file
    reads as empty and adds a one-line message to `warnings`; it never raises.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else paths.state_dir() / FILE_NAME
        self._in_state_dir = path is None
        self.warnings: builtins.list[str] = []

    # -- reading

    def list(self) -> builtins.list[RememberedRule]:
        return self._read()[0]

    def match(
        self, agent_key: str, workspace: str, kind: str | None, target: str
    ) -> RememberedRule | None:
        """The remembered rule that answers this request, or None (ask).

        Agent key and workspace must equal the rule's exactly; paths compare by where they
        resolve (see `RememberedRule.covers`), command prefixes by whole words. A reject
        wins over an allow; among command prefixes, the longest one wins. Blocking.
        """
        if kind is None or not os.path.isabs(workspace) or not target.strip():
            return None
        workspace = os.path.normpath(workspace)
        candidates = [rule for rule in self.list()
                      if rule.agent_key == agent_key and rule.workspace == workspace
                      and rule.kind == kind]
        if not candidates:
            return None
        resolved = None if kind == COMMAND_KIND else resolve_inside(workspace, target)
        found = [rule for rule in candidates if rule.covers(kind, target, resolved)]
        if not found:
            return None
        return max(found, key=lambda rule: (rule.decision == "reject", len(rule.target)))

    # -- changing

    def remember(self, rule: RememberedRule) -> RememberedRule:
        """Store `rule`, replacing any rule with the same scope (same `id`).

        Raises `PermissionStoreError` when the file cannot be written (or is from a newer
        louise); the choice then holds for this request only.
        """

        def change(rules: builtins.list[RememberedRule]) -> builtins.list[RememberedRule]:
            return [*(r for r in rules if r.id != rule.id), rule]

        self._update(change)
        return rule

    def revoke(self, rule_id: str) -> bool:
        """Forget a rule; False when no rule has that id. Raises like `remember`."""
        removed = False

        def change(rules: builtins.list[RememberedRule]) -> builtins.list[RememberedRule]:
            nonlocal removed
            kept = [r for r in rules if r.id != rule_id]
            removed = len(kept) != len(rules)
            return kept

        self._update(change)
        return removed

    # -- file

    def _update(self, change: Callable[[_Rules], _Rules]) -> None:
        try:
            if self._in_state_dir:
                paths.private_state_dir()  # created 0700; older files made private
            # A timeout turns a wedged lock holder into an error instead of a hang.
            with durable.locked(self.path, timeout=LOCK_TIMEOUT):
                rules, state = self._read()
                if state in ("newer", "unreadable"):
                    # Replacing a file we could not read would destroy choices.
                    raise PermissionStoreError(f"{self.path}: {state} file; not changing it")
                new_rules = change(rules)
                if state != "corrupt" and new_rules == rules:
                    return
                if state == "corrupt":
                    # Keep what was there for a person to look at before replacing it.
                    self._keep_corrupt_copy()
                document = {"version": FORMAT_VERSION, "rules": [r.to_json() for r in new_rules]}
                durable.atomic_write_json(self.path, document, indent=2)
        except (OSError, TimeoutError) as exc:
            message = f"{self.path}: cannot save remembered choices: {exc}"
            raise PermissionStoreError(message) from exc

    def _keep_corrupt_copy(self) -> None:
        try:
            data = self.path.read_bytes()
        except OSError:
            return
        backup = self.path.with_name(self.path.name + ".corrupt")
        durable.atomic_write_bytes(backup, data)
        self._warn(f"{self.path}: the unreadable content was kept in {backup.name}")

    def _read(self) -> tuple[builtins.list[RememberedRule], str]:
        """The rules and the file's state: ok, missing, corrupt, unreadable or newer."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return [], "missing"
        except OSError as exc:
            self._warn(f"{self.path}: cannot read ({exc.strerror or exc}); no remembered choices")
            return [], "unreadable"
        try:
            document = json.loads(raw)
        except (ValueError, UnicodeDecodeError, RecursionError):
            # RecursionError: nesting deeper than the parser's stack (as in limits_cache).
            self._warn(f"{self.path}: not valid JSON; ignoring remembered choices")
            return [], "corrupt"
        if not isinstance(document, dict) or not isinstance(document.get("rules"), list):
            self._warn(f"{self.path}: unexpected content; ignoring remembered choices")
            return [], "corrupt"
        version = document.get("version")
        if type(version) is not int or version < 1:
            self._warn(f"{self.path}: unknown format version; ignoring remembered choices")
            return [], "corrupt"
        if version > FORMAT_VERSION:
            self._warn(f"{self.path}: written by a newer louise; ignoring remembered choices")
            return [], "newer"
        rules, bad = _parse_rules(document["rules"])
        if bad:
            self._warn(f"{self.path}: ignored {bad} invalid remembered rule(s)")
        return rules, "ok"

    def _warn(self, message: str) -> None:
        # Reads happen on every match; one line per distinct problem is enough.
        if message not in self.warnings:
            self.warnings.append(message)


def _parse_rules(entries: Iterable[Any]) -> tuple[builtins.list[RememberedRule], int]:
    rules: dict[str, RememberedRule] = {}
    bad = 0
    for entry in entries:
        if not isinstance(entry, dict):
            bad += 1
            continue
        fields = {k: v for k, v in entry.items() if k != "id"}  # the id is derived, not trusted
        try:
            rule = RememberedRule.from_json(fields)
        except ValueError:
            bad += 1
            continue
        rules[rule.id] = rule
    return builtins.list(rules.values()), bad


# --------------------------------------------------------------------------- configured policy


def configured_decisions(
    config_permissions: PermissionsConfig,
    kind: str | None,
    target_paths: Sequence[str | os.PathLike[str]],
    workspace_roots: Sequence[str | os.PathLike[str]],
) -> frozenset[Decision]:
    """The decisions of every configured rule that matches a request (the `default` aside).

    An unknown kind or a relative path is ambiguous: no rule matches. Paths and roots are
    compared after resolving symlinks, so a link cannot smuggle a target out of the
    workspace; a path that cannot be resolved counts as outside.
    """
    if kind is None or kind not in TOOL_KINDS:
        return frozenset()
    targets = [os.fspath(p) for p in target_paths]
    roots = [os.fspath(r) for r in workspace_roots]
    if any(not os.path.isabs(p) for p in targets) or any(not os.path.isabs(r) for r in roots):
        return frozenset()
    try:
        resolved_roots = [Path(os.path.realpath(r)) for r in roots]
        resolved_targets = [Path(os.path.realpath(p)) for p in targets]
    except (OSError, ValueError):
        resolved_roots, resolved_targets = [], []
    inside = bool(resolved_targets) and bool(resolved_roots) and all(
        any(target.is_relative_to(root) for root in resolved_roots)
        for target in resolved_targets
    )
    return frozenset(
        rule.decision
        for rule in config_permissions.rules
        if kind in rule.kind and (inside or not rule.inside_workspace)
    )


def policy_decision(
    config_permissions: PermissionsConfig,
    kind: str | None,
    target_paths: Sequence[str | os.PathLike[str]],
    workspace_roots: Sequence[str | os.PathLike[str]],
) -> Decision | None:
    """What the configured rules alone answer for a request, or None to ask the person.

    A matching `reject` rule wins over a matching `allow` rule; with no match, the policy's
    `default` applies (`ask` → None). An unknown kind or a relative path is ambiguous: no
    rule matches. (The broker puts remembered choices between these steps.)
    """
    if kind is None or kind not in TOOL_KINDS:
        return None
    targets = [os.fspath(p) for p in target_paths]
    roots = [os.fspath(r) for r in workspace_roots]
    if any(not os.path.isabs(p) for p in targets) or any(not os.path.isabs(r) for r in roots):
        return None
    decisions = configured_decisions(config_permissions, kind, target_paths, workspace_roots)
    if "reject" in decisions:
        return "reject"
    if "allow" in decisions:
        return "allow"
    return "reject" if config_permissions.default == "reject" else None
