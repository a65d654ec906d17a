"""Text an agent sent, made safe to put into louise's own Markdown (`louise export`,
`:LouiseExport`). Pure: no I/O.

An export is louise's account of a session: `## You` and `## Agent` sections, louise's
notes in italics. Agent text (replies, thoughts, the history an agent replays, titles)
must not be able to write that account itself, so `agent_markdown`:

- shifts every heading it holds two levels down (`#` → `###`, `##` → `####`, capped at
  `######`): an agent's headings stay headings, below louise's sections (levels 1 and 2);
- writes setext underlines so they make no heading (`===` as `\\===`; `---` as the
  thematic break `- - -`, which it already was wherever it was not an underline);
- writes `<` as `&lt;` where it would open an HTML heading (`<h2>`) or an HTML block that
  runs on past a blank line (`<!--`, `<?`, `<!X`, `<script`, `<pre`, `<style`,
  `<textarea`), which could hide or restyle what follows;
- closes a code fence it left open, so louise's next section is not swallowed by it.

Code blocks are left as they are (a `# comment` in a fence is not a heading). Where
whether a line is inside a fence depends on a list or quote the fence sits in, the line
is treated as outside it: a mistake then changes how a line of code looks, never lets a
heading through.

`visible_controls` writes control characters as visible stand-ins (C0 controls and DEL
as their Unicode pictures, `␛ ␇ ␀ ␡ ␍`, as in Neovim; C1 controls, bidi overrides and
isolates, and line and paragraph separators as `�`, as on the terminal), so a file holds
no escape sequence a terminal or editor would act on. Tabs and newlines stay; CR LF is a
newline.
"""

from __future__ import annotations

import re

REPLACEMENT = "\ufffd"

_FENCE = re.compile(r"( {0,3})(`{3,}|~{3,})(.*)")
# Any indentation: in a list item a heading may sit deeper than 3 spaces (in an indented
# code block the change shows, which is the safe side).
_ATX = re.compile(r"([ \t]*)(#{1,6})(?=[ \t]|$)")
_EQUALS = re.compile(r"([ \t]*)(=+)[ \t]*")
_DASHES = re.compile(r"([ \t]*)(-+)[ \t]*")
# A blockquote marker or a list item's marker, with the spaces that follow it (at any
# indentation: in a nested list it may sit deeper than 3 spaces).
_CONTAINER = re.compile(r"[ \t]*(?:>[ \t]?|(?:[-+*]|\d{1,9}[.)])(?:[ \t]+|$))")
_QUOTES = re.compile(r"(?:[ \t]*>[ \t]?)*")
# A line that may start an HTML block: its content is raw HTML (no Markdown, so no code
# fence either) until a blank line, or for some (`<!--`, `<pre`, …) past it.
_HTML_BLOCK = re.compile(r"([ \t]*)<(?=[A-Za-z/!?])")
_HTML_HEADING = re.compile(r"<(?=/?h[1-6](?:[\s/>]|$))", re.IGNORECASE)
_BACKTICKS = re.compile(r"`+")
# A line that may be Markdown's business (a marker, a fence, HTML; else it is text).
_SPECIAL_START = re.compile(r"[ \t]*(?:[#=\-<`~>+*]|\d{1,9}[.)])")
# A quick test: text with none of these needs no rewriting (most replies).
_MAYBE = re.compile(r"^[ \t>*+\-\d.)]*[#=\-<`~]|</?h[1-6]", re.MULTILINE | re.IGNORECASE)

_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
                       "\u202a-\u202e\u2066-\u2069]")


def _picture(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)
    if code == 0x7F:
        return "\u2421"
    return REPLACEMENT


def visible_controls(text: str) -> str:
    """`text` with every control character written as a visible stand-in."""
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    return _CONTROLS.sub(_picture, text)


class _Fence:
    """A code fence the agent opened: its marker, the blockquote markers it sits in and
    the column of the list item holding it (0 at the top level)."""

    __slots__ = ("char", "column", "length", "quotes")

    def __init__(self, char: str, length: int, quotes: int, column: int) -> None:
        self.char, self.length, self.quotes, self.column = char, length, quotes, column

    def closer(self) -> str:
        return "> " * self.quotes + " " * self.column + self.char * self.length


def _split_containers(line: str) -> tuple[str, str]:
    """(the container markers at the start of `line`, the rest)."""
    end = 0
    while True:
        match = _CONTAINER.match(line, end)
        if match is None or match.end() == end:
            return line[:end], line[end:]
        end = match.end()


def _strip_quotes(line: str, limit: int = 1_000) -> tuple[str, int, str]:
    """(the blockquote markers at the start of `line`, at most `limit` of them; how
    many; the rest)."""
    quotes = 0
    rest = line
    while quotes < limit:
        stripped = rest.lstrip(" ")
        if len(rest) - len(stripped) > 3 or not stripped.startswith(">"):
            break
        quotes += 1
        rest = stripped[1:]
        if rest.startswith((" ", "\t")):
            rest = rest[1:]
    return line[:len(line) - len(rest)], quotes, rest


def _indent(text: str) -> int:
    expanded = text.expandtabs(4)
    return len(expanded) - len(expanded.lstrip(" "))


