"""`louise inspect` as a user runs it: a subprocess reading an isolated cache and config."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from louise.limits import (
    ERROR_NO_LIVE_SESSION,
    ERROR_RESET_PASSED,
    accepted,
    failed,
    parse_snapshot,
    snapshot_to_wire,
)
from louise.storage.limits_cache import LimitsCache
from louise.storage.limits_liveness import Holder

H = 3600


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "LOUISE_STATE_DIR": str(tmp_path / "state"),
        "LOUISE_CONFIG": str(tmp_path / "config" / "config.toml"),
    }


@pytest.fixture
def cache(env: dict[str, str]) -> LimitsCache:
    return LimitsCache(Path(env["LOUISE_STATE_DIR"]) / "limits.json")


def louise(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "louise.cli", "inspect", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def metered(now: float, used: float = 82, resets_in: int = 2 * H) -> dict[str, Any]:
    return {
        "defaultBucketId": "requests",
        "buckets": [
            {
                "id": "requests",
                "label": "Requests",
                "windows": [
                    {"usedPercent": used, "windowDurationMins": 300,
                     "resetsAt": int(now) + resets_in},
                ],
            }
        ],
    }


def rows(stdout: str) -> dict[str, list[str]]:
    """The table's data rows by agent, split on runs of two or more spaces."""
    import re

    lines = stdout.splitlines()
    assert lines[0].split() == ["AGENT", "STATUS", "LABEL", "UPDATED", "NOTE"]
    return {line.split()[0]: re.split(r"\s{2,}", line.strip()) for line in lines[1:] if line}


def test_empty_machine_says_nothing_was_observed(env: dict[str, str], tmp_path: Path) -> None:
    result = louise(env)
    assert result.returncode == 0, result.stderr
    assert "No account limits have been observed yet" in result.stdout
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "state").exists()  # inspecting writes nothing


