"""End to end: prompts sent during a turn show as queued under the transcript (above
the prompt's text); :LouiseQueue edits, removes, sends now or steers them."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Driver
from tests.e2e.test_chat import open_chat
from tests.e2e.test_sign_in import stub_selects

pytestmark = pytest.mark.e2e
SLOW = "/scenario slow delay_ms=50"


def queue_lines(nvim: Driver, key: str) -> list[str]:
    return list(nvim.lua("return require('louise.chat.queue').lines(...)", key))


def wait_queue(nvim: Driver, key: str, lines: list[str]) -> None:
    nvim.wait("return vim.deep_equal(require('louise.chat.queue').lines(select(1, ...)),"
              " select(2, ...))", key, lines)


def test_queue_shown_edited_removed_and_steered(nvim: Driver) -> None:
    key = open_chat(nvim)
    nvim.prompt(SLOW)
    nvim.wait_status("prompting")
    for text in ("second", "third"):
        nvim.lua("local c = require('louise.chat'); local t, k = ...;"
                 " vim.api.nvim_buf_set_lines(c.chats[k].prompt, 0, -1, false, {t});"
                 " c.submit(k)", text, key)
    how = "  :LouiseQueue to edit, remove, send now or steer"
    wait_queue(nvim, key, ["⧗ queued 1: second", "⧗ queued 2: third", how])
    # One list: each prompt × steer, send now, edit, remove.
    stub_selects(nvim, [8])  # "third · remove it"
    nvim.nvim.command("LouiseQueue")
    wait_queue(nvim, key, ["⧗ queued 1: second", how])
    stub_selects(nvim, [3])  # "second · edit it"
    nvim.nvim.command("LouiseQueue")
    nvim.wait("return require('louise.chat.queue').edit_buf ~= nil")
    nvim.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, {'second, edited'}); vim.cmd('write')")
    wait_queue(nvim, key, ["⧗ queued 1: second, edited", how])
    stub_selects(nvim, [1])  # "second, edited · steer it into the running turn"
    nvim.nvim.command("LouiseQueue")
    nvim.wait_status("ready")
    wait_queue(nvim, key, [])
    text = nvim.chat_text()
    assert text.count("▌ You") == 2
    assert "▌ You\nsecond, edited" in text and "Steered: second, edited" in text


def test_send_now_cancels_the_running_turn(nvim: Driver) -> None:
    key = open_chat(nvim)
    nvim.prompt(SLOW)
    nvim.wait_status("prompting")
    nvim.prompt("hello next")
    wait_queue(nvim, key, ["⧗ queued 1: hello next",
                           "  :LouiseQueue to edit, remove, send now or steer"])
    stub_selects(nvim, [2])  # "hello next · send it now"
    nvim.nvim.command("LouiseQueue")
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return s.status.turns_done == 2 and s.status.status == 'ready'")
    text = nvim.chat_text()
    assert "cancelled" in text and "You wrote: *hello next*" in text
    assert queue_lines(nvim, key) == []
