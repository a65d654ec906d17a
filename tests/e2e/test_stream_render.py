"""What a streaming reply looks like in a real Neovim: markdown highlighted on the tail
while it streams (in a chat past any size), finished messages handed to treesitter, and
the view following the tail of a line taller than the window."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.e2e.conftest import Driver

SCRIPT = Path(__file__).resolve().parents[1] / "fakes" / "script_agent.py"


def chunk(text: str) -> dict[str, Any]:
    return {"update": {"sessionUpdate": "agent_message_chunk",
                       "content": {"type": "text", "text": text}}}


def script_chat(nvim: Driver) -> str:
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, agents = {script = {"
             " command = select(1, ...), args = {(select(2, ...))}}}})",
             sys.executable, str(SCRIPT))
    nvim.nvim.command("LouiseChat script")
    key = str(nvim.wait("return require('louise.chat').last"))
    nvim.wait_status("ready", key)
    return key


def row_of(nvim: Driver, key: str, needle: str) -> int:
    """The 0-based buffer row of the last line holding `needle`."""
    lines = nvim.chat_lines(key)
    return max(i for i, line in enumerate(lines) if needle in line)


def groups_at(nvim: Driver, key: str, row: int) -> list[str]:
    return [h[2] for h in nvim.lua(
        "local c = require('louise.chat'); return require('louise.chat.markdown')"
        ".highlights_at(c.chats[select(1, ...)].buf, select(2, ...))", key, row)]


def chat_window(nvim: Driver, key: str) -> int:
    return int(nvim.lua("local c = require('louise.chat');"
                        " return vim.fn.bufwinid(c.chats[...].buf)", key))


def wait_line(nvim: Driver, key: str, line: str) -> None:
    """Wait for a transcript line equal to `line`: the reply's own, not the prompt's echo
    (which holds the script, so the same text within one long line)."""
    nvim.wait("local c = require('louise.chat'); local key, want = ...;"
              " for _, l in ipairs(vim.api.nvim_buf_get_lines(c.chats[key].buf, 0, -1, false))"
              " do if l == want then return true end end; return false", key, line)


def test_markdown_is_highlighted_on_the_tail_while_it_streams_in_a_big_chat(
        nvim: Driver) -> None:
    key = script_chat(nvim)
    # A first reply of ~400 KB: the chat is past the size where highlighting used to stop.
    big = "".join(f"line {i} of a long earlier reply, **bold** too\n" for i in range(9000))
    nvim.run_prompt(json.dumps([chunk(big[:200_000]), chunk(big[200_000:])]), key)
    assert nvim.lua("local c = require('louise.chat'); local s = c.chats[...];"
                    " return vim.api.nvim_buf_get_offset(s.buf,"
                    " vim.api.nvim_buf_line_count(s.buf))",
                    key) > 256 * 1024
    streaming = [chunk("## A heading\n\nsome **bold** and `code` here\n"),
                 chunk("```lua\nlocal x = 1\n"), {"hang": True}]
    nvim.prompt(json.dumps(streaming), key)
    nvim.wait("return vim.tbl_contains(require('louise.chat').chats[...].status and {"
              "require('louise.chat').chats[...].status.status} or {}, 'prompting')", key)
    wait_line(nvim, key, "local x = 1")
    assert nvim.status(key) == "prompting"  # still streaming
    heading = row_of(nvim, key, "## A heading")
    bold = row_of(nvim, key, "some **bold**")
    code = row_of(nvim, key, "local x = 1")
    assert "@markup.heading.2.markdown" in groups_at(nvim, key, heading)
    assert {"@markup.strong.markdown_inline", "@markup.raw.markdown_inline"} <= set(
        groups_at(nvim, key, bold))
    assert groups_at(nvim, key, code) == ["@markup.raw.block.markdown"]
    # As drawn: the bold word's cell has other attributes than a plain word's.
    nvim.nvim.command("redraw!")
    win = chat_window(nvim, key)
    line = nvim.chat_lines(key)[bold]
    attrs = nvim.lua("local win, lnum, plain, strong = ...;"
                     " local a = vim.fn.screenpos(win, lnum, plain);"
                     " local b = vim.fn.screenpos(win, lnum, strong);"
                     " return { a.row, vim.fn.screenattr(a.row, a.col),"
                     "          vim.fn.screenattr(b.row, b.col) }",
                     win, bold + 1, line.index("some") + 1, line.index("bold") + 1)
    assert attrs[0] > 0, "the streamed line is on screen"
    assert attrs[1] != attrs[2]
    nvim.lua("require('louise.engine').send('cancel', {key = ...})", key)
    nvim.wait_status("ready", key)


def test_a_finished_message_is_handed_over_to_treesitter(nvim: Driver) -> None:
    key = script_chat(nvim)
    nvim.run_prompt(json.dumps([chunk("Some *italic* and **bold**\n\n- a list item\n")]), key)
    nvim.nvim.command("redraw!")  # drawn once, then finished: treesitter takes it
    first = row_of(nvim, key, "Some *italic*")  # the reply's line (the prompt's is above)
    groups = nvim.wait(
        "local c = require('louise.chat'); local md = require('louise.chat.markdown');"
        " local key, first = ...; local out = {};"
        " for _, m in ipairs(vim.api.nvim_buf_get_extmarks(c.chats[key].buf, md.ts_ns,"
        "   {first, 0}, {first + 2, -1}, {details = true})) do out[m[4].hl_group] = true end;"
        " return out['@markup.list.markdown'] and vim.tbl_keys(out)", key, first)
    assert {"@markup.italic.markdown_inline", "@markup.strong.markdown_inline"} <= set(groups)
    # The provider leaves a handed-over message alone (no double highlighting).
    assert groups_at(nvim, key, row_of(nvim, key, "**bold**")) == []


TS_MARKS = ("local c = require('louise.chat'); local md = require('louise.chat.markdown');"
            " return #vim.api.nvim_buf_get_extmarks(c.chats[...].buf, md.ts_ns, 0, -1, {})")


def test_nothing_goes_to_treesitter_while_a_turn_works(nvim: Driver) -> None:
    """Issue 25 item 2: treesitter's first parse in a Neovim loads the markdown parsers and
    their queries (100-200 ms); done between the first chunks of a turn, it held the
    stream that long. Finished messages (the prompt's own) wait for the turn's end."""
    key = script_chat(nvim)
    nvim.prompt(json.dumps([chunk("Some **bold** and `code`\n"), {"hang": True}]), key)
    wait_line(nvim, key, "Some **bold** and `code`")
    nvim.nvim.command("redraw!")  # the prompt and the reply drawn: the prompt is finished
    # Handovers are scheduled after a redraw, then after the frame: two rounds of the loop.
    nvim.lua("_G.louise_test_rounds = false; vim.schedule(function() vim.schedule(function()"
             " vim.schedule(function() _G.louise_test_rounds = true end) end) end)")
    nvim.wait("return _G.louise_test_rounds")
    assert nvim.status(key) == "prompting"
    assert nvim.lua(TS_MARKS, key) == 0, "a message went to treesitter during the turn"
    nvim.lua("require('louise.engine').send('cancel', {key = ...})", key)
    nvim.wait_status("ready", key)
    nvim.nvim.command("redraw!")
    nvim.wait(TS_MARKS.replace(" return #", " return 0 < #"), key)


def test_the_view_follows_the_tail_of_a_line_taller_than_the_window(nvim: Driver) -> None:
    key = script_chat(nvim)
    pieces = [chunk("word " * 400) for _ in range(12)]  # one 24,000-character line
    pieces[-1] = chunk("word " * 399 + "THE-END")
    nvim.prompt(json.dumps([*pieces, {"hang": True}]), key)
    nvim.wait("local c = require('louise.chat'); local s = c.chats[...];"
              " local last = vim.api.nvim_buf_get_lines(s.buf, -2, -1, false)[1];"
              " return last:sub(-7) == 'THE-END'",
              key)
    win = chat_window(nvim, key)
    last = len(nvim.chat_lines(key))
    height, width = nvim.lua("return { vim.api.nvim_win_get_height(...),"
                             " vim.api.nvim_win_get_width(...) }", win)
    assert len(nvim.chat_lines(key)[-1]) > height * width, "the line is taller than the window"
    # The view follows the tail in the frame after the text (wait for it, not a race).
    end_col = len(nvim.chat_lines(key)[-1])
    nvim.wait("local w, row, col = ...; vim.cmd('redraw!');"
              " return vim.fn.screenpos(w, row, col).row > 0", win, last, end_col)
    nvim.lua("require('louise.engine').send('cancel', {key = ...})", key)
    nvim.wait_status("ready", key)


def test_a_reply_that_is_one_long_line_is_shown_in_bounded_pieces(nvim: Driver) -> None:
    """Issue 14 item 7: Neovim's cost per frame for a wrapped line grows with its length,
    so a streamed line is cut into buffer lines of at most MAX_LINE_BYTES (on character
    boundaries); nothing is lost and the view follows the tail."""
    key = script_chat(nvim)
    word = "wörd€ "  # multi-byte characters: no piece may split one
    sent = [word * 1000 for _ in range(20)]  # 120,000 characters, 180,000 bytes
    sent[-1] = word * 999 + "THE-END"
    nvim.prompt(json.dumps([*(chunk(piece) for piece in sent), {"hang": True}]), key)
    nvim.wait("local c = require('louise.chat'); local s = c.chats[...];"
              " local last = vim.api.nvim_buf_get_lines(s.buf, -2, -1, false)[1];"
              " return last:sub(-7) == 'THE-END'", key)
    limit = nvim.lua("return require('louise.chat.buffer').MAX_LINE_BYTES")
    lines = nvim.chat_lines(key)
    reply = [line for line in lines if word.strip() in line]  # the prompt has \u escapes
    assert "".join(sent) in "".join(reply), "cut into pieces, nothing lost or added"
    assert all(len(line.encode()) <= limit for line in reply)
    assert len(reply) >= len("".join(sent).encode()) // limit
    win = chat_window(nvim, key)
    assert nvim.lua("return vim.wo[...].smoothscroll", win), "a piece may start above the view"
    # The view follows the tail in the frame after the text (wait for it, not a race).
    nvim.wait("local w, row, col = ...; vim.cmd('redraw!');"
              " return vim.fn.screenpos(w, row, col).row > 0", win, len(lines),
              len(lines[-1].encode()))
    nvim.lua("require('louise.engine').send('cancel', {key = ...})", key)
    nvim.wait_status("ready", key)


def test_a_big_frame_of_short_lines_keeps_the_window_scrolling_by_whole_lines(
        nvim: Driver, tmp_path: Path) -> None:
    """'smoothscroll' makes Neovim redraw the whole window on every frame (and the markdown
    provider highlight every row again): only a chat holding a line cut into pieces gets
    it, not one that received more than MAX_LINE_BYTES of short lines in one frame."""
    key = script_chat(nvim)
    limit = nvim.lua("return require('louise.chat.buffer').MAX_LINE_BYTES")
    pieces = ["".join(f"short line {i} with **bold**\n" for i in range(n, n + 100))
              for n in range(0, 1000, 100)]
    assert all(len(piece.encode()) < limit * 3 // 4 for piece in pieces)
    assert len("".join(pieces).encode()) > 4 * limit
    # The reply's block first, then the pieces at once: text ops appended to it, frames of
    # more than MAX_LINE_BYTES. One chunk per line of the prompt (shown too): none is long.
    go = tmp_path / "go"
    script = [chunk("first\n"), {"wait_file": str(go)}, *(chunk(piece) for piece in pieces)]
    before = nvim.turns_done(key)
    nvim.prompt(json.dumps(script, indent=0), key)
    nvim.wait("return vim.tbl_contains(vim.api.nvim_buf_get_lines("
              "require('louise.chat').chats[...].buf, 0, -1, false), 'first')", key)
    go.touch()  # the reply's block is on screen: now the pieces
    nvim.wait("local s = require('louise.chat').chats[select(1, ...)];"
              " return s.status.turns_done > select(2, ...)", key, before)
    assert "short line 999 with **bold**" in nvim.chat_lines(key)
    win = chat_window(nvim, key)
    assert nvim.lua("return vim.wo[...].smoothscroll", win) is False
    assert nvim.lua("return require('louise.chat').chats[...].long_lines", key) is None


def test_rows_of_an_earlier_message_are_highlighted_among_many_blocks(nvim: Driver) -> None:
    """The provider finds a drawn row's message among the chat's blocks (not only the
    newest): an earlier reply too long for treesitter keeps its line highlighting."""
    key = script_chat(nvim)
    long_reply = "".join(f"earlier {i} has **bold** and `code`\n" for i in range(1200))
    nvim.run_prompt(json.dumps([chunk(long_reply)]), key)
    for n in range(3):
        nvim.run_prompt(json.dumps([chunk(f"reply {n} with *italic*\n")]), key)
    assert len(nvim.lua("return require('louise.chat').chats[...].order", key)) >= 8
    row = row_of(nvim, key, "earlier 600 has")
    assert {"@markup.strong.markdown_inline", "@markup.raw.markdown_inline"} <= set(
        groups_at(nvim, key, row))


def test_fenced_code_is_tracked_as_the_provider_draws_the_rows(nvim: Driver) -> None:
    """Rows drawn in order note their fences as they go (not read again): inside a fence
    is code, after its closing fence plain text again, on screen."""
    key = script_chat(nvim)
    text = "plain before\n```\ncode inside\n```\nplain after\n"
    nvim.prompt(json.dumps([chunk(text), {"hang": True}]), key)
    wait_line(nvim, key, "plain after")
    assert nvim.status(key) == "prompting"  # still streaming: the provider draws it
    nvim.nvim.command("redraw!")
    win = chat_window(nvim, key)

    def attr(needle: str) -> int:
        row = row_of(nvim, key, needle)
        pos = nvim.lua("return vim.fn.screenpos(...)", win, row + 1, 1)
        assert pos["row"] > 0, f"{needle!r} is on screen"
        return int(nvim.lua("return vim.fn.screenattr(...)", pos["row"], pos["col"]))

    assert attr("code inside") != attr("plain before")
    assert attr("plain after") == attr("plain before")
    nvim.lua("require('louise.engine').send('cancel', {key = ...})", key)
    nvim.wait_status("ready", key)


def test_a_transcript_ignores_window_scroll_events_only_while_its_turn_works(
        nvim: Driver) -> None:
    """Following the tail scrolls the transcript on every frame: WinScrolled handlers
    (matchparen's, for one) would run ~80 times a second. Its windows ignore the event while
    the turn works; afterwards scrolling fires it again, and the person's own
    'eventignorewin' is kept."""
    key = script_chat(nvim)
    win = chat_window(nvim, key)
    nvim.lua("vim.wo[...].eventignorewin = 'BufEnter'", win)
    nvim.lua("_G.scrolled = 0; vim.api.nvim_create_autocmd('WinScrolled', {pattern = tostring(...),"
             " callback = function() _G.scrolled = _G.scrolled + 1 end})", win)
    lines = "".join(f"streamed line {i}\n" for i in range(300))
    nvim.prompt(json.dumps([chunk(lines), {"hang": True}]), key)
    wait_line(nvim, key, "streamed line 299")
    assert nvim.status(key) == "prompting"
    assert nvim.lua("return vim.wo[...].eventignorewin", win) == "BufEnter,WinScrolled"
    assert nvim.lua("return vim.fn.line('w$', ...)", win) == len(nvim.chat_lines(key))
    assert nvim.lua("return _G.scrolled") == 0, "the tail was followed without the event"
    # Switched to another buffer mid-turn, the window gets the event back.
    nvim.lua("vim.api.nvim_win_call(..., function() vim.cmd('enew') end)", win)
    nvim.wait("return vim.wo[...].eventignorewin == 'BufEnter'", win)
    nvim.lua("vim.api.nvim_win_set_buf(..., require('louise.chat').chats[select(2, ...)].buf)",
             win, key)
    nvim.lua("require('louise.engine').send('cancel', {key = ...})", key)
    nvim.wait_status("ready", key)
    assert nvim.lua("return vim.wo[...].eventignorewin", win) == "BufEnter"
    # The turn's last lines may come in the frame after its end, following the tail: the
    # person scrolls once they are drawn.
    wait_line(nvim, key, "⊘ cancelled")
    nvim.lua("vim.api.nvim_win_call(..., function() vim.cmd('normal! gg') end)", win)
    nvim.wait("return _G.scrolled > 0")


def test_the_garbage_of_a_turn_is_collected_once_it_is_over(nvim: Driver) -> None:
    """LuaJIT collects only as Lua allocates: an idle Neovim keeps a turn's garbage, and the
    next turn's first frames paid its collection before the first chunk reached the screen
    (bench/stream.py paced_big). Once a turn is over, louise runs the collection."""
    key = script_chat(nvim)
    # Garbage the size of a burst's chunk strings, left after a complete cycle: nothing
    # collects it until the heap doubles or something runs a cycle.
    garbage_kb = nvim.lua(
        "collectgarbage(); local before = collectgarbage('count'); local junk = {};"
        " for i = 1, 200000 do junk[i] = ('chunk string %d of a big reply'):format(i) end;"
        " _G.louise_test_junk = junk; collectgarbage(); _G.louise_test_junk = nil;"
        " return collectgarbage('count') - before")
    assert garbage_kb > 8 * 1024
    heap_kb = nvim.lua("return collectgarbage('count')")
    nvim.run_prompt(json.dumps([chunk("a short reply\n")]), key)
    nvim.wait("return collectgarbage('count') < select(1, ...)", heap_kb - garbage_kb / 2,
              timeout=15)


TRICKY = "a ** b **bold** *it* `c*d*` ~~s~~ __u__ x*y* [l](u) ***z*** `open"
# The provider's spans of TRICKY, as louise drew them before its patterns were tried only
# where their first character is (markdown.find_lead): the same, to the byte; the link's
# label `[l]` and url `(u)` each their own span (they were mixed up before).
TRICKY_SPANS = [[21, 27, "@markup.raw.markdown_inline"], [7, 15, "@markup.strong.markdown_inline"],
                [53, 58, "@markup.strong.markdown_inline"],
                [16, 20, "@markup.italic.markdown_inline"],
                [41, 44, "@markup.italic.markdown_inline"],
                [34, 39, "@markup.strong.markdown_inline"],
                [28, 33, "@markup.strikethrough.markdown_inline"],
                [45, 48, "@markup.link.label.markdown_inline"],
                [48, 51, "@markup.link.url.markdown_inline"]]


def test_inline_markup_is_found_where_it_starts_to_the_byte(nvim: Driver) -> None:
    key = script_chat(nvim)
    nvim.prompt(json.dumps([chunk(f"{TRICKY}\n"), {"hang": True}]), key)
    wait_line(nvim, key, TRICKY)
    spans = nvim.lua(
        "local c = require('louise.chat'); return require('louise.chat.markdown')"
        ".highlights_at(c.chats[select(1, ...)].buf, select(2, ...))",
        key, row_of(nvim, key, TRICKY))
    assert spans == TRICKY_SPANS
    nvim.lua("require('louise.engine').send('cancel', {key = ...})", key)
    nvim.wait_status("ready", key)