def test_empty_machine_json(env: dict[str, str]) -> None:
    result = louise(env, "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert all(agent["status"] == "not_observed" for agent in document["agents"])
    assert document["cache"].endswith("limits.json")


def test_table_shows_live_stale_and_expired_agents(env: dict[str, str], cache: LimitsCache) -> None:
    now = time.time()
    cache.record_state("codex", accepted("codex", parse_snapshot(metered(now)), now - 120))
    cache.add_holder("codex")  # this test process: alive while the CLI runs
    cache.record_state("claude", accepted("claude", parse_snapshot(metered(now, 10)), now - 2 * H))
    expired = parse_snapshot(metered(now, 50, resets_in=-60))
    cache.record_state("gemini", accepted("gemini", expired, now - 3 * H))
    cache.add_holder("gemini")

    result = louise(env)
    assert result.returncode == 0, result.stderr
    table = rows(result.stdout)
    assert table["codex"] == ["codex", "fresh", "limits Requests 18%/5h ↻2h", "2m ago"]
    assert table["claude"] == [
        "claude", "stale", "limits Requests 90%/5h ↻2h stale", "2h ago", ERROR_NO_LIVE_SESSION
    ]
    assert table["gemini"][:2] == ["gemini", "stale"]
    assert table["gemini"][-1] == ERROR_RESET_PASSED


def test_json_output(env: dict[str, str], cache: LimitsCache) -> None:
    now = time.time()
    snapshot = parse_snapshot(metered(now))
    cache.record_state("codex", failed(accepted("codex", snapshot, now - 60), "read failed"))
    cache.add_holder("codex")
    result = louise(env, "--json", "codex")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert [agent["agent"] for agent in document["agents"]] == ["codex"]
    (codex,) = document["agents"]
    assert codex["status"] == "stale"
    assert codex["label"] == "limits Requests 18%/5h ↻2h stale"
    assert codex["level"] == "warning"
    assert codex["error"] == "read failed"
    assert codex["updatedAt"] == pytest.approx(now - 60)
    assert codex["updatedAgo"] == "1m ago"
    assert codex["snapshot"] == snapshot_to_wire(snapshot)
    assert document["warnings"] == []


def test_named_agents_only(env: dict[str, str], cache: LimitsCache) -> None:
    now = time.time()
    for name in ("codex", "claude"):
        cache.record_state(name, accepted(name, parse_snapshot({"buckets": []}), now))
    result = louise(env, "claude")
    assert result.returncode == 0, result.stderr
    assert list(rows(result.stdout)) == ["claude"]


def test_unknown_agent_is_an_error(env: dict[str, str], cache: LimitsCache) -> None:
    now = time.time()
    cache.record_state("codex", accepted("codex", parse_snapshot({"buckets": []}), now))
    result = louise(env, "codex", "nope")
    assert result.returncode == 2
    assert result.stdout == ""
    assert "unknown agent 'nope'" in result.stderr
    assert "codex" in result.stderr  # lists what is known
    assert louise(env, "--json", "nope").returncode == 2


def test_unknown_agent_on_an_empty_machine(env: dict[str, str]) -> None:
    result = louise(env, "codex")
    assert result.returncode == 2
    assert "unknown agent 'codex'" in result.stderr


def test_corrupt_cache_warns_and_does_not_crash(env: dict[str, str], cache: LimitsCache) -> None:
    cache.path.parent.mkdir(parents=True)
    cache.path.write_bytes(b'{"version": 1, "agents": {"codex": ')
    result = louise(env)
    assert result.returncode == 0
    assert "Traceback" not in result.stderr
    assert str(cache.path) in result.stderr and "corrupt" in result.stderr
    assert "No account limits have been observed yet" in result.stdout
    as_json = json.loads(louise(env, "--json").stdout)
    assert len(as_json["warnings"]) == 1


def test_dead_holder_reads_as_stale(env: dict[str, str], cache: LimitsCache) -> None:
    now = time.time()
    cache.record_state("codex", accepted("codex", parse_snapshot(metered(now)), now))
    document = json.loads(cache.path.read_text())
    document["agents"]["codex"]["holders"] = [
        {"pid": os.getpid(), "start": "a different process"}
    ]
    cache.path.write_text(json.dumps(document))
    assert LimitsCache(cache.path).load().holders["codex"] == (
        Holder(os.getpid(), "a different process"),
    )
    result = louise(env, "codex")
    assert rows(result.stdout)["codex"][1] == "stale"


def test_detail_view(env: dict[str, str], cache: LimitsCache) -> None:
    now = time.time()
    cache.record_state("codex", accepted("codex", parse_snapshot(metered(now)), now))
    cache.add_holder("codex")
    result = louise(env, "--detail", "codex")
    assert result.returncode == 0, result.stderr
    assert "### Requests (requests) [default]" in result.stdout
    assert "18% left · 82% used" in result.stdout


def test_broken_config_warns_and_falls_back_to_the_cache(
    env: dict[str, str], cache: LimitsCache
) -> None:
    config = Path(env["LOUISE_CONFIG"])
    config.parent.mkdir(parents=True)
    config.write_text("this is = = not toml\n")
    now = time.time()
    cache.record_state("codex", accepted("codex", parse_snapshot({"buckets": []}), now))
    result = louise(env)
    assert result.returncode == 0
    assert "Traceback" not in result.stderr
    assert "config" in result.stderr
    assert len([line for line in result.stderr.splitlines() if "config" in line]) == 1
    assert "codex" in rows(result.stdout)


def test_config_agents_are_listed_without_building_the_config_models(
    env: dict[str, str], cache: LimitsCache
) -> None:
    """Issue 14 item 8: inspect reads the config's Agent names with tomllib alone (the
    pydantic models were most of its start-up time), in load_config's order."""
    config = Path(env["LOUISE_CONFIG"])
    config.parent.mkdir(parents=True)
    config.write_text('[agents.zed]\ncommand = "zed-acp"\n\n[agents.alpha]\ncommand = "a"\n')
    now = time.time()
    cache.record_state("codex", accepted("codex", parse_snapshot({"buckets": []}), now))
    probe = ("import sys; from louise.cli.main import main; code = main(['inspect', '--json']); "
             "print('CONFIG MODELS' if 'louise.config.model' in sys.modules else 'NO MODELS', "
             "file=sys.stderr); sys.exit(code)")
    result = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert "NO MODELS" in result.stderr
    names = [agent["agent"] for agent in json.loads(result.stdout)["agents"]]
    from louise.config.loading import load_config

    assert names[:3] == list(load_config(Path(env["LOUISE_CONFIG"])).agents)
    assert names == ["zed", "alpha", "demo", "codex"]


def test_inspect_imports_only_what_it_uses(env: dict[str, str], cache: LimitsCache) -> None:
    """Issue 14 item 8: `louise inspect` imports no other verb's module, no `logging` (it
    logs only when it loads the whole config), no subprocess and none of the limits modules
    it does not use; the label and the detail view are still complete."""
    config = Path(env["LOUISE_CONFIG"])
    config.parent.mkdir(parents=True)
    config.write_text('[agents.codex]\ncommand = "codex-acp"\n')
    cache.record_state("codex", accepted("codex", parse_snapshot(metered(time.time())),
                                         time.time()))
    unwanted = ["logging", "subprocess", "decimal", "louise.config.model", "louise.limits.alerts",
                "louise.limits.pace", "louise.limits.capability",
                *(f"louise.cli.commands.{verb}" for verb in
                  ("chat", "demo", "agents", "sessions", "login", "logout", "limits",
                   "permissions", "export", "proxy"))]
    probe = ("import sys; from louise.cli.main import main; code = main(['inspect', '--detail']); "
             f"print('LOADED', [m for m in {unwanted!r} if m in sys.modules], file=sys.stderr); "
             "sys.exit(code)")
    result = subprocess.run([sys.executable, "-P", "-c", probe], env=env, capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert "LOADED []" in result.stderr
    assert "limits Requests" in result.stdout
    assert "## Buckets" in result.stdout
    assert "Updated: " in result.stdout and " UTC " in result.stdout


def test_inspect_without_a_config_reads_no_toml(env: dict[str, str]) -> None:
    """Issue 25 item 5: with no config file there is nothing to parse, so `tomllib` (a few
    ms of a start that should cost about what Python's does) is not imported."""
    assert not Path(env["LOUISE_CONFIG"]).exists()
    probe = ("import sys; from louise.cli.main import main; code = main(['inspect']); "
             "print('TOML' if 'tomllib' in sys.modules else 'NO TOML', file=sys.stderr); "
             "sys.exit(code)")
    result = subprocess.run([sys.executable, "-P", "-c", probe], env=env, capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert "NO TOML" in result.stderr


def test_a_config_the_fast_reader_cannot_read_still_warns_through_the_sanitizer(
    env: dict[str, str], cache: LimitsCache
) -> None:
    """inspect sets up logging only for the full config load: what that load logs still
    comes out as `louise: warning: …` lines (LouiseLM settings louise ignores)."""
    config = Path(env["LOUISE_CONFIG"])
    config.parent.mkdir(parents=True)
    # Not a table of Agent tables: the fast reader gives up, the full load reads it.
    config.write_text('agents = "nope"\n')
    result = louise(env)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("louise: warning: config not read")
