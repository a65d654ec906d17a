"""A LouiseLM `setup{}` works as it is: two agents with provider tables (routes and a
prefix map) and LouiseLM's other settings; louise chats with both (the demo agent behind
each) and says once, per setting, what it ignores."""

from __future__ import annotations

import sys

import pytest

from tests.e2e.conftest import Driver
from tests.e2e.test_help_and_health import checkhealth, entry, section

pytestmark = pytest.mark.e2e

# As a LouiseLM user writes it (its README and help), with the demo agent as the command.
LOUISELM_SETUP = """
local python = ...
local demo = { '-P', '-m', 'louise.demo_agent' }
require('louise').setup({
  python = vim.env.LOUISE_PYTHON,
  keymaps = false,
  skills = { paths = { '~/.agents/skills' }, policy = 'native' },
  context = { instructions_file = 'AGENTS.md' },
  agents = {
    claude = {
      command = python, args = demo,
      provider = { option = 'model', prefixes = { ['demo-'] = 'Anthropic' } },
      skills = { policy = 'native' },
      latest = { command = { 'npm', 'view', 'claude-agent-acp', 'version' } },
      version = { 'claude-agent-acp', '--version' },
      options = { _meta = { claudeCode = { options = { maxThinkingTokens = 1024 } } } },
    },
    codex = {
      command = python, args = demo, env = { CODEX_HOME = '/tmp/codex-home' },
      provider = {
        { provider = 'OpenAI', options = { model = 'demo-fast' } },
        { provider = 'GitHub Copilot', options = { model = 'demo-smart' } },
      },
      skills = { policy = 'inject' },
      transcript_layout = 'codex',
      capabilities = { 'rust' },
      auto = { model = 'model', default = 'demo-fast' },
    },
  },
  default_agent = 'claude',
})
"""


def chat_with(nvim: Driver, agent: str, text: str) -> str:
    nvim.nvim.command(f"LouiseNew {agent}")
    key = str(nvim.wait("local c = require('louise.chat'); local found;"
                        " for k, s in pairs(c.chats) do if s.agent == ... then found = k end end;"
                        " return found", agent))
    nvim.wait_status("ready", key)
    nvim.run_prompt(text, key)
    return key


def test_a_louiselm_setup_chats_with_both_agents(nvim: Driver) -> None:
    nvim.lua(LOUISELM_SETUP, sys.executable)
    claude = chat_with(nvim, "claude", "hello claude")
    codex = chat_with(nvim, "codex", "hello codex")
    assert "You wrote: *hello claude*" in nvim.chat_text(claude)
    assert "You wrote: *hello codex*" in nvim.chat_text(codex)
    # Not the fallback of a rejected config: no error, and one warning per ignored setting.
    # What was said in full (the command line shows one line of it: :LouiseNotices).
    messages = "\n".join(nvim.lua("return vim.tbl_map(function(n) return n.text end,"
                                   " require('louise.notice').recent)"))
    assert "configuration error" not in messages
    for ignored in ("skills", "agents.claude.skills, agents.codex.skills",
                    "agents.claude.latest", "agents.claude.version",
                    "agents.codex.transcript_layout", "agents.codex.capabilities",
                    "agents.codex.auto"):
        assert messages.count(f"\n  {ignored}: ") == 1, (ignored, messages)
    # Said once, not on every line (issue 23).
    assert messages.count("LouiseLM settings louise does not use") == 1, messages
    assert messages.count("setup{}") == 1, messages
    # options._meta and context.instructions_file are louise's settings too: no warning.
    for used in ("context", "agents.claude.options"):
        assert f"\n  {used}: " not in messages, messages


def test_checkhealth_names_what_a_louiselm_setup_leaves_out(nvim: Driver) -> None:
    nvim.lua(LOUISELM_SETUP, sys.executable)
    config = section(checkhealth(nvim), "Configuration")
    skills = entry(config, "agents.claude.skills, agents.codex.skills")
    assert skills[0].startswith("- ⚠️ WARNING"), skills
    assert not [line for line in config if "ERROR" in line], config
    assert not [line for line in config if "unknown option" in line], config
    agents = section(checkhealth(nvim), "Agents")
    assert entry(agents, "claude (default)") and entry(agents, "codex")


def test_louiselm_command_names_work_with_a_note_once(nvim: Driver) -> None:
    nvim.lua(LOUISELM_SETUP, sys.executable)
    nvim.nvim.command("LouiselmChat claude")
    key = str(nvim.wait("local c = require('louise.chat'); return c.last"))
    nvim.wait_status("ready", key)
    nvim.nvim.command("LouiselmChat claude")
    nvim.nvim.command("LouiselmSessionNew codex")
    nvim.wait("for _, s in pairs(require('louise.chat').chats) do"
              " if s.agent == 'codex' then return true end end")
    messages = str(nvim.nvim.command_output("messages"))
    assert messages.count(":LouiselmChat is :LouiseChat in louise") == 1, messages
    assert messages.count(":LouiselmSessionNew is :LouiseNew in louise") == 1, messages
    # The older spelling too.
    assert nvim.lua("return vim.fn.exists(':LouiselmNewSession') == 2")


def test_louiselm_keymaps_true_keeps_its_leader_l_prefix(nvim: Driver) -> None:
    nvim.lua(LOUISELM_SETUP.replace("keymaps = false", "keymaps = true"), sys.executable)
    maps = nvim.lua("local out = {}; for _, m in ipairs(vim.api.nvim_get_keymap('n')) do"
                    " out[m.lhs] = m.rhs or '' end; return out")
    leader = "\\"  # mapleader unset: a backslash
    assert "LouiseChat" in maps[f"{leader}lc"], maps
    assert "LouiseResume!" in maps[f"{leader}lR"], maps
    assert "LouiseLimits" in maps[f"{leader}lL"], maps
    assert f"{leader}ac" not in maps  # not louise's own prefix as well


def test_a_plain_louise_setup_defines_no_louiselm_names(nvim: Driver) -> None:
    nvim.lua("require('louise').setup({ python = vim.env.LOUISE_PYTHON, keymaps = true })")
    assert nvim.lua("return vim.fn.exists(':LouiselmChat')") == 0
    assert nvim.lua("return vim.fn.maparg('<leader>ac', 'n') ~= ''")
