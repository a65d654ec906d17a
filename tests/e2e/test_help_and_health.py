"""`:help louise` and `:checkhealth louise` in a real headless Neovim with the real plugin."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

import louise
from tests.e2e.conftest import ROOT, Driver

pytestmark = pytest.mark.e2e

DOC = ROOT / "doc"
CURRENT_LINE = "return vim.api.nvim_get_current_line()"


def checkhealth(nvim: Driver) -> list[str]:
    """Run `:checkhealth louise` and return the report buffer's lines."""
    nvim.nvim.command("checkhealth louise")
    lines = [str(line) for line in nvim.lua(
        "return vim.api.nvim_buf_get_lines(0, 0, -1, false)")]
    assert nvim.lua("return vim.bo.filetype") == "checkhealth"
    assert not any("Failed to run healthcheck" in line for line in lines), "\n".join(lines)
    return lines


def section(lines: list[str], title: str) -> list[str]:
    """The report lines under a `title ~` heading, up to the next heading."""
    start = lines.index(f"{title} ~") + 1
    end = next((i for i in range(start, len(lines)) if lines[i].endswith(" ~")), len(lines))
    return lines[start:end]


def entry(lines: list[str], needle: str) -> list[str]:
    """The report entry (`- …` with its ADVICE lines) whose first line contains `needle`."""
    for i, line in enumerate(lines):
        if line.startswith("- ") and needle in line:
            end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("- ")),
                       len(lines))
            return lines[i:end]
    raise AssertionError(f"no entry with {needle!r} in:\n" + "\n".join(lines))


def setup(nvim: Driver, opts_lua: str) -> None:
    nvim.lua("require('louise').setup(vim.tbl_extend('force', {python = vim.env.LOUISE_PYTHON}, "
             + opts_lua + "))")


# --------------------------------------------------------------------------- help


def test_help_louise_opens_the_help_and_command_tags_resolve(nvim: Driver) -> None:
    nvim.nvim.command("help louise")
    assert nvim.lua("return vim.bo.buftype") == "help"
    assert Path(nvim.lua("return vim.api.nvim_buf_get_name(0)")) == DOC / "louise.txt"
    assert "*louise*" in nvim.lua(CURRENT_LINE)

    nvim.nvim.command("help :LouiseLimits")
    assert "*:LouiseLimits*" in nvim.lua(CURRENT_LINE)
    nvim.nvim.command("help louise-statusline")
    assert "*louise-statusline*" in nvim.lua(CURRENT_LINE)


def test_every_command_of_the_plugin_has_a_help_tag(nvim: Driver) -> None:
    commands = nvim.lua("return vim.tbl_keys(vim.api.nvim_get_commands({builtin = false}))")
    louise = sorted(c for c in commands if c.startswith("Louise"))
    assert "LouiseChat" in louise
    tags = {line.split("\t")[0] for line in (DOC / "tags").read_text().splitlines()}
    assert [c for c in louise if f":{c}" not in tags] == []


def test_every_link_in_the_help_resolves(nvim: Driver) -> None:
    text = (DOC / "louise.txt").read_text()
    runtime = Path(nvim.lua("return vim.env.VIMRUNTIME")) / "doc" / "tags"
    tags = {line.split("\t")[0]
            for file in (DOC / "tags", runtime)
            for line in file.read_text(errors="replace").splitlines()}
    links = set(re.findall(r"\|([^|\s]+)\|", text))
    assert links, "the help links to nothing"
    assert sorted(links - tags) == []


def test_doc_tags_is_up_to_date(nvim: Driver, tmp_path: Path) -> None:
    copy = tmp_path / "doc"
    copy.mkdir()
    for file in DOC.glob("*.txt"):
        shutil.copy(file, copy / file.name)
    nvim.nvim.command(f"helptags {copy}")
    assert (copy / "tags").read_text() == (DOC / "tags").read_text(), (
        "doc/tags is stale: regenerate it with nvim -u NONE -c 'helptags doc' -c q")


# --------------------------------------------------------------------------- health


def test_checkhealth_reports_the_python_package_and_starts_nothing(nvim: Driver) -> None:
    lines = checkhealth(nvim)
    assert section(lines, "Neovim")[0].startswith("- ✅ OK Neovim ")
    python = section(lines, "Python")
    assert f"- ✅ OK louise {louise.__version__}: {Path(louise.__file__)}" in python, python
    assert any(line.startswith("- ✅ OK pynvim ") for line in python), python
    assert entry(section(lines, "Agents"), "demo")[0].startswith("- ✅ OK demo")
    assert not [line for line in lines if "ERROR" in line or "WARNING" in line], lines
    # Neither louise's Python process nor an agent was started by the check.
    assert nvim.lua("return require('louise.engine').starts") == 0


def test_checkhealth_reports_a_missing_agent_command_with_a_hint(nvim: Driver) -> None:
    setup(nvim, "{agents = {missing = {command = 'louise-no-such-agent'}}}")
    lines = checkhealth(nvim)
    missing = entry(section(lines, "Agents"), "missing")
    assert missing[0].startswith("- ❌ ERROR missing"), missing
    assert "louise-no-such-agent" in missing[0]
    assert "ADVICE:" in missing[1]
    assert any("agents.missing.command" in line for line in missing[2:]), missing
    assert entry(section(lines, "Agents"), "demo")[0].startswith("- ✅ OK demo")


