"""Permission requests louise cannot read, in a real Neovim: the agent gets an error, the
person gets no float, no error and no stack (not even in the engine's stderr), and the
agent's log (:LouiseLog) says what was refused."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import Driver
from tests.e2e.test_permissions import turn_done

pytestmark = pytest.mark.e2e
SCRIPT = Path(__file__).resolve().parents[1] / "fakes" / "script_agent.py"


def test_a_permission_request_of_the_wrong_shape_shows_no_error_stack(nvim: Driver) -> None:
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, agents = {script = {"
             " command = select(1, ...), args = {(select(2, ...))}}}})",
             sys.executable, str(SCRIPT))
    nvim.nvim.command("LouiseChat script")
    key = str(nvim.wait("return require('louise.chat').last"))
    nvim.wait_status("ready", key)
    malformed = [
        {"toolCall": {"toolCallId": "c1", "title": "T", "kind": "edit"}, "options": 5},
        {"toolCall": {"toolCallId": "c2", "title": "T", "kind": "edit", "content": 7},
         "options": [{"optionId": "yes", "name": "Yes", "kind": "allow_once"}]},
    ]
    nvim.prompt(json.dumps([{"request": "session/request_permission", "params": params}
                            for params in malformed]), key)
    turn_done(nvim, key)
    assert nvim.chat_text(key).count('"code": -32602') == 2  # the agent was told, twice
    assert nvim.lua("return require('louise.permission').current") is None
    messages = str(nvim.nvim.exec_lua("return vim.fn.execute('messages')"))
    assert "Traceback" not in messages and "stack traceback" not in messages, messages
    stderr = "\n".join(nvim.lua("return require('louise.engine').stderr"))
    assert "Traceback" not in stderr, stderr
    nvim.nvim.command("LouiseLog")
    log = nvim.wait("for _, b in ipairs(vim.api.nvim_list_bufs()) do"
                    " if vim.api.nvim_buf_get_name(b):find('louise%-log://') then"
                    " return table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\\n')"
                    " end end")
    assert "a permission request louise cannot read (options must be a list, not int)" in log
    assert "Traceback" not in log, log
