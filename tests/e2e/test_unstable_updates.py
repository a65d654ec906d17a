"""End to end: the schema's unstable updates in the chat — plans by id (updated in place,
removed), an agent's notice and a context compaction — streamed, and the same after the
chat is rendered whole again."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Driver
from tests.e2e.test_chat import open_chat

pytestmark = pytest.mark.e2e

STEPS = "▌ plan\n- [x] Read the notes\n- [x] Change the code\n- [~] Run the tests"
NOTICE = "⚠ Demo notice\n  Shown to you; not part of the session's history."
COMPACTED = "⟲ context compacted\n  The person asked for a small change; the tests pass."


def test_plans_a_notice_and_a_compaction_show_in_the_chat(nvim: Driver) -> None:
    key = open_chat(nvim)
    nvim.run_prompt("/scenario unstable")
    text = nvim.chat_text(key)
    assert text.count("▌ plan") == 1 and STEPS in text, text  # one block, updated in place
    assert "Notes" not in text and "keep the change small" not in text  # removed
    assert NOTICE in text and COMPACTED in text
    assert text.index(STEPS) < text.index(NOTICE) < text.index(COMPACTED) \
        < text.index("Sent plans, a notice, a compaction (completed).")
    # A turn while the chat is hidden, then the chat rendered whole as it is shown again.
    nvim.lua("require('louise.engine').send('detach', {key = ...})", key)
    nvim.run_prompt("/scenario unstable compaction=failed", key)
    assert "compaction failed" not in nvim.chat_text(key)  # hidden: no transcript ops
    nvim.lua("require('louise.engine').send('attach', {key = ...})", key)
    text = nvim.wait("local c = require('louise.chat'); local t = table.concat("
                     "vim.api.nvim_buf_get_lines(c.chats[...].buf, 0, -1, false), '\\n');"
                     " return t:find('compaction failed', 1, true) and t", key)
    assert "✗ context compaction failed: the summary did not fit" in text
    assert text.count(COMPACTED) == 1 and text.count(NOTICE) == 2, text
    # Both turns' steps plan is one plan (the same id): shown once, where it began.
    assert text.count(STEPS) == 1 and text.index(STEPS) < text.index(COMPACTED)