def test_checkhealth_names_the_package_of_a_missing_known_agent(nvim: Driver) -> None:
    setup(nvim, "{agents = {claude = {command = 'claude-agent-acp',"
                " env = {PATH = '/nonexistent'}}}}")
    claude = entry(section(checkhealth(nvim), "Agents"), "claude")
    assert claude[0].startswith("- ❌ ERROR claude"), claude
    advice = " ".join(claude[1:])
    assert "npm install -g @agentclientprotocol/claude-agent-acp" in advice, claude
    assert "Node.js ≥ 22" in advice, claude


def test_checkhealth_reports_config_problems_with_their_field_paths(nvim: Driver) -> None:
    setup(nvim, "{fs = {read = 'yes'}, agents = {x = {command = 'sh', comand = 'sh'}},"
                " width = 'wide', agnets = {}}")
    config = section(checkhealth(nvim), "Configuration")
    assert entry(config, "setup{}: fs.read:")[0].startswith("- ❌ ERROR")
    assert entry(config, "setup{}: agents.x.comand: unknown setting")[0].startswith("- ❌ ERROR")
    assert any("did you mean 'command'" in line
               for line in entry(config, "agents.x.comand"))
    assert entry(config, "setup{}: width: expected a number")[0].startswith("- ❌ ERROR")
    assert entry(config, "setup{}: agnets: unknown option")[0].startswith("- ⚠️ WARNING")


def test_checkhealth_reads_config_toml_when_setup_has_no_engine_options(
        nvim: Driver, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[agents.x]\ncommand = "sh"\n[permissions]\ndefault = "allow"\n')
    nvim.lua("vim.env.LOUISE_CONFIG = ...", str(config))
    problem = entry(section(checkhealth(nvim), "Configuration"), "permissions.default")
    assert problem[0].startswith(f"- ❌ ERROR {config}: permissions.default: unsupported value")


def test_checkhealth_does_not_hang_on_an_agent_that_never_answers_version(
        nvim: Driver, tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    agent = tmp_path / "silent-agent"
    agent.write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexec sleep 600\n')
    agent.chmod(0o755)
    setup(nvim, f"{{agents = {{silent = {{command = '{agent}'}}}}}}")
    silent = entry(section(checkhealth(nvim), "Agents"), "silent")
    assert silent[0].startswith(f"- ✅ OK silent (default): {agent} (no answer to --version")
    assert calls.read_text().splitlines() == ["--version"], "only ever asked for its version"


def test_checkhealth_reports_the_state_directory_and_a_corrupt_limits_cache(
        nvim: Driver) -> None:
    state = Path(os.environ["LOUISE_STATE_DIR"])  # set for every test (tests/conftest.py)
    lines = section(checkhealth(nvim), "State")
    assert entry(lines, f"state directory {state} ($LOUISE_STATE_DIR) does not exist yet")
    assert entry(lines, "limits cache not created yet")[0].startswith("- ✅ OK")

    state.mkdir(parents=True)
    (state / "limits.json").write_text("{not json")
    lines = section(checkhealth(nvim), "State")
    assert entry(lines, f"state directory is writable: {state}")[0].startswith("- ✅ OK")
    assert entry(lines, "truncated or corrupt")[0].startswith("- ⚠️ WARNING")


def test_checkhealth_with_the_rplugin_host_checks_the_manifest(nvim: Driver) -> None:
    nvim.lua("vim.g.python3_host_prog = vim.env.LOUISE_PYTHON")
    setup(nvim, "{host = 'rplugin'}")
    python = section(checkhealth(nvim), "Python")
    assert entry(python, "(from g:python3_host_prog")[0].startswith("- ✅ OK Python ")
    manifest = entry(python, "remote plugin manifest does not list louise")
    assert manifest[0].startswith("- ❌ ERROR"), manifest
    assert any(":UpdateRemotePlugins" in line for line in manifest[1:]), manifest

    setup(nvim, "{host = 'rplugin-typo'}")
    config = section(checkhealth(nvim), "Configuration")
    typo = entry(config, 'setup{}: host: expected "rplugin" or "auto", got "rplugin-typo"')
    assert typo[0].startswith("- ❌ ERROR")


def test_checkhealth_says_whether_an_agent_is_signed_in(nvim: Driver) -> None:
    """Issue 23: :checkhealth did not say whether an agent is signed in."""
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, agents = {two ="
             " {command = vim.env.LOUISE_PYTHON,"
             " args = {'-P', '-X', 'utf8', '-m', 'louise.demo_agent'}}}})")
    before = section(checkhealth(nvim), "Agents")
    assert entry(before, "two: sign-in not checked")[0].startswith("- two:"), before
    assert ":LouiseSignIn two" in " ".join(entry(before, "two: sign-in"))
    nvim.nvim.command("bwipeout")
    nvim.nvim.command("LouiseChat two")
    nvim.wait_status("ready")
    after = section(checkhealth(nvim), "Agents")
    assert entry(after, "two: signed in")[0].startswith("- ✅ OK"), after
