"""The winbar says what a mode the person picked allows (`approves`, from the engine's
`_status_for`: the registry's `approved_by_mode`), and keeps it longer than the model and
the session name when the window narrows."""

from __future__ import annotations

from tests.e2e.conftest import Driver

WINBAR = ("local width, approves = ...; return require('louise.chat.winbar').winbar({"
          " agent = 'qwen', key = 'qwen:test', n = 1, status = {status = 'ready',"
          " title = 'A session name', model = 'a-rather-long-model-name', mode = 'auto-edit',"
          " approves = approves ~= '' and approves or nil}}, width)")


def test_a_mode_that_allows_edits_says_so_and_stays_longest(nvim: Driver) -> None:
    wide = str(nvim.lua(WINBAR, 200, "edits"))
    assert "auto-edit: edits allowed" in wide and "a-rather-long-model-name" in wide, wide
    narrow = str(nvim.lua(WINBAR, 60, "edits"))
    assert "auto-edit: edits allowed" in narrow, narrow
    assert "a-rather-long-model-name" not in narrow and "A session name" not in narrow, narrow
    plain = str(nvim.lua(WINBAR, 60, ""))
    assert "allowed" not in plain and "auto-edit" not in plain, "a mode alone goes first"
