"""End to end: an agent's elicitation in Neovim. The demo agent's form (`/scenario ask`)
asked field by field, reviewed, sent and checked; its URL (`/scenario visit`) shown whole
and opened only on the person's say-so, then `elicitation/complete`."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import Driver
from tests.e2e.test_chat import open_chat

pytestmark = pytest.mark.e2e


def script_ui(nvim: Driver, selects: list[int], inputs: list[str]) -> None:
    """vim.ui.select and vim.ui.input answer from scripts (then dismiss); both record
    their prompts and, for selects, the items as shown. vim.ui.open records the URL."""
    nvim.lua("_G.t_selects, _G.t_inputs = ...; _G.t_shown = {}; _G.t_opened = {};"
             " vim.ui.select = function(items, opts, cb)"
             "   local shown = {}; for _, it in ipairs(items) do"
             "     table.insert(shown, opts.format_item and opts.format_item(it) or tostring(it))"
             "   end"
             "   table.insert(_G.t_shown, {prompt = opts.prompt, items = shown})"
             "   cb(items[table.remove(_G.t_selects, 1) or 0]) end;"
             " vim.ui.input = function(opts, cb)"
             "   table.insert(_G.t_shown, {prompt = opts.prompt, default = opts.default})"
             "   cb(table.remove(_G.t_inputs, 1)) end;"
             " vim.ui.open = function(url) table.insert(_G.t_opened, url) end",
             selects, inputs)


def shown(nvim: Driver) -> list[dict[str, Any]]:
    return list(nvim.lua("return _G.t_shown"))


def test_a_form_is_asked_field_by_field_reviewed_and_sent(nvim: Driver) -> None:
    open_chat(nvim)
    # name, colour (Blue), count, notify (yes), tags (docs, feature, done), then Send.
    script_ui(nvim, [3, 1, 2, 4, 1, 1], ["v1.2", "3"])
    nvim.run_prompt("/scenario ask")
    text = nvim.chat_text()
    assert ("Thanks: color='blue', count=3, name='v1.2', notify=True, "
            "tags=['docs', 'feature'].") in text
    assert "demo asked: A few details about the release, please. (answered)" in text
    steps = shown(nvim)
    assert steps[0]["prompt"] == ("louise: demo asks · Release name (required): ")
    assert steps[1]["items"] == ["  Red", "● Green", "  Blue", "  (no answer)"]  # default
    review = steps[-1]
    assert review["prompt"] == "louise: demo asks: A few details about the release, please."
    assert review["items"][0].startswith("Send: Release name = v1.2, Colour = Blue")
    assert review["items"][1:] == ["Change an answer", "Decline (answer nothing)", "Cancel"]


def test_a_wrong_answer_is_asked_again_with_what_to_fix(nvim: Driver) -> None:
    open_chat(nvim)
    # name blank (required), then "x"; colour (Green); count 11 (too many), then 4;
    # notify (no), tags (done), Send. Each wrong answer is asked again at once (issue 23:
    # a blank required field went through until Send).
    script_ui(nvim, [2, 2, 1, 1], ["", "x", "11", "4"])
    nvim.run_prompt("/scenario ask")
    assert "Thanks: color='green', count=4, name='x', notify=False." in nvim.chat_text()
    prompts = [str(s.get("prompt")) for s in shown(nvim)]
    assert "louise: demo asks · Release name (required) (an answer is required): " in prompts
    assert "louise: demo asks · How many (required) (at most 10): " in prompts
    assert not [p for p in prompts if "fix:" in p]  # nothing left for Send to refuse


def test_a_default_nobody_answered_is_marked_as_the_default(nvim: Driver) -> None:
    open_chat(nvim)
    script_ui(nvim, [], [])  # the first field dismissed: straight to the review
    nvim.lua("table.insert(_G.t_selects, 4)")  # "Cancel"
    nvim.run_prompt("/scenario ask")
    review = shown(nvim)[-1]
    assert "Notify the team = no (default)" in review["items"][0], review
    assert "Colour = Green (default)" in review["items"][0], review


def test_decline_goes_back_as_decline(nvim: Driver) -> None:
    open_chat(nvim)
    script_ui(nvim, [], [])  # the first field dismissed: straight to the review, empty
    nvim.lua("table.insert(_G.t_selects, 3)")  # "Decline"
    nvim.run_prompt("/scenario ask")
    text = nvim.chat_text()
    assert "You chose not to answer (decline)." in text
    assert "(declined)" in text


def test_a_url_is_shown_whole_and_opened_only_when_asked(nvim: Driver) -> None:
    open_chat(nvim)
    nvim.lua("_G.louise_test_notes = {}; vim.notify = function(msg, level)"
             " table.insert(_G.louise_test_notes, msg) end")
    script_ui(nvim, [1], [])
    nvim.run_prompt("/scenario visit")
    (question,) = shown(nvim)
    assert question["prompt"] == (
        "louise: demo asks you to visit example.com: Connect the demo account in your "
        "browser. — https://example.com/louise-demo/connect")
    assert question["items"] == ["Open example.com in the browser", "Decline", "Cancel"]
    assert nvim.lua("return _G.t_opened") == ["https://example.com/louise-demo/connect"]
    assert "The page says you are connected." in nvim.chat_text()
    nvim.wait("for _, m in ipairs(_G.louise_test_notes) do"
              " if m:find('visit to example.com is finished', 1, true) then return true end"
              " end")


def test_a_declined_url_opens_nothing(nvim: Driver) -> None:
    open_chat(nvim)
    script_ui(nvim, [2], [])
    nvim.run_prompt("/scenario visit url=http://xn--80ak6aa92e.com/login")
    (question,) = shown(nvim)
    assert "punycode" in question["prompt"] and "not https" in question["prompt"]
    assert nvim.lua("return #_G.t_opened") == 0
    assert "You did not open the page (decline)." in nvim.chat_text()


def test_a_disguised_url_is_never_offered_and_the_chat_says_where_it_goes(
        nvim: Driver) -> None:
    open_chat(nvim)
    script_ui(nvim, [1], [])
    nvim.run_prompt("/scenario visit url=https://evil.example\\.accounts.google.com/")
    assert shown(nvim) == []  # never asked
    assert nvim.lua("return #_G.t_opened") == 0
    text = nvim.chat_text()
    assert ("louise did not offer to open a page demo asked you to visit: it has a "
            "backslash in its address, which a browser reads as a /: a browser would open "
            "evil.example") in " ".join(text.split())


def test_where_a_long_url_goes_comes_first_and_it_can_be_shown_whole(nvim: Driver) -> None:
    open_chat(nvim)
    url = "http://[::1]:8080/callback?state=" + "s" * 1000
    script_ui(nvim, [2, 3], [])  # "Show the whole address", then "Decline"
    nvim.run_prompt(f"/scenario visit url={url}")
    first, again = shown(nvim)
    assert first["prompt"].startswith(
        "louise: demo asks you to visit [::1] ⚠ the host is a bare IP address ([::1]): "
        "Connect the demo account in your browser. — http://[::1]:8080/callback?state=sss")
    assert first["prompt"].endswith(f"… [shortened: the address is {len(url):,} characters]")
    assert first["items"] == ["Open [::1] in the browser", "Show the whole address",
                              "Decline", "Cancel"]
    assert again == first
    view = nvim.lua("for _, b in ipairs(vim.api.nvim_list_bufs()) do"
                    " if vim.api.nvim_buf_get_name(b):find('louise%-visit://') then"
                    " return vim.api.nvim_buf_get_lines(b, 0, -1, false) end end")
    assert url in view
    assert nvim.lua("return #_G.t_opened") == 0
    assert "You did not open the page (decline)." in nvim.chat_text()