def _in_fence(line: str, fence: _Fence) -> bool:
    """Whether `line` is still in `fence` (else the quote or list item holding the
    fence ended before it, and the fence with it)."""
    if not line.strip(" \t"):
        return fence.quotes == 0  # a blank line ends a blockquote, not a list item
    _, quotes, rest = _strip_quotes(line, fence.quotes)
    if quotes < fence.quotes:
        return False
    return not rest.strip(" \t") or _indent(rest) >= fence.column


def _closes(line: str, fence: _Fence) -> bool:
    _, _, rest = _strip_quotes(line, fence.quotes)
    if not fence.column <= _indent(rest) <= fence.column + 3:
        return False
    body = rest.lstrip(" \t")
    run = len(body) - len(body.lstrip(fence.char))
    return run >= fence.length and not body[run:].strip(" \t")


def _opens(line: str) -> tuple[_Fence, str] | None:
    """The fence `line` opens and the line as written, if it opens one. A fence indented
    1-3 spaces with no list marker on its line is written at its column 0: where it sits
    (in a list item above it, which would end it, or at the top level, where only its
    closing fence does) then no longer depends on lines before it."""
    quote_prefix, quotes, after_quotes = _strip_quotes(line)
    prefix, rest = _split_containers(after_quotes)
    opening = _FENCE.fullmatch(rest)
    if opening is None or (opening.group(2)[0] == "`" and "`" in opening.group(3)):
        return None
    marker = opening.group(2)
    if not prefix:
        return _Fence(marker[0], len(marker), quotes, 0), quote_prefix + rest.lstrip(" ")
    column = len(prefix.expandtabs(4)) + len(opening.group(1))
    return _Fence(marker[0], len(marker), quotes, column), line


def _outside_code_spans(line: str, pattern: re.Pattern[str], replacement: str) -> str:
    """`pattern` replaced in `line`, except inside code spans on the line."""
    if "`" not in line:
        return pattern.sub(replacement, line)
    out: list[str] = []
    position = 0
    runs = list(_BACKTICKS.finditer(line))
    index = 0
    while index < len(runs):
        opening = runs[index]
        closing = next((later for later in runs[index + 1:]
                        if len(later.group()) == len(opening.group())), None)
        if closing is None:
            index += 1
            continue
        out.append(pattern.sub(replacement, line[position:opening.start()]))
        out.append(line[opening.start():closing.end()])
        position = closing.end()
        index = runs.index(closing) + 1
    out.append(pattern.sub(replacement, line[position:]))
    return "".join(out)


def _rewrite(line: str, previous_blank: bool) -> str:
    """One line outside code: headings shifted, underlines and HTML openers neutralised."""
    quotes = _QUOTES.match(line)
    quote_prefix = quotes.group() if quotes is not None else ""
    after_quotes = line[len(quote_prefix):]
    if (match := _EQUALS.fullmatch(after_quotes)) is not None:
        after_quotes = match.group(1) + "\\" + after_quotes[len(match.group(1)):]
    elif (match := _DASHES.fullmatch(after_quotes)) is not None:
        dashes = match.group(2)
        if len(dashes) >= 3:
            after_quotes = match.group(1) + " ".join(dashes)
        elif not previous_blank:
            after_quotes = match.group(1) + "\\" + after_quotes[len(match.group(1)):]
    else:
        prefix, rest = _split_containers(after_quotes)
        match = _ATX.match(rest)
        if match is not None:
            level = min(len(match.group(2)) + 2, 6)
            rest = match.group(1) + "#" * level + rest[match.end():]
        else:
            rest = _HTML_BLOCK.sub(r"\1&lt;", rest, count=1)
        after_quotes = prefix + rest
    line = quote_prefix + after_quotes
    if "<" in line:
        line = _outside_code_spans(line, _HTML_HEADING, "&lt;")
    return line


def agent_markdown(text: str) -> str:
    """Agent `text` that cannot open a section of louise's export, nor hide what follows
    it (see the module docstring); its own Markdown renders as it meant otherwise."""
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    if _MAYBE.search(text) is None:
        return text
    out: list[str] = []
    fence: _Fence | None = None
    previous_blank = True
    for line in text.split("\n"):
        if fence is None and _SPECIAL_START.match(line) is None:
            # Text (most lines): it opens nothing; only an inline HTML heading to write.
            if "<" in line and _HTML_HEADING.search(line):
                line = _outside_code_spans(line, _HTML_HEADING, "&lt;")
            out.append(line)
            previous_blank = not line.strip()
            continue
        if fence is not None and fence.quotes == 0 and fence.column == 0 \
                and not line.lstrip(" ").startswith(fence.char):
            out.append(line)  # in a fence at the top level, and not its end
            previous_blank = False
            continue
        if fence is not None and _in_fence(line, fence):
            out.append(line)
            if _closes(line, fence):
                fence = None
            previous_blank = not line.strip()
            continue
        opened = _opens(line)  # (a fence whose list item or quote ended ended with it)
        fence = opened[0] if opened is not None else None
        if opened is not None:
            out.append(opened[1])
            previous_blank = False
            continue
        out.append(_rewrite(line, previous_blank))
        previous_blank = not line.strip()
    if fence is not None:
        out.append(fence.closer())
    return "\n".join(out)
