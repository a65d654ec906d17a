"""Remembered permission choices (scoping, prefixes, revoke, corruption, concurrency) and the
configured policy."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest

from louise.config.loading import load_config_mapping
from louise.config.sections import PermissionRule, PermissionsConfig
from louise.permissions.rules import (
    FORMAT_VERSION,
    PermissionMemory,
    PermissionStoreError,
    RememberedRule,
    agent_key,
    canonical_workspace,
    policy_decision,
)

CLAUDE = agent_key("claude-agent-acp", ["--x"])
WS = "/home/person/project"


def rule(
    target: str,
    *,
    kind: str = "edit",
    decision: str = "allow",
    workspace: str = WS,
    key: str = CLAUDE,
) -> RememberedRule:
    fields = {"agent_key": key, "workspace": workspace, "kind": kind, "target": target}
    return RememberedRule.from_json({**fields, "decision": decision})


@pytest.fixture
def memory(tmp_path: Path) -> PermissionMemory:
    return PermissionMemory(tmp_path / "permissions.json")


# --------------------------------------------------------------------------- remembered rules


def test_remembered_rules_persist_in_versioned_json(tmp_path: Path) -> None:
    first = PermissionMemory(tmp_path / "permissions.json")
    stored = first.remember(rule(f"{WS}/a.py"))

    again = PermissionMemory(tmp_path / "permissions.json")
    assert again.list() == [stored]
    document = json.loads((tmp_path / "permissions.json").read_text())
    assert document["version"] == FORMAT_VERSION
    assert document["rules"][0]["id"] == stored.id
    assert document["rules"][0]["target"] == f"{WS}/a.py"
    assert again.warnings == []


def test_default_path_is_under_the_state_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOUISE_STATE_DIR", str(tmp_path / "state"))
    memory = PermissionMemory()
    memory.remember(rule(f"{WS}/a.py"))
    assert (tmp_path / "state" / "permissions.json").is_file()


def test_exact_path_match(memory: PermissionMemory) -> None:
    stored = memory.remember(rule(f"{WS}/src/a.py"))
    assert memory.match(CLAUDE, WS, "edit", f"{WS}/src/a.py") == stored
    assert memory.match(CLAUDE, WS, "edit", f"{WS}/src/./a.py") == stored
    assert memory.match(CLAUDE, WS, "edit", f"{WS}/src/a.py.bak") is None
    assert memory.match(CLAUDE, WS, "edit", f"{WS}/src") is None
    assert memory.match(CLAUDE, WS, "edit", f"{WS}/src/a.py/x") is None


def test_paths_match_where_they_resolve_not_how_they_are_spelled(
        memory: PermissionMemory, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    outside = tmp_path / "elsewhere" / "deep"
    outside.mkdir(parents=True)
    (ws / "evil").symlink_to(outside)
    (ws / "alias").symlink_to(ws / "sub")
    allowed = memory.remember(rule(str(ws / "x.txt"), workspace=str(ws)))
    assert memory.match(CLAUDE, str(ws), "edit", f"{ws}/sub/../x.txt") == allowed
    # `evil/..` is elsewhere/, not ws/: lexically equal, physically outside.
    assert memory.match(CLAUDE, str(ws), "edit", f"{ws}/evil/../x.txt") is None
    # A link inside the workspace to a file there is that file.
    inner = memory.remember(rule(str(ws / "sub" / "y.txt"), workspace=str(ws)))
    assert memory.match(CLAUDE, str(ws), "edit", f"{ws}/alias/y.txt") == inner
    # A link to outside never matches an allow rule, even one written for the link itself.
    memory.remember(rule(str(ws / "evil" / "z.txt"), workspace=str(ws)))
    assert memory.match(CLAUDE, str(ws), "edit", f"{ws}/evil/z.txt") is None
    # A reject rule still refuses the path as spelled.
    rejected = memory.remember(rule(str(ws / "evil" / "z.txt"), workspace=str(ws),
                                    decision="reject"))
    assert memory.match(CLAUDE, str(ws), "edit", f"{ws}/evil/z.txt") == rejected


def test_relative_paths_never_match_an_allow_rule(memory: PermissionMemory) -> None:
    memory.remember(rule("a.py"))
    assert memory.match(CLAUDE, WS, "edit", "a.py") is None
    rejected = memory.remember(rule("b.py", decision="reject"))
    assert memory.match(CLAUDE, WS, "edit", "b.py") == rejected


def test_another_workspace_is_not_matched(memory: PermissionMemory) -> None:
    memory.remember(rule(f"{WS}/a.py"))
    assert memory.match(CLAUDE, "/home/person/other", "edit", f"{WS}/a.py") is None
    assert memory.match(CLAUDE, f"{WS}/sub", "edit", f"{WS}/a.py") is None
    assert memory.match(CLAUDE, "/home/person", "edit", f"{WS}/a.py") is None


def test_another_agent_command_is_not_matched(memory: PermissionMemory) -> None:
    memory.remember(rule(f"{WS}/a.py"))
    assert memory.match(agent_key("claude-agent-acp", []), WS, "edit", f"{WS}/a.py") is None
    assert memory.match(agent_key("claude-agent-acp", ["--y"]), WS, "edit", f"{WS}/a.py") is None
    assert memory.match(agent_key("codex-acp", ["--x"]), WS, "edit", f"{WS}/a.py") is None
    assert memory.match(CLAUDE, WS, "edit", f"{WS}/a.py") is not None


def test_another_kind_is_not_matched(memory: PermissionMemory) -> None:
    memory.remember(rule(f"{WS}/a.py", kind="edit"))
    assert memory.match(CLAUDE, WS, "delete", f"{WS}/a.py") is None
    assert memory.match(CLAUDE, WS, None, f"{WS}/a.py") is None


def test_agent_key_keeps_argument_boundaries() -> None:
    assert agent_key("a", ["b c"]) != agent_key("a", ["b", "c"])
    assert agent_key("a b", []) != agent_key("a", ["b"])


def test_command_prefix_matches_whole_words(memory: PermissionMemory) -> None:
    stored = memory.remember(rule("git status", kind="execute"))

    assert memory.match(CLAUDE, WS, "execute", "git status") == stored
    assert memory.match(CLAUDE, WS, "execute", "git status --short") == stored
    assert memory.match(CLAUDE, WS, "execute", "git statusx") is None
    assert memory.match(CLAUDE, WS, "execute", "git") is None
    assert memory.match(CLAUDE, WS, "execute", "git stat") is None
    assert memory.match(CLAUDE, WS, "execute", "xgit status") is None


def test_command_prefix_does_not_cover_chained_commands(memory: PermissionMemory) -> None:
    memory.remember(rule("git status", kind="execute"))
    for command in (
        "git status; rm -rf ~",
        "git status && curl evil",
        "git status | sh",
        "git status $(rm x)",
        "git status `rm x`",
        "git status > /etc/passwd",
        "git status\nrm x",
    ):
        assert memory.match(CLAUDE, WS, "execute", command) is None, command


def test_the_longest_matching_command_prefix_wins(memory: PermissionMemory) -> None:
    memory.remember(rule("git", kind="execute", decision="allow"))
    push = memory.remember(rule("git push", kind="execute", decision="reject"))

    found = memory.match(CLAUDE, WS, "execute", "git push --force")
    assert found == push
    assert found is not None and found.decision == "reject"
    allowed = memory.match(CLAUDE, WS, "execute", "git log")
    assert allowed is not None and allowed.decision == "allow"


def test_remembering_the_same_scope_replaces_the_decision(memory: PermissionMemory) -> None:
    first = memory.remember(rule(f"{WS}/a.py", decision="allow"))
    second = memory.remember(rule(f"{WS}/a.py", decision="reject"))

    assert first.id == second.id
    assert memory.list() == [second]
    found = memory.match(CLAUDE, WS, "edit", f"{WS}/a.py")
    assert found is not None and found.decision == "reject"


def test_rule_ids_differ_per_scope() -> None:
    ids = {
        rule(f"{WS}/a.py").id,
        rule(f"{WS}/b.py").id,
        rule(f"{WS}/a.py", kind="delete").id,
        rule(f"{WS}/a.py", workspace="/other").id,
        rule(f"{WS}/a.py", key=agent_key("codex-acp", [])).id,
    }
    assert len(ids) == 5
    assert rule(f"{WS}/a.py", decision="reject").id == rule(f"{WS}/a.py").id


def test_revoke(memory: PermissionMemory) -> None:
    keep = memory.remember(rule(f"{WS}/keep.py"))
    gone = memory.remember(rule(f"{WS}/gone.py"))

    assert memory.revoke(gone.id) is True
    assert memory.match(CLAUDE, WS, "edit", f"{WS}/gone.py") is None
    assert memory.list() == [keep]
    assert memory.revoke(gone.id) is False
    assert memory.revoke("no-such-id") is False
    assert memory.list() == [keep]


def test_rules_are_validated() -> None:
    with pytest.raises(ValueError):
        rule(f"{WS}/a.py", workspace="relative/ws")
    with pytest.raises(ValueError):
        rule(f"{WS}/a.py", kind="launch")
    with pytest.raises(ValueError):
        rule("   ")
    with pytest.raises(ValueError):
        rule(f"{WS}/a.py", decision="maybe")


def test_created_at_round_trips(memory: PermissionMemory) -> None:
    when = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    stored = memory.remember(dataclasses.replace(rule(f"{WS}/a.py"), created_at=when))
    (loaded,) = memory.list()
    assert loaded.created_at == when == stored.created_at


def test_canonical_workspace_resolves_symlinks(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    assert canonical_workspace(tmp_path / "link") == canonical_workspace(real)
    assert os.path.isabs(canonical_workspace("."))


# --------------------------------------------------------------------------- damaged files


# Deeper than the JSON parser's recursion limit: json.loads raises RecursionError.
DEEPLY_NESTED = b'{"version": 1, "rules": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"\xff\xfe",
        b"[]",
        b'{"version": 1}',
        b'{"version": "1", "rules": []}',
        b'{"rules": []}',
        DEEPLY_NESTED,
    ],
)
def test_a_corrupt_file_reads_as_empty_with_one_warning(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "permissions.json"
    path.write_bytes(content)
    memory = PermissionMemory(path)

    assert memory.list() == []
    assert memory.match(CLAUDE, WS, "edit", f"{WS}/a.py") is None
    assert memory.list() == []
    assert len(memory.warnings) == 1
    assert "\n" not in memory.warnings[0]
    assert str(path) in memory.warnings[0]


def test_remembering_over_a_deeply_nested_file_replaces_it(tmp_path: Path) -> None:
    path = tmp_path / "permissions.json"
    path.write_bytes(DEEPLY_NESTED)
    stored = PermissionMemory(path).remember(rule(f"{WS}/a.py"))
    assert PermissionMemory(path).list() == [stored]
    assert (tmp_path / "permissions.json.corrupt").read_bytes() == DEEPLY_NESTED


def test_remembering_over_a_corrupt_file_keeps_a_copy(tmp_path: Path) -> None:
    path = tmp_path / "permissions.json"
    path.write_bytes(b"{not json")
    memory = PermissionMemory(path)

    stored = memory.remember(rule(f"{WS}/a.py"))
    assert PermissionMemory(path).list() == [stored]
    assert (tmp_path / "permissions.json.corrupt").read_bytes() == b"{not json"


def test_invalid_entries_are_skipped_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "permissions.json"
    good = rule(f"{WS}/a.py")
    document = {
        "version": 1,
        "rules": [good.to_json(), {"agent_key": CLAUDE}, "junk", {**good.to_json(), "kind": 3}],
    }
    path.write_text(json.dumps(document))
    memory = PermissionMemory(path)

    assert memory.list() == [good]
    assert len(memory.warnings) == 1
    assert "3" in memory.warnings[0]


def test_a_forged_id_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "permissions.json"
    good = rule(f"{WS}/a.py")
    path.write_text(json.dumps({"version": 1, "rules": [{**good.to_json(), "id": "forged"}]}))
    memory = PermissionMemory(path)
    assert [r.id for r in memory.list()] == [good.id]
    assert memory.revoke("forged") is False


def test_a_newer_format_is_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "permissions.json"
    content = json.dumps({"version": FORMAT_VERSION + 1, "rules": [], "future": True})
    path.write_text(content)
    memory = PermissionMemory(path)

    assert memory.list() == []
    with pytest.raises(PermissionStoreError):
        memory.remember(rule(f"{WS}/a.py"))
    assert path.read_text() == content
    assert len(memory.warnings) == 1


def test_an_unreadable_file_is_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "permissions.json"
    path.mkdir()  # reading a directory fails whoever runs the test, root included
    memory = PermissionMemory(path)

    assert memory.list() == []
    assert len(memory.warnings) == 1
    with pytest.raises(PermissionStoreError):
        memory.remember(rule(f"{WS}/a.py"))
    assert path.is_dir()


def test_a_failed_write_raises_permission_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    memory = PermissionMemory(blocker / "permissions.json")
    with pytest.raises(PermissionStoreError):
        memory.remember(rule(f"{WS}/a.py"))


def test_revoking_nothing_writes_nothing(memory: PermissionMemory) -> None:
    assert memory.revoke("absent") is False
    assert not memory.path.exists()


# --------------------------------------------------------------------------- concurrency

WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from louise.permissions.rules import PermissionMemory, RememberedRule

    path, tag, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    memory = PermissionMemory(path)
    for i in range(count):
        memory.remember(RememberedRule(
            agent_key="k", workspace="/ws", kind="edit",
            target=f"/ws/{tag}-{i}", decision="allow",
        ))
        if i % 5 == 0:
            memory.revoke("nothing-to-revoke")
    """
)


