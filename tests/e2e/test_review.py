"""A turn's review and undo in a real Neovim, against the scripted fake agent writing files
itself (as claude and codex do) and from a shell command: the turn's changes line opens
the review on <CR>; `r` takes one hunk back and the file's buffer follows; a comment is
the next prompt; :LouiseUndo lists every later turn, asks once, restores; the person's
own save during the turn stays."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Driver
from tests.e2e.test_permissions import turn_done
from tests.integration.test_checkpoints import TWENTY, edited, self_write, shell

pytestmark = pytest.mark.e2e
SCRIPT = Path(__file__).resolve().parents[1] / "fakes" / "script_agent.py"
ALLOW_ALL = "{{kind = {'edit', 'execute'}, inside_workspace = false, decision = 'allow'}}"
CHANGES_LINE = ("local s = require('louise.chat').chats[...];"
                " for i, l in ipairs(vim.api.nvim_buf_get_lines(s.buf, 0, -1, false)) do"
                " if l:find('^± ') then return {i, l} end end")
REVIEW = ("for _, b in ipairs(vim.api.nvim_list_bufs()) do"
          " if vim.api.nvim_buf_get_name(b):find('^louise%-review://') then"
          " return vim.api.nvim_buf_get_lines(b, 0, -1, false) end end")


def work_dir(nvim: Driver) -> Path:
    return Path(str(nvim.lua("return vim.fn.getcwd()")))


def open_script_chat(nvim: Driver, rules: str | None = ALLOW_ALL) -> str:
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, agents = {script = {"
             " command = select(1, ...), args = {(select(2, ...))}}},"
             f" permissions = {{rules = {rules or '{}'}}}}})",
             sys.executable, str(SCRIPT))
    nvim.nvim.command("LouiseChat script")
    key = str(nvim.wait("return require('louise.chat').last"))
    nvim.wait_status("ready", key)
    return key


def run_turn(nvim: Driver, key: str, *steps: list[dict[str, Any]]) -> None:
    nvim.run_prompt(json.dumps([step for group in steps for step in group]), key)


def changes_line(nvim: Driver, key: str) -> tuple[int, str]:
    row, line = nvim.wait(CHANGES_LINE, key)
    return int(row), str(line)


def stub_select(nvim: Driver, *answers: str) -> None:
    """vim.ui.select as a person: record each question and its choices, answer in turn."""
    nvim.lua("_G.asked = {}; _G.answers = {...}; vim.ui.select = function(items, opts, done)"
             " table.insert(_G.asked, {prompt = opts.prompt, ids = vim.tbl_map(function(i)"
             " return i.id end, items)}); local want = table.remove(_G.answers, 1);"
             " for _, item in ipairs(items) do if item.id == want then return done(item) end"
             " end; done(nil) end", *answers)


def test_the_changes_line_opens_the_review_and_a_hunk_goes_back_with_its_buffer(
        nvim: Driver) -> None:
    notes = work_dir(nvim) / "notes.txt"
    notes.write_text(TWENTY)
    nvim.lua("vim.cmd('topleft split ' .. vim.fn.fnameescape(...))", str(notes))
    key = open_script_chat(nvim)
    after = edited(TWENTY, l2="agent two\n", l18="agent 18\n")
    run_turn(nvim, key, self_write(notes, after))
    row, line = changes_line(nvim, key)
    assert line == "± 1 file changed (+2 −2) · review"
    nvim.lua("local s = require('louise.chat').chats[select(1, ...)];"
             " vim.api.nvim_set_current_win(vim.fn.bufwinid(s.buf));"
             " vim.api.nvim_win_set_cursor(0, {select(2, ...), 0})", key, row)
    nvim.nvim.input("<CR>")
    review = nvim.wait(REVIEW)
    assert review[0] == "louise review · turn 1 of script · 1 file changed (+2 −2)"
    assert "modified notes.txt (+2 −2)" in review
    assert [text for text in review if text in
                                        ("-line 2", "+agent two")] == ["-line 2", "+agent two"]
    assert "+agent 18" in review
    assert nvim.lua("return vim.api.nvim_buf_get_name(0)").startswith("louise-review://")
    assert nvim.lua("return vim.api.nvim_get_current_line()").startswith("@@ -1,5 +1,5 @@"), \
        "the cursor starts on the first hunk"
    tabs = nvim.lua("return vim.api.nvim_eval_statusline(vim.o.tabline, {use_tabline = true}).str")
    assert "louise: review turn 1" in tabs and "louise: script 1" in tabs, tabs  # in words
    nvim.nvim.input("r")
    nvim.wait("local f = io.open((select(1, ...))); local t = f:read('*a'); f:close();"
              " return t == select(2, ...)", str(notes),
              edited(TWENTY, l18="agent 18\n"))
    nvim.wait("return vim.deep_equal(vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, -1,"
              " false)[2], 'line 2')", str(notes))
    assert nvim.lua("return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, -1, false)[18]",
                    str(notes)) == "agent 18", "the other hunk stays"
    states = nvim.wait("local v = require('louise.review').views; for _, view in pairs(v) do"
                       " local f = view.data.files[1]; if f.hunks[1].state == 'reverted' then"
                       " return {f.hunks[1].state, f.hunks[2].state} end end")
    assert states == ["reverted", "applied"]


def test_a_comment_on_a_hunk_is_the_next_prompt(nvim: Driver) -> None:
    notes = work_dir(nvim) / "notes.txt"
    notes.write_text(TWENTY)
    key = open_script_chat(nvim)
    run_turn(nvim, key, self_write(notes, edited(TWENTY, l2="agent two\n")))
    changes_line(nvim, key)
    nvim.nvim.command("LouiseReview")
    nvim.wait(REVIEW)
    nvim.lua("vim.ui.input = function(opts, done) _G.input_prompt = opts.prompt;"
             " done('Why this name?') end")
    before = nvim.turns_done(key)
    nvim.nvim.input("c")
    nvim.wait("return _G.input_prompt")
    assert nvim.lua("return _G.input_prompt") == "Comment on notes.txt:2: "
    nvim.nvim.input("S")
    nvim.wait("local s = require('louise.chat').chats[select(1, ...)];"
              " return s.status.turns_done > select(2, ...)", key, before)
    text = nvim.chat_text(key)
    assert "Review comments on your changes (turn 1):\n\nnotes.txt:2\n> -line 2\n" \
           "> +agent two\nWhy this name?" in text, text


def test_louiseundo_lists_every_later_turn_asks_once_and_restores(nvim: Driver) -> None:
    work = work_dir(nvim)
    notes = work / "notes.txt"
    notes.write_text(TWENTY)
    key = open_script_chat(nvim)
    run_turn(nvim, key, self_write(notes, edited(TWENTY, l3="turn one\n")))
    run_turn(nvim, key, shell("echo from-the-shell > shell-out.txt"))
    assert (work / "shell-out.txt").exists()
    stub_select(nvim, "undo", "tell")
    nvim.nvim.command("LouiseUndo 1")
    nvim.wait("return #_G.asked >= 2")
    question, tell = nvim.lua("return _G.asked")
    lines = question["prompt"].split("\n")
    assert lines[0] == "louise: undo?"
    assert lines[1].startswith("turn 2 of script:") and "1 file changed (+1 −0)" in lines[1]
    assert lines[3].startswith("turn 1 of script:") or lines[2].startswith("turn 1 of")
    assert "  revert notes.txt" in lines and "  remove shell-out.txt" in lines
    assert question["ids"] == ["undo", "cancel"]
    assert notes.read_text() == TWENTY
    assert not (work / "shell-out.txt").exists()
    assert tell["ids"] == ["tell", "no"]
    assert "script still remembers" in tell["prompt"]
    turn_done(nvim, key)
    nvim.wait("return table.concat(vim.api.nvim_buf_get_lines(require('louise.chat')"
              ".chats[...].buf, 0, -1, false), '\\n'):find('I reverted your changes of turns"
              " 1 to 2 to notes.txt, shell-out.txt', 1, true) ~= nil", key)


def test_the_persons_save_during_a_turn_survives_the_undo(nvim: Driver) -> None:
    """While the agent waits for a permission, the person changes line 15 of the file the
    agent is about to change and saves it; then the agent changes line 3 with a shell
    command. The review shows the agent's line only; the undo keeps the person's."""
    notes = work_dir(nvim) / "notes.txt"
    notes.write_text(TWENTY)
    key = open_script_chat(nvim, rules=None)
    buf = int(nvim.lua("vim.cmd('topleft split ' .. vim.fn.fnameescape(...));"
                       " return vim.fn.bufnr(...)", str(notes)))
    nvim.prompt(json.dumps(shell("sed -i 's/^line 3$/agent three/' notes.txt")), key)
    nvim.wait("return require('louise.permission').current ~= nil")
    nvim.lua("vim.api.nvim_buf_set_lines(..., 14, 15, false, {'mine'});"
             " vim.api.nvim_buf_call(..., function() vim.cmd('silent write') end)", buf)
    nvim.permission_key("1")
    turn_done(nvim, key)
    _, line = changes_line(nvim, key)
    assert line == "± 1 file changed (+1 −1) · review"
    assert notes.read_text() == edited(TWENTY, l3="agent three\n", l15="mine\n")
    stub_select(nvim, "undo", "no")
    nvim.nvim.command("LouiseUndo")
    nvim.wait("return #_G.asked >= 2")
    assert notes.read_text() == edited(TWENTY, l15="mine\n")
    nvim.wait("return vim.api.nvim_buf_get_lines(..., 0, -1, false)[3] == 'line 3'", buf)
    assert nvim.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)[15]", buf) == "mine"


def test_a_buffer_with_unsaved_edits_is_never_overwritten_by_a_revert(nvim: Driver) -> None:
    notes = work_dir(nvim) / "notes.txt"
    notes.write_text(TWENTY)
    key = open_script_chat(nvim)
    run_turn(nvim, key, self_write(notes, edited(TWENTY, l2="agent two\n")))
    changes_line(nvim, key)
    buf = int(nvim.lua("vim.cmd('topleft split ' .. vim.fn.fnameescape(...));"
                       " local b = vim.fn.bufnr(...);"
                       " vim.api.nvim_buf_set_lines(b, 19, 20, false, {'my unsaved line'});"
                       " return b", str(notes)))
    stub_select(nvim, "mine")
    nvim.nvim.command("LouiseReview")
    nvim.wait(REVIEW)
    nvim.nvim.input("r")
    nvim.wait("return #_G.asked >= 1")
    [asked] = nvim.lua("return _G.asked")
    assert asked["ids"] == ["mine", "agent", "diff"]
    assert "louise (undo) changed notes.txt on disk" in asked["prompt"]
    assert notes.read_text() == TWENTY
    lines = nvim.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", buf)
    assert lines[1] == "agent two" and lines[19] == "my unsaved line", "kept as it was"
    assert nvim.lua("return vim.bo[...].modified", buf) is True
