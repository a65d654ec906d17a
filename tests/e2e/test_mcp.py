"""End to end: `setup{ mcp_servers = … }` reaches the demo agent's sessions."""

from __future__ import annotations

import shutil

import pytest

from tests.e2e.conftest import Driver

pytestmark = pytest.mark.e2e


def test_setup_mcp_servers_reach_the_session(nvim: Driver) -> None:
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, mcp_servers = {"
             " tools = {command = 'sh', args = {'-c', 'true'}},"
             " docs = {type = 'http', url = 'https://example.com/mcp'},"
             " legacy = {type = 'sse', url = 'https://example.com/sse'}}})")
    nvim.nvim.command("LouiseChat")
    nvim.wait("return require('louise.chat').last")
    nvim.wait_status("ready")
    nvim.run_prompt("/scenario mcp")
    text = nvim.chat_text()
    assert f"`tools` (stdio): `{shutil.which('sh')} -c true`" in text
    assert "`docs` (http): https://example.com/mcp" in text
    assert "mcp_servers.legacy; left out for demo" in text  # a note in the chat
