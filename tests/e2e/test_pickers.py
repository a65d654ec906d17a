"""End to end (issue 23, item 8): pickers a Neovim user expects. :LouiseSwitch,
:LouiseResume and :LouiseQueue rows are short (relative times, no absolute path on every
row, the current session marked, labels cut at a word to fit 80 columns), :LouiseQueue is
one list of prompts × actions, :LouiseRename with no name asks, and where telescope,
fzf-lua or snacks is installed the pick comes with a transcript preview (here a stub
`snacks` module on the runtimepath); without one, vim.ui.select."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.conftest import Driver
from tests.e2e.test_chat import open_chat
from tests.e2e.test_prompt_queue import SLOW, wait_queue
from tests.e2e.test_sign_in import stub_selects

pytestmark = pytest.mark.e2e
ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d")
LONG_NAME = ("a rather long name for the session that reviews the authentication refactor"
             " and then the migration")


def shown(nvim: Driver, n: int = 1) -> list[str]:
    nvim.wait("return _G.louise_test_selects and #_G.louise_test_selects >= ...", n)
    return list(nvim.lua("return _G.louise_test_selects[...].items", n))


def fits(row: str, columns: int = 80) -> bool:
    """Within a picker's row at `columns` (every character here is one cell wide)."""
    return len(row) <= columns - 8


def test_switch_rows_are_short_and_mark_the_current_session(nvim: Driver) -> None:
    nvim.lua("vim.o.columns = 80")
    first = open_chat(nvim)
    nvim.nvim.command(f"LouiseRename {LONG_NAME}")
    nvim.nvim.command("LouiseNew")
    second = str(nvim.wait("local c = require('louise.chat'); return c.last ~= ... and c.last",
                           first))
    nvim.wait_status("ready", second)
    stub_selects(nvim, [2])
    nvim.nvim.command("LouiseSwitch")
    rows = shown(nvim)
    cwd = nvim.lua("return vim.fn.getcwd()")
    assert len(rows) == 2
    # Each row says when its session was last used, in :LouiseResume's words.
    used = r" · ready · (just now|\d+ min ago)$"
    assert rows[0].startswith("▸ demo · ") and re.search(used, rows[0]), rows  # the current
    assert rows[1].startswith("  demo · a rather long name") and re.search("…" + used,
                                                                           rows[1]), rows
    assert all(cwd not in row and fits(row) for row in rows), rows
    cut = rows[1].split(" · ")[1]
    assert LONG_NAME.startswith(cut[:-1]) and LONG_NAME[len(cut) - 1] == " "  # at a word
    nvim.wait("return require('louise.chat').last == ...", first)  # the pick is focused


def test_a_switch_row_says_when_its_session_was_last_used(nvim: Driver) -> None:
    """The engine sends each session's last use (seconds since the epoch); the row words
    it as :LouiseResume does, between the state and the directory."""
    rows = nvim.lua("""
      local pickers = require('louise.chat.pickers')
      local now = require('louise.chat.picker_text').epoch('2026-12-03T15:25:01Z')
      local item = {key = 'demo:1', agent = 'demo', title = 'a review', status = 'ready',
                    cwd = '/elsewhere/proj'}
      local rows = {}
      for _, ago in ipairs({5, 180, 86400 * 3}) do
        item.updated = now - ago
        table.insert(rows, pickers.session_row(item, 'demo:1', '/ws/app', 72, now))
      end
      item.updated = nil -- a session the engine gave no time: no time shown
      table.insert(rows, pickers.session_row(item, 'demo:1', '/ws/app', 72, now))
      return rows""")
    assert rows == ["▸ demo · a review · ready · just now · /elsewhere/proj",
                    "▸ demo · a review · ready · 3 min ago · /elsewhere/proj",
                    "▸ demo · a review · ready · 3 days ago · /elsewhere/proj",
                    "▸ demo · a review · ready · /elsewhere/proj"]


def test_resume_rows_say_when_in_words_and_mark_the_current_session(nvim: Driver) -> None:
    nvim.lua("vim.o.columns = 80")
    key = open_chat(nvim)
    nvim.run_prompt("the question to find again")
    stub_selects(nvim, [])
    nvim.nvim.command("LouiseResume")
    rows = [r for r in shown(nvim) if "the question" in r]
    cwd = nvim.lua("return vim.fn.getcwd()")
    assert rows and rows[0].startswith("▸ demo · the question to find again · "), rows
    assert rows[0].endswith(" · just now") or rows[0].endswith(" min ago"), rows
    assert not ISO.search(rows[0]) and cwd not in rows[0] and fits(rows[0])
    assert key.startswith("demo:")


