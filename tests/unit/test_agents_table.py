"""README.md's table of the agents louise is tested with is the one the suite makes
(`tests/real_agents/agents_table.py`): a check claimed is a check the suite runs."""

from __future__ import annotations

from pathlib import Path

from tests.real_agents import agents_table, harness

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_table_is_the_suites() -> None:
    made = agents_table.table()
    assert agents_table.readme_table(README.read_text(encoding="utf-8")) == made, (
        "README.md's agents table differs from the suite's: paste "
        "`python -m tests.real_agents.agents_table` in its place")


def test_every_agent_of_the_suite_has_a_row_and_every_column_a_test() -> None:
    made = agents_table.table()
    for agent in harness.AGENTS:
        assert f"| {agent} (`" in made
    for _, _, module, function in agents_table.COLUMNS:
        if module:
            assert agents_table.agents_of(module, function), function
