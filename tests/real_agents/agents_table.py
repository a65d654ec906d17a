"""The README's table of the agents louise is tested with, made from the suite itself.

    .venv/bin/python -m tests.real_agents.agents_table      # prints the table

Each column is a check of the real-agent suite (`COLUMNS`: test module and function); an
agent has a ✓ where that check runs for it, as its `parametrize` names the agents (a list,
or `AGENTS`, `FULL` of harness.py). The versions come from what the suite installs
(npm/package-lock.json, install.py). `tests/unit/test_agents_table.py` compares the table
in README.md with this one, so the README cannot claim a check the suite does not run; a
check that runs passes in CI or the suite fails.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

from tests.real_agents import harness, install

HERE = Path(__file__).resolve().parent
BEGIN = "<!-- agents-table: made by tests/real_agents/agents_table.py -->"
END = "<!-- /agents-table -->"

# (column, what it checks, module, test function)
COLUMNS: tuple[tuple[str, str, str, str], ...] = (
    ("turns", "a streamed reply, listed and exported", "test_cli",
     "test_a_text_turn_streams_is_listed_exported_and_continued"),
    ("permissions", "an edit allowed and one refused", "test_cli",
     "test_a_refused_edit_leaves_the_file_alone"),
    ("new files", "a new file written", "test_cli", "test_a_new_file_is_written"),
    ("diffs", "the whole proposed file in the diff tab", "test_nvim",
     "test_one_chat_shows_the_reply_once_allows_an_edit_and_a_command_and_diffs_the_file"),
    ("commands", "a command allowed from the float", "test_nvim",
     "test_one_chat_shows_the_reply_once_allows_an_edit_and_a_command_and_diffs_the_file"),
    ("cancel", "Ctrl-C cancels the turn at the agent", "test_cli",
     "test_ctrl_c_cancels_the_turn_and_tells_the_agent"),
    ("resume", ":LouiseResume loads a session, a further turn", "test_nvim",
     "test_louiseresume_loads_a_session_and_takes_a_further_turn"),
    ("continue", "louise chat --continue", "test_cli",
     "test_a_text_turn_streams_is_listed_exported_and_continued"),
    ("quota", "its quota signal shown", "", ""),  # QUOTA below: one test per agent
)
QUOTA = {"claude": ("test_quota", "test_louise_chat_then_inspect_shows_the_5h_and_7d_windows"),
         "gemini": ("test_more_agents", "test_gemini_at_its_quota_is_reached")}
PIP_AGENTS = {"vibe": ("mistral-vibe", install.VIBE_VERSION, "vibe-acp")}


def _agents_of(node: ast.FunctionDef) -> tuple[str, ...]:
    """The agents a test runs for: its parametrize of `agent`/`nvim_agent`, else the
    `agent` fixture's default (FULL); () for a test of no agent fixture."""
    for decorator in node.decorator_list:
        if not (isinstance(decorator, ast.Call) and decorator.args
                and isinstance(decorator.args[0], ast.Constant)
                and decorator.args[0].value in ("agent", "nvim_agent")):
            continue
        value = decorator.args[1]
        if isinstance(value, ast.Name):
            return tuple(getattr(harness, value.id))
        return tuple(ast.literal_eval(value))
    arguments = {a.arg for a in node.args.args}
    return harness.FULL if "agent" in arguments else ()


def agents_of(module: str, function: str) -> tuple[str, ...]:
    tree = ast.parse((HERE / f"{module}.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == function:
            return _agents_of(node)
    raise LookupError(f"{module}.{function} is not a test of the suite any more")


def versions() -> dict[str, tuple[str, str, str]]:
    """agent -> (package, version, how it is started) of what the suite installs."""
    lock = json.loads((install.NPM_DIR / "package-lock.json").read_text(encoding="utf-8"))
    out = {}
    for name, package in install.NPM_PACKAGES.items():
        entry = lock["packages"][f"node_modules/{package}"]
        bin_name = next(iter(entry.get("bin") or {package.rsplit("/", 1)[-1]: ""}))
        command = " ".join([bin_name, *install.NPM_ARGS.get(name, [])])
        version = entry["version"]
        out[name] = (package, version, command)
    out.update(PIP_AGENTS)
    return out


def table() -> str:
    known = versions()
    head = ["agent", "version", "install", *(column for column, *_ in COLUMNS)]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    ticks = {column: agents_of(module, function) for column, _, module, function in COLUMNS
             if module}
    # Each quota test is its agent's own (a fixture of its own, or a parametrize of one).
    ticks["quota"] = tuple(agent for agent, (module, function) in QUOTA.items()
                           if agents_of(module, function) in ((), (agent,)))
    for agent in harness.AGENTS:
        package, version, command = known[agent]
        how = (f"`pip install {package}=={version}`" if agent in PIP_AGENTS
               else f"`npm install {package}@{version}`")
        cells = ["✓" if agent in ticks[column] else "" for column, *_ in COLUMNS]
        lines.append(f"| {agent} (`{command}`) | {version} | {how} | " + " | ".join(cells)
                     + " |")
    legend = "; ".join(f"**{column}**: {what}" for column, what, *_ in COLUMNS)
    return "\n".join([BEGIN, *lines, "", legend + ".", END])


def readme_table(readme: str) -> str:
    """The table as the README has it (between the markers)."""
    start, end = readme.index(BEGIN), readme.index(END)
    return readme[start:end + len(END)]


if __name__ == "__main__":
    print(table())