def test_relative_times_paths_and_cuts(nvim: Driver) -> None:
    out = nvim.lua("""
      local t = require('louise.chat.picker_text')
      local now = t.epoch('2026-12-03T15:25:01Z')
      local home = vim.env.HOME
      return {
        t.ago('2026-12-03T15:25:01Z', now + 5), t.ago('2026-12-03T15:22:01.250Z', now),
        t.ago('2026-12-03T17:25:01+02:00', now + 180), t.ago(now - 86400 * 3, now),
        t.ago('not a time', now),
        t.path('/ws/app/src', '/ws/app'), t.path('/ws/app', '/ws/app'),
        t.path(home .. '/other/proj', '/ws/app'),
        t.cut('explain the authentication refactor', 20), t.cut('abcdefghijklmnop', 6),
        t.row({'demo', 'a name\\27[2J with\\na newline', 'ready'}, 2, 72),
      }""")
    assert out[:3] == ["just now", "3 min ago", "3 min ago"]
    assert out[3] == "3 days ago" and out[4] == ""
    assert out[5:8] == ["./src", "", "~/other/proj"]
    assert out[8] == "explain the…" and out[9] == "abcde…"
    assert out[10] == "demo · a name␛[2J with␊a newline · ready"  # one line, no escape


def test_queue_is_one_list_of_prompts_and_actions(nvim: Driver) -> None:
    key = open_chat(nvim)
    nvim.prompt(SLOW)
    nvim.wait_status("prompting")
    nvim.prompt("hello next")
    how = "  :LouiseQueue to edit, remove, send now or steer"
    wait_queue(nvim, key, ["⧗ queued 1: hello next", how])
    stub_selects(nvim, [])  # dismissed
    nvim.nvim.command("LouiseQueue")
    assert shown(nvim) == ["hello next · steer it into the running turn",
                           "hello next · send it now (cancels the turn)",
                           "hello next · edit it", "hello next · remove it"]
    assert len(nvim.lua("return _G.louise_test_selects")) == 1  # no second menu
    nvim.prompt("and another")
    wait_queue(nvim, key, ["⧗ queued 1: hello next", "⧗ queued 2: and another", how])
    stub_selects(nvim, [])
    nvim.nvim.command("LouiseQueue")
    rows = shown(nvim)  # numbered as the queue's lines, when there are several
    assert len(rows) == 8 and rows[0] == "⧗1 hello next · steer it into the running turn"
    assert rows[7] == "⧗2 and another · remove it"
    # A pick whose prompt went meanwhile (the turn ended): said so, nothing sent.
    nvim.lua("_G.louise_test_notes = {}; vim.notify = function(m) table.insert("
             "_G.louise_test_notes, m) end")
    nvim.lua("local q = require('louise.chat.queue'); local k = ...;"
             " q.queues[k] = {items = {{id = 998, text = 'still here'}}, steer = true};"
             " vim.ui.select = function(items, opts, cb) local c = items[1];"
             "   c.item = {id = 999, text = 'sent meanwhile'}; cb(c) end; q.pick()", key)
    nvim.wait("return #_G.louise_test_notes > 0")
    assert "no longer queued" in nvim.lua("return _G.louise_test_notes[1]")


def test_rename_without_a_name_asks(nvim: Driver) -> None:
    open_chat(nvim)
    nvim.lua("vim.ui.input = function(opts, cb) _G.louise_test_input = opts;"
             " cb('named by asking') end")
    nvim.nvim.command("LouiseRename")
    nvim.wait("local c = require('louise.chat');"
              " return c.chats[c.last].status.title == 'named by asking'")
    assert nvim.lua("return _G.louise_test_input.prompt") == "louise: name this session: "
    nvim.lua("vim.ui.input = function(opts, cb) _G.louise_test_input = opts; cb(nil) end")
    nvim.nvim.command("LouiseRename")  # dismissed: the name stays
    assert nvim.lua("return _G.louise_test_input.default") == "named by asking"


