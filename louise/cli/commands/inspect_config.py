"""The Agent tables of `config.toml` as `louise inspect` lists them, read without tomllib.

tomllib imports typing and datetime and compiles its regular expressions: ~8 ms of a
~50 ms `louise inspect` (issue 25 item 5), for the names of the `[agents.*]` tables. This
reader knows a plain subset of TOML exactly: comments, `[table.headers]`,
`[[arrays.of.tables]]`, `key = value`
with one key (bare or quoted, no escapes), one-line strings without escapes, `true`,
`false`, decimal integers and floats, arrays and inline tables of those. Within it, it
applies the rules tomllib applies (a key set twice, a table declared twice, a header
through a value are errors). Anything else in the file, or any such error, gives None:
the caller then reads the file with tomllib, so the answer is tomllib's for every file.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing (louise inspect's start)
if TYPE_CHECKING:
    from typing import Literal

_BARE_KEY = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
_KEY_START = _BARE_KEY | {'"', "'"}
_DIGITS = frozenset("0123456789")
# The control characters TOML allows in no comment or one-line string (a tab it allows).
_CONTROL = dict.fromkeys([*range(0x09), *range(0x0A, 0x20), 0x7F])
MAX_DEPTH = 32  # nested arrays and inline tables; deeper is left to tomllib


class _Unknown(Exception):
    """Outside the subset, or an error in it: tomllib says what the file is."""


class _Table:
    """A table: its keys, in order, to a table, an array of tables, or whether the value
    is a table (an inline one); `declared` once a header named it."""

    __slots__ = ("children", "declared")

    def __init__(self) -> None:
        self.children: dict[str, _Table | _Tables | bool] = {}
        self.declared = False


class _Tables:
    """An array of tables (`[[name]]`): a header through it names its last table."""

    __slots__ = ("tables",)

    def __init__(self) -> None:
        self.tables: list[_Table] = []


def agent_tables(text: str) -> dict[str, bool] | Literal[False] | None:
    """What `tomllib.loads(text)` has under `agents`: each key, in order, to whether its
    value is a table (`{}` without `agents`); False when `agents` is not a table; None when
    this reader cannot tell (outside its subset, or not valid TOML)."""
    try:
        root = _document(text.replace("\r\n", "\n"))
    except Exception:  # _Unknown, and anything unforeseen: tomllib decides
        return None
    agents = root.children.get("agents")
    if agents is None:
        return {}
    if isinstance(agents, _Table):
        return {name: isinstance(value, _Table) or value is True
                for name, value in agents.children.items()}
    if agents is True:  # an inline table: its keys are not kept here, tomllib reads them
        return None
    return False


def _document(src: str) -> _Table:
    root = current = _Table()
    end = len(src)
    pos = 0
    while True:
        pos = _skip_ws(src, pos)
        if pos >= end:
            return root
        char = src[pos]
        if char == "\n":
            pos += 1
            continue
        if char in _KEY_START:
            pos, key = _key(src, pos)
            if src[pos:pos + 1] != "=":  # a dotted key too
                raise _Unknown
            pos, is_table = _value(src, _skip_ws(src, pos + 1), 0)
            if key in current.children:
                raise _Unknown
            current.children[key] = is_table
        elif char == "[":
            pos, current = _header(src, pos, root)
        elif char != "#":
            raise _Unknown
        pos = _skip_comment(src, _skip_ws(src, pos))
        if pos < end and src[pos] != "\n":
            raise _Unknown


def _header(src: str, pos: int, root: _Table) -> tuple[int, _Table]:
    """A `[table]` or `[[array.of.tables]]` header: the position after it, and the table
    that the key/value lines below it go to."""
    array = src[pos + 1:pos + 2] == "["
    pos = _skip_ws(src, pos + (2 if array else 1))
    table = root
    while True:
        pos, key = _key(src, pos)
        last = src[pos:pos + 1] != "."
        child = table.children.get(key)
        if last and array:  # a new table at the end of the array
            if child is None:
                child = table.children[key] = _Tables()
            elif not isinstance(child, _Tables):
                raise _Unknown
            table = _Table()
            child.tables.append(table)
            break
        if child is None:
            child = table.children[key] = _Table()
        elif isinstance(child, _Tables) and not last:  # through it: its last table
            child = child.tables[-1]
        elif not isinstance(child, _Table):  # a value, or `[name]` of an array of tables
            raise _Unknown
        table = child
        if last:
            break
        pos = _skip_ws(src, pos + 1)
    close = "]]" if array else "]"
    if not src.startswith(close, pos) or table.declared:
        raise _Unknown
    table.declared = True
    return pos + len(close), table


def _skip_ws(src: str, pos: int) -> int:
    while src[pos:pos + 1] in (" ", "\t"):
        pos += 1
    return pos


def _skip_comment(src: str, pos: int) -> int:
    if src[pos:pos + 1] != "#":
        return pos
    end = src.find("\n", pos)
    if end < 0:
        end = len(src)
    _check_text(src[pos + 1:end])
    return end


def _check_text(text: str) -> None:
    if text.translate(_CONTROL) != text:
        raise _Unknown


def _key(src: str, pos: int) -> tuple[int, str]:
    """One key (bare, or quoted without escapes) and the position after it and the
    blanks that follow."""
    char = src[pos:pos + 1]
    if char == '"' or char == "'":
        return _skip_ws(src, _string(src, pos)), _string_text(src, pos)
    start = pos
    while src[pos:pos + 1] in _BARE_KEY and pos < len(src):
        pos += 1
    if pos == start:
        raise _Unknown
    return _skip_ws(src, pos), src[start:pos]


def _string(src: str, pos: int) -> int:
    """The position after a one-line string without escapes at `pos`."""
    quote = src[pos]
    if src.startswith(quote * 3, pos):  # a multi-line string (or an empty one and more)
        raise _Unknown
    end = src.find(quote, pos + 1)
    if end < 0:
        raise _Unknown
    text = src[pos + 1:end]
    if quote == '"' and "\\" in text:
        raise _Unknown
    _check_text(text)
    return end + 1


def _string_text(src: str, pos: int) -> str:
    return src[pos + 1:_string(src, pos) - 1]


def _value(src: str, pos: int, depth: int) -> tuple[int, bool]:
    """The position after the value at `pos` and the blanks that follow, and whether the
    value is a table."""
    if depth > MAX_DEPTH:
        raise _Unknown
    char = src[pos:pos + 1]
    if char == '"' or char == "'":
        pos = _string(src, pos)
    elif src.startswith("true", pos):
        pos += 4
    elif src.startswith("false", pos):
        pos += 5
    elif char == "[":
        pos = _array(src, pos, depth)
    elif char == "{":
        return _skip_ws(src, _inline_table(src, pos, depth)), True
    else:
        pos = _number(src, pos)
    return _skip_ws(src, pos), False


def _digits(src: str, pos: int) -> int:
    """After `[0-9](_?[0-9])*` at `pos`."""
    if src[pos:pos + 1] not in _DIGITS or pos >= len(src):
        raise _Unknown
    pos += 1
    while True:
        if src[pos:pos + 1] == "_":
            pos += 1
            if src[pos:pos + 1] not in _DIGITS or pos >= len(src):
                raise _Unknown
        if src[pos:pos + 1] not in _DIGITS or pos >= len(src):
            return pos
        pos += 1


def _number(src: str, pos: int) -> int:
    """A decimal integer or float (tomllib's grammar; no inf, nan, 0x, 0o, 0b)."""
    if src[pos:pos + 1] in ("+", "-"):
        pos += 1
    if src[pos:pos + 1] == "0":
        pos += 1
    elif src[pos:pos + 1] in _DIGITS and pos < len(src):
        pos = _digits(src, pos)
    else:
        raise _Unknown
    if src[pos:pos + 1] == ".":
        pos = _digits(src, pos + 1)
    if src[pos:pos + 1] in ("e", "E") and pos < len(src):
        pos += 1
        if src[pos:pos + 1] in ("+", "-") and pos < len(src):
            pos += 1
        pos = _digits(src, pos)
    return pos


def _skip_array_blanks(src: str, pos: int) -> int:
    while True:
        before = pos
        while src[pos:pos + 1] in (" ", "\t", "\n") and pos < len(src):
            pos += 1
        pos = _skip_comment(src, pos)
        if pos == before:
            return pos


def _array(src: str, pos: int, depth: int) -> int:
    pos = _skip_array_blanks(src, pos + 1)
    if src[pos:pos + 1] == "]":
        return pos + 1
    while True:
        pos, _ = _value(src, pos, depth + 1)
        pos = _skip_array_blanks(src, pos)
        char = src[pos:pos + 1]
        if char == "]":
            return pos + 1
        if char != ",":
            raise _Unknown
        pos = _skip_array_blanks(src, pos + 1)
        if src[pos:pos + 1] == "]":
            return pos + 1


def _inline_table(src: str, pos: int, depth: int) -> int:
    pos = _skip_ws(src, pos + 1)
    if src[pos:pos + 1] == "}":
        return pos + 1
    keys: set[str] = set()
    while True:
        pos, key = _key(src, pos)
        if src[pos:pos + 1] != "=" or key in keys:  # a dotted key, or a key twice
            raise _Unknown
        keys.add(key)
        pos, _ = _value(src, _skip_ws(src, pos + 1), depth + 1)
        char = src[pos:pos + 1]
        if char == "}":
            return pos + 1
        if char != ",":
            raise _Unknown
        pos = _skip_ws(src, pos + 1)
