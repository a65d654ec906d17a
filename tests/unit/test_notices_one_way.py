"""What louise tells a person goes one way: through lua/louise/notice.lua, which makes a
frame's notices one message that never raises a hit-enter prompt. Any other module that
calls vim.notify (or echoes, prints, writes to the message area) directly can raise one
with a long or multi-line text, so the plugin's Lua is read here (comments and string
contents aside) and each such call is named with its file and line."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
THE_ONE_WAY = ROOT / "lua" / "louise" / "notice.lua"

# Code that writes to the message area itself (a reference to vim.notify counts too: an
# alias of it is a direct call elsewhere).
DIRECT = re.compile(r"\bvim\s*\.\s*notify\b(?!_)|\bnvim_echo\b|\bnvim_err_writeln?\b"
                    r"|\bnvim_out_write\b|(?<![.:\w])print\s*\(|\bvim\s*\.\s*cmd\s*\.\s*echo")
# A command string that echoes (vim.cmd('echomsg …'), nvim_command).
ECHO_COMMAND = re.compile(r"^\s*(echo|echom|echomsg|echoerr|echon)\b")
LONG_BRACKET = re.compile(r"\[(=*)\[")


def code_and_strings(source: str) -> tuple[str, list[tuple[int, str]]]:
    """The source with comments and string contents blanked (lines kept), and the strings
    with the line each starts on."""
    out: list[str] = []
    strings: list[tuple[int, str]] = []
    i, n = 0, len(source)
    while i < n:
        ch = source[i]
        line = source.count("\n", 0, i) + 1
        if source.startswith("--", i):
            bracket = LONG_BRACKET.match(source, i + 2)
            if bracket:
                end = source.find("]" + bracket.group(1) + "]", bracket.end())
                end = n if end < 0 else end + len(bracket.group(1)) + 2
            else:
                end = source.find("\n", i)
                end = n if end < 0 else end
            out.append(re.sub(r"[^\n]", " ", source[i:end]))
            i = end
            continue
        bracket = LONG_BRACKET.match(source, i)
        if bracket:
            close = "]" + bracket.group(1) + "]"
            end = source.find(close, bracket.end())
            end = n if end < 0 else end
            strings.append((line, source[bracket.end():end]))
            out.append('""' + re.sub(r"[^\n]", " ", source[i + 2:end + len(close)]))
            i = end + len(close)
            continue
        if ch in "'\"":
            j = i + 1
            while j < n and source[j] != ch and source[j] != "\n":
                j += 2 if source[j] == "\\" else 1
            strings.append((line, source[i + 1:j]))
            out.append(ch + " " * (j - i - 1) + ch)
            i = j + 1
            continue
        out.append(ch)
        i += 1
    return "".join(out), strings


def direct_messages(source: str) -> list[int]:
    """The lines of `source` that write to the message area other than through notice."""
    code, strings = code_and_strings(source)
    lines = [code.count("\n", 0, m.start()) + 1 for m in DIRECT.finditer(code)]
    lines += [line for line, text in strings if ECHO_COMMAND.match(text)]
    return sorted(set(lines))


def test_no_module_but_notice_writes_to_the_message_area() -> None:
    found = []
    for path in sorted([*(ROOT / "lua").rglob("*.lua"), *(ROOT / "plugin").rglob("*.lua")]):
        if path == THE_ONE_WAY:
            continue
        for line in direct_messages(path.read_text(encoding="utf-8")):
            found.append(f"{path.relative_to(ROOT)}:{line}")
    assert found == [], ("call require('louise.notice').notify(text, level) instead: "
                         + ", ".join(found))


def test_the_check_finds_a_direct_call_and_passes_words_about_one() -> None:
    assert direct_messages("local x = 1\n  vim.notify('louise: hi', vim.log.levels.WARN)\n") \
        == [2]
    assert direct_messages("local say = vim.notify\n") == [1]
    assert direct_messages("vim.api.nvim_echo({{'hi'}}, true, {})\n") == [1]
    assert direct_messages("vim.cmd('echomsg \"hi\"')\n") == [1]
    assert direct_messages("vim.cmd.echo('1')\nprint('x')\n") == [1, 2]
    assert direct_messages(
        "-- vim.notify would raise a prompt\n"
        "--[[ vim.notify(\n ) ]]\n"
        "local s = 'vim.notify is what a plugin replaces'\n"
        "require('louise.notice').notify('louise: hi')\n"
        "vim.rpcnotify(chan, 'louise', 1)\n"
        "local t = [[print(1)]]\n"
        "x:print(1)\n") == []
    # The check reads the module it spares: notice.lua does call vim.notify.
    assert direct_messages(THE_ONE_WAY.read_text(encoding="utf-8")) != []
