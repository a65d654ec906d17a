"""`python3 dev.py test` runs mypy and the independent test groups as concurrent pytest
processes, then prints each group's output in order, a time table and one closing line
(issue 21 item 17). Here against a scratch root with two tiny groups whose tests can only
pass when both groups run at the same time (each waits for the other's file)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.unit.test_nvim_dev_py import load_dev

WAITS_FOR_THE_OTHER = '''
import os, time
from pathlib import Path

def test_{me}_runs_while_{other}_runs():
    Path(os.environ["MEET"], "{me}").touch()
    deadline = time.monotonic() + 120
    while not Path(os.environ["MEET"], "{other}").exists():
        assert time.monotonic() < deadline, "the other group never ran meanwhile"
        time.sleep(0.02)
'''


def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: bool) -> ModuleType:
    root = tmp_path / "root"
    for group, me, other in (("unit", "first", "second"), ("e2e", "second", "first")):
        folder = root / "tests" / group
        folder.mkdir(parents=True)
        (folder / f"test_{me}.py").write_text(WAITS_FOR_THE_OTHER.format(me=me, other=other))
    if failing:
        (root / "tests" / "e2e" / "test_broken.py").write_text(
            "def test_broken():\n    assert False\n\ndef test_fine():\n    pass\n")
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    dev = load_dev(root)
    monkeypatch.setattr(dev, "_python", lambda: Path(sys.executable))
    monkeypatch.setattr(dev, "GROUPS", [("unit + integration", ["tests/unit"], 1),
                                        ("e2e", ["tests/e2e"], 1)])
    meet = tmp_path / "meet"
    meet.mkdir()
    monkeypatch.setenv("MEET", str(meet))
    return dev


def test_the_groups_run_at_once_then_a_time_table_and_one_closing_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    dev = scratch(tmp_path, monkeypatch, failing=False)
    mypy = [sys.executable, "-c", "print('Success: no issues found in 1 source file')"]
    assert dev.run_groups(mypy, fast=True) == 0
    out = capsys.readouterr().out
    # Each group's own output, in the groups' order, after all have ended.
    first, second = out.index("─ unit + integration ─"), out.index("─ e2e ─")
    assert out.index("ended after") < first < second
    table = out[out.index("\ncheck "):].splitlines()
    rows = {line.split("  ")[0]: line for line in table[1:]}
    assert rows["mypy --strict"].split()[2] == "ok:"
    assert "ok: 1 passed" in rows["unit + integration"]
    assert "ok: 1 passed" in rows["e2e"]
    assert "load average" in rows["all at once"]
    for row in (rows["unit + integration"], rows["e2e"], rows["all at once"]):
        wall, cpu = row.split()[-2:]
        assert wall.isdigit() and cpu.isdigit(), row
    assert out.rstrip().splitlines()[-1] == "louise: 2 passed, 0 failed"
    assert (dev.VENV / "test-logs" / "e2e.log").read_text().count("passed") == 1


def test_a_failing_group_fails_the_run_and_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    dev = scratch(tmp_path, monkeypatch, failing=True)
    mypy = [sys.executable, "-c", "print('louise/x.py:1: error: no'); raise SystemExit(1)"]
    assert dev.run_groups(mypy, fast=True) == 1
    out = capsys.readouterr().out
    assert "louise: FAILED e2e: 1 failed, 2 passed (output above)" in out
    assert "louise: FAILED mypy --strict: exit 1 (output above)" in out
    assert "louise/x.py:1: error: no" in out
    # mypy's failure counts too: the closing line never says "0 failed" for a failed run.
    assert out.rstrip().splitlines()[-1] == "louise: 3 passed, 2 failed"


def test_real_agents_that_cannot_be_installed_fail_the_run_with_their_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    dev = scratch(tmp_path, monkeypatch, failing=False)
    monkeypatch.setattr(dev, "GROUPS", [*dev.GROUPS, ("real agents", ["tests/real"], 1)])
    line = "real agents: cannot install claude: registry unreachable"
    monkeypatch.setattr(dev, "_install_real_agents", lambda: line)
    mypy = [sys.executable, "-c", "print('Success: no issues found in 1 source file')"]
    assert dev.run_groups(mypy, fast=False) == 1
    out = capsys.readouterr().out
    assert f"louise: FAILED real agents: {line}" in out
    assert out.rstrip().splitlines()[-1] == "louise: 2 passed, 1 failed"
