"""End to end: :LouiseModel for an agent that offers its models the legacy way, and
per-Agent defaults from setup{}."""

from __future__ import annotations

import sys

import pytest

from tests.e2e.conftest import Driver
from tests.e2e.test_sign_in import stub_selects

pytestmark = pytest.mark.e2e


def test_model_picker_and_defaults_for_a_legacy_models_agent(nvim: Driver) -> None:
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, agents = {legacy = {"
             " command = ..., args = {'-P', '-m', 'louise.demo_agent'},"
             " env = {LOUISE_DEMO_MODELS = 'legacy'},"
             " defaults = {model = 'Demo Smart', mode = 'ask'}}}, default_agent = 'legacy'})",
             sys.executable)
    nvim.nvim.command("LouiseChat legacy")
    nvim.wait("return require('louise.chat').last")
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return s.status and s.status.model == 'demo-smart' and s.status.mode == 'ask'")
    stub_selects(nvim, [1])
    nvim.nvim.command("LouiseModel")
    nvim.wait("local c = require('louise.chat'); return c.chats[c.last].status.model"
              " == 'demo-fast'")
    (shown,) = nvim.lua("return _G.louise_test_selects")
    assert shown["prompt"] == "louise: Model"
    assert shown["items"] == ["  Demo Fast", "● Demo Smart"]
    nvim.run_prompt("/scenario settings")
    assert "Mode `ask`, model `demo-fast`" in nvim.chat_text()
