"""The frame that ends a turn reaches the screen before its messages go to treesitter.

Issue 25 item 2: a fast reply's only chunk and the turn's end came in one frame; the turn's
end hands the finished messages to treesitter, on a callback the frame scheduled. Neovim
runs what is scheduled before it redraws, and sends the screen to its UI only once
nothing more is queued: the chunk reached the screen after the parse (35-50 ms for the
first one in a Neovim), in about half of bench/startup.py's runs. Counted here in redraws,
not ms: when treesitter is handed a message, the screen already shows the frame."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.e2e.conftest import Driver
from tests.e2e.ui_screen import Screen, ui_nvim_fixture  # noqa: F401 (the fixture)

SCRIPT = Path(__file__).resolve().parents[1] / "fakes" / "script_agent.py"

# Each handover notes whether Neovim's screen shows `needle` at that moment (the grid a
# redraw left, which is what its UI gets).
RECORD_HANDOVERS = """
local md = require('louise.chat.markdown')
local needle = ...
_G.louise_test_handovers = {}
local function shown()
  for row = 1, vim.o.lines do
    local line = {}
    for col = 1, vim.o.columns do
      line[#line + 1] = vim.fn.screenstring(row, col)
    end
    if table.concat(line):find(needle, 1, true) then
      return true
    end
  end
  return false
end
local handover = md.handover
md.handover = function(...)
  table.insert(_G.louise_test_handovers, shown())
  return handover(...)
end
"""

# One frame as the engine sends it (louise/nvim/render.py's ops), the chat's header with
# its turn state changed.
FRAME = """
local key, ops, status = ...
local header = vim.deepcopy(require('louise.chat').chats[key].status)
header.status = status
return require('louise.render').apply({ chats = { [key] = ops }, status = { [key] = header } })
"""


def test_the_frame_that_ends_a_turn_is_on_screen_before_treesitter_parses(
        ui_nvim: tuple[Driver, Screen]) -> None:
    nvim, screen = ui_nvim
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, agents = {script = {"
             " command = select(1, ...), args = {(select(2, ...))}}}})",
             sys.executable, str(SCRIPT))
    nvim.nvim.command("LouiseChat script")
    key = str(nvim.wait("return require('louise.chat').last"))
    nvim.wait_status("ready", key)
    nvim.lua(RECORD_HANDOVERS, "THE-ONLY-CHUNK")
    # The prompt's frame: its message drawn while the turn works (nothing handed over).
    assert nvim.lua(FRAME, key, [["block", "test-prompt", "user", ["> THE-PROMPT"]]],
                    "prompting") is None
    screen.wait_for("THE-PROMPT")
    # The reply's only chunk and the turn's end, in one frame.
    assert nvim.lua(FRAME, key, [["block", "test-reply", "agent", ["THE-ONLY-CHUNK"]]],
                    "ready") is None
    handovers = nvim.wait("return #_G.louise_test_handovers > 0 and _G.louise_test_handovers")
    screen.wait_for("THE-ONLY-CHUNK")
    assert handovers[0] is True, \
        "treesitter parsed before the frame that ended the turn was on the screen"