def test_two_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "permissions.json"
    count = 40
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), tag, str(count)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for tag in ("a", "b")
    ]
    for writer in writers:
        _, stderr = writer.communicate(timeout=90)
        assert writer.returncode == 0, stderr.decode()

    targets = {r.target for r in PermissionMemory(path).list()}
    expected = {f"/ws/{tag}-{i}" for tag in ("a", "b") for i in range(count)}
    assert targets == expected


# --------------------------------------------------------------------------- configured policy


def policy(*rules: dict[str, object], default: str = "ask") -> PermissionsConfig:
    config = load_config_mapping({"permissions": {"default": default, "rules": list(rules)}})
    return config.permissions


ALLOW_READ_INSIDE = {"kind": "read", "inside_workspace": True, "decision": "allow"}


def test_default_policy_asks(tmp_path: Path) -> None:
    assert policy_decision(PermissionsConfig(), "read", [str(tmp_path / "a")], [tmp_path]) is None
    assert policy_decision(PermissionsConfig(), "execute", [], [tmp_path]) is None


def test_allow_read_inside_the_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    p = policy(ALLOW_READ_INSIDE)

    assert policy_decision(p, "read", [ws / "a.txt", ws / "sub" / "b.txt"], [ws]) == "allow"
    assert policy_decision(p, "read", [ws], [ws]) == "allow"
    assert policy_decision(p, "read", [tmp_path / "outside.txt"], [ws]) is None
    assert policy_decision(p, "read", [ws / "a.txt", tmp_path / "outside.txt"], [ws]) is None
    assert policy_decision(p, "read", [f"{ws}/../outside.txt"], [ws]) is None
    assert policy_decision(p, "read", [tmp_path / "wsx" / "a.txt"], [ws]) is None
    assert policy_decision(p, "edit", [ws / "a.txt"], [ws]) is None