def test_a_picker_plugin_shows_a_transcript_preview(nvim: Driver, tmp_path: Path) -> None:
    plugin = tmp_path / "stub-snacks" / "lua"
    plugin.mkdir(parents=True)
    (plugin / "snacks.lua").write_text(
        "local M = {picker = {}}\n"
        "function M.picker.pick(opts)\n"
        "  _G.louise_test_pick = opts\n"
        "  local picker = {close = function() end}\n"
        "  opts.confirm(picker, opts.items[2])\n"
        "end\n"
        "return M\n")
    nvim.lua("vim.opt.runtimepath:append(...)", str(tmp_path / "stub-snacks"))
    first = open_chat(nvim)
    nvim.run_prompt("words from the first chat")
    nvim.nvim.command("LouiseNew")
    second = str(nvim.wait("local c = require('louise.chat'); return c.last ~= ... and c.last",
                           first))
    nvim.wait_status("ready", second)
    nvim.lua("vim.ui.select = function() _G.louise_test_plain = true end")
    nvim.nvim.command("LouiseSwitch")
    nvim.wait("return require('louise.chat').last == ...", first)  # picked through snacks
    pick = nvim.lua("local o = _G.louise_test_pick; return {title = o.title,"
                    " texts = vim.tbl_map(function(i) return i.text end, o.items),"
                    " preview = o.items[2].preview.text}")
    assert pick["title"] == "louise: switch to"
    assert pick["texts"][0].startswith("▸ ")
    assert "words from the first chat" in pick["preview"]
    assert nvim.lua("return _G.louise_test_plain") is None
    # setup{ picker = 'select' }: the plain vim.ui.select, whatever is installed.
    nvim.lua("require('louise').options.picker = 'select'")
    nvim.nvim.command("LouiseSwitch")
    nvim.wait("return _G.louise_test_plain == true")


TELESCOPE_STUB = {
    "telescope/pickers.lua": """
local M = {}
function M.new(_, spec)
  return { find = function()
    _G.louise_test_pick = spec
    local entries = vim.tbl_map(spec.finder.entry_maker, spec.finder.results)
    local preview = { state = { bufnr = vim.api.nvim_create_buf(false, true) } }
    spec.previewer.define_preview(preview, entries[2])
    _G.louise_test_preview = vim.api.nvim_buf_get_lines(preview.state.bufnr, 0, -1, false)
    _G.louise_test_texts = vim.tbl_map(function(e) return e.display end, entries)
    _G.louise_test_selected = entries[2]
    spec.attach_mappings(1)
    require('telescope.actions').select_default.run()
  end }
end
return M
""",
    "telescope/finders.lua": "return { new_table = function(t) return t end }\n",
    "telescope/previewers.lua": "return { new_buffer_previewer = function(t) return t end }\n",
    "telescope/config.lua": "return { values = { generic_sorter = function() return {} end } }\n",
    "telescope/actions/state.lua":
        "return { get_selected_entry = function() return _G.louise_test_selected end }\n",
    "telescope/actions.lua": """
local M = { select_default = {}, close = {} }
function M.select_default:replace(fn) M.select_default.run = fn end
function M.close:enhance() end
setmetatable(M.close, { __call = function() end })
return M
""",
}

FZF_STUB = {"fzf-lua.lua": """
local M = { shell = {} }
function M.shell.raw_action(fn) return { preview_fn = fn } end
function M.fzf_exec(rows, opts)
  _G.louise_test_pick = opts
  _G.louise_test_texts = rows
  _G.louise_test_preview = opts.preview.preview_fn({ rows[2] })
  opts.actions.default({ rows[2] })
end
return M
"""}


@pytest.mark.parametrize("stub", ["telescope", "fzf-lua"])
def test_telescope_and_fzf_lua_show_the_preview_too(nvim: Driver, tmp_path: Path,
                                                     stub: str) -> None:
    files = TELESCOPE_STUB if stub == "telescope" else FZF_STUB
    for name, code in files.items():
        path = tmp_path / "stub" / "lua" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code)
    nvim.lua("vim.opt.runtimepath:append(...)", str(tmp_path / "stub"))
    first = open_chat(nvim)
    nvim.run_prompt("words from the first chat")
    nvim.nvim.command("LouiseNew")
    second = str(nvim.wait("local c = require('louise.chat'); return c.last ~= ... and c.last",
                           first))
    nvim.wait_status("ready", second)
    nvim.lua("vim.ui.select = function() _G.louise_test_plain = true end")
    nvim.nvim.command("LouiseSwitch")
    nvim.wait("return require('louise.chat').last == ...", first)
    texts = nvim.lua("return _G.louise_test_texts")
    assert texts[0].split("\t")[-1].startswith("▸ demo · ")
    assert "words from the first chat" in nvim.lua("return _G.louise_test_preview")
    assert nvim.lua("return _G.louise_test_plain") is None


def test_resume_previews_a_closed_sessions_last_exchange(nvim: Driver, tmp_path: Path) -> None:
    """A session not open here: its preview is the end of louise's transcript of it."""
    plugin = tmp_path / "stub-snacks" / "lua"
    plugin.mkdir(parents=True)
    (plugin / "snacks.lua").write_text(
        "return {picker = {pick = function(opts) _G.louise_test_pick = opts end}}\n")
    nvim.lua("vim.opt.runtimepath:append(...)", str(tmp_path / "stub-snacks"))
    key = open_chat(nvim)
    nvim.run_prompt("the words to find again")
    nvim.nvim.command("LouiseClose!")
    nvim.wait("return require('louise.chat').chats[...] == nil", key)
    nvim.nvim.command("LouiseResume")
    nvim.wait("return _G.louise_test_pick ~= nil")
    previews = nvim.lua("local out = {}; for _, i in ipairs(_G.louise_test_pick.items) do"
                        " out[#out + 1] = {i.text, i.preview.text} end; return out")
    (mine,) = [p for row, p in previews if "the words to find again" in row]
    lines = mine.split("\n")
    assert lines[0] == "# the words to find again"
    assert "▌ You" in lines and "the words to find again" in lines[lines.index("▌ You") + 1]
    assert "▌ demo" in lines and "## Hello from the demo agent" in lines


# Labels as real agents send them (claude-agent-acp's modes, codex-acp's models, a sign-in
# method with its description, what an undo tells the agent): longer than an 80-column picker row.
LONG_MODE = ("Default", "Standard behavior, prompts for dangerous operations, and asks "
             "before editing files or running commands")
LONG_MODEL = "gpt-5.1-codex-max (high): the most capable model for long agentic coding tasks"
LONG_METHOD = ("Log in with ChatGPT", "Use your ChatGPT Plus, Pro, Business, Edu or "
               "Enterprise plan; opens a browser to sign in")


def shown_labels(nvim: Driver, call: str) -> list[str]:
    """The labels vim.ui.select shows for `call` (dismissed)."""
    nvim.lua("_G.louise_test_labels = {}; vim.ui.select = function(items, opts, cb)"
             " for _, it in ipairs(items) do table.insert(_G.louise_test_labels,"
             " opts.format_item and opts.format_item(it) or tostring(it)) end end")
    nvim.lua(call, *LONG_MODE, LONG_MODEL, *LONG_METHOD)
    return list(nvim.lua("return _G.louise_test_labels"))


def test_menus_cut_labels_at_a_word_to_fit_80_columns(nvim: Driver) -> None:
    nvim.nvim.command("set columns=80")
    menus = {
        "mode": "local n, d = ...; require('louise.chat.pickers').pick_mode({key = 'k',"
                " current = 'default', items = {{id = 'default', name = n, description = d}}})",
        "model": "local m = select(3, ...); require('louise.chat.pickers').pick_option({key = 'k',"
                 " options = {{id = 'model', name = 'Model', current = 'x',"
                 " values = {{value = 'x', name = m}}}}})",
        "sign-in": "local n, d = select(4, ...); require('louise.ask').show({id = 1,"
                   " kind = 'signin_method', agent = 'codex', methods = {{id = 'chatgpt',"
                   " name = n, description = d, kind = 'agent'}}})",
        "undo": "local d = select(2, ...); require('louise.review').undo({done = true,"
                " agent = 'claude', key = 'k', tell = d})",
    }
    for menu, call in menus.items():
        labels = shown_labels(nvim, call) or nvim.wait("local l = _G.louise_test_labels;"
                                                       " return #l > 0 and l")
        assert labels, menu
        if menu == "undo":
            labels = labels[:1]  # then "Don't tell it"
        for label in labels:
            width = nvim.lua("return vim.fn.strdisplaywidth(...)", label)
            assert width <= 72, (menu, label)  # a row of inputlist ("1: …") never wraps
            whole = label.removesuffix("…")
            assert label.endswith("…"), (menu, label)  # each of these is too long
            # Cut where a word ends: what follows in the whole label is a space.
            full = {"mode": f"● {LONG_MODE[0]} — {LONG_MODE[1]}",
                    "model": f"● {LONG_MODEL}",
                    "sign-in": f"{LONG_METHOD[0]} — {LONG_METHOD[1]}",
                    "undo": f'Tell claude: "{LONG_MODE[1]}"'}[menu]
            assert full.startswith(whole) and full[len(whole)] == " ", (menu, label)