def test_extra_roots_count_as_the_workspace(tmp_path: Path) -> None:
    ws, extra = tmp_path / "ws", tmp_path / "extra"
    p = policy(ALLOW_READ_INSIDE)
    assert policy_decision(p, "read", [extra / "x"], [ws, extra]) == "allow"
    assert policy_decision(p, "read", [extra / "x"], [ws]) is None


def test_a_symlink_out_of_the_workspace_is_outside(tmp_path: Path) -> None:
    ws, secret = tmp_path / "ws", tmp_path / "secret"
    ws.mkdir()
    secret.mkdir()
    (secret / "key").write_text("k")
    (ws / "escape").symlink_to(secret)
    p = policy(ALLOW_READ_INSIDE)

    assert policy_decision(p, "read", [ws / "escape" / "key"], [ws]) is None


def test_a_symlinked_workspace_root_still_matches(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    p = policy(ALLOW_READ_INSIDE)
    assert policy_decision(p, "read", [real / "a"], [tmp_path / "link"]) == "allow"


def test_ambiguous_requests_ask(tmp_path: Path) -> None:
    p = policy(ALLOW_READ_INSIDE, {"kind": "read", "inside_workspace": False, "decision": "allow"})
    assert policy_decision(p, "read", ["relative/a.txt"], [tmp_path]) is None
    assert policy_decision(p, "read", [tmp_path / "a"], ["relative"]) is None
    assert policy_decision(p, None, [tmp_path / "a"], [tmp_path]) is None
    assert policy_decision(p, "launch_missiles", [tmp_path / "a"], [tmp_path]) is None


def test_inside_workspace_rules_need_at_least_one_path(tmp_path: Path) -> None:
    p = policy(ALLOW_READ_INSIDE)
    assert policy_decision(p, "read", [], [tmp_path]) is None
    assert policy_decision(p, "read", [tmp_path / "a"], []) is None


def test_any_scope_rules_apply_without_paths(tmp_path: Path) -> None:
    p = policy({"kind": ["think", "search"], "inside_workspace": False, "decision": "allow"})
    assert policy_decision(p, "think", [], [tmp_path]) == "allow"
    assert policy_decision(p, "search", ["/elsewhere"], [tmp_path]) == "allow"
    assert policy_decision(p, "execute", [], [tmp_path]) is None


def test_reject_wins_over_allow(tmp_path: Path) -> None:
    p = policy(
        ALLOW_READ_INSIDE,
        {"kind": "read", "inside_workspace": False, "decision": "reject"},
    )
    assert policy_decision(p, "read", [tmp_path / "a"], [tmp_path]) == "reject"


def test_reject_default_applies_when_no_rule_matches(tmp_path: Path) -> None:
    p = policy(ALLOW_READ_INSIDE, default="reject")
    assert policy_decision(p, "read", [tmp_path / "a"], [tmp_path]) == "allow"
    assert policy_decision(p, "edit", [tmp_path / "a"], [tmp_path]) == "reject"
    assert policy_decision(p, "read", ["relative"], [tmp_path]) is None


def test_nothing_defaults_to_allow(tmp_path: Path) -> None:
    rules = PermissionsConfig(rules=[PermissionRule(kind=["edit"], decision="allow")])
    assert policy_decision(rules, "edit", ["/somewhere/else"], [tmp_path]) is None
