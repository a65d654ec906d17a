"""The code `dataclasses` compiles for each class's methods, kept between runs like bytecode.

`@dataclass` writes a class's `__init__`, `__repr__`, `__eq__`, `__hash__`, … as source
text and compiles it when the class is made. The Neovim engine's start makes ~200 of
them: ~900 methods compiled, a quarter of its start's CPU (bench/RESULTS.md). A method's
text depends only on its class's fields and options, so the code compiled from the same
text is the same: a program (the engine, a CLI verb) keeps what it compiled in one file of
its own per Python build, in louise's state directory, reads it once when it starts, and
writes it back when it compiled something new. The methods are still made per class from
that code, in the class's own namespace: only the compile is skipped.

`install` shadows the built-in `exec` inside the `dataclasses` module alone (a module
global is looked up before the built-ins); nothing else in the process changes. A file
that is missing, not the user's own, writable by others, too large, from another Python
build or not what this module writes is ignored (and replaced at the next write); the
cache never stops a start. Bounded: at most MAX_ENTRIES methods and MAX_FILE_BYTES a
file. It is code run by louise's own process, so it is treated like `__pycache__`: kept
only in the user's private state directory and read only when nobody else can write it.

A module a program imports on first use, after its start (the checkpoint store, an
agent's elicitation), is imported with `import_module`: the program's cache is read
again for it and saved when the import compiled something new, so a feature's first use
does not compile what the next run has already (~3× its import otherwise).
"""

from __future__ import annotations

import builtins
import marshal
import mmap
import os
import stat
import sys
from types import CodeType, ModuleType

TYPE_CHECKING = False  # typing's, without importing typing (louise inspect's start)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

try:  # hashlib's own blake2b, without importing hashlib (and OpenSSL): ~3 ms of a start
    from _blake2 import blake2b
except ImportError:  # a Python built without it
    from hashlib import blake2b

MAX_ENTRIES = 4_096
MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_STORE_BYTES = 7 * 1024 * 1024  # the marshalled code; the rest of a file is its index
MAX_SOURCE_CHARS = 16 * 1024  # a longer generated method is compiled every time, not kept
CACHE_DIR = "code-cache"
FORMAT = 4
HEAD = 8  # the header's size, first in a file
# The marshal format and the compiler's output change between Python builds.
BUILD = f"{sys.implementation.cache_tag} {sys.version}"


class CompiledMethods:
    """`exec` for `dataclasses`: a method's source text is compiled once, then its code
    comes from what is kept (read from the file, and what this process compiled since).

    Kept as one buffer of marshalled code objects and an index of the texts' digests,
    each unmarshalled when used (the code then lives in the method made from it): what the
    cache holds is a few large blocks, given back whole when the start is over (`finish`),
    not a thousand small objects left among the process's own (+1 MiB of idle RSS)."""

    def __init__(self, index: dict[bytes, tuple[int, int]] | None = None,
                 blob: bytes | memoryview = b"") -> None:
        self.index: dict[bytes, tuple[int, int]] = dict(index or {})
        # What was read stays where it was read: the file mapped (`read`). A copy of it
        # in the heap, freed after the start, left its place in the idle RSS (and glibc's
        # mmap threshold raised); what is compiled here goes after it, in `new`.
        self.base = blob
        self.new = bytearray()
        self.added = 0  # compiled by this process, not yet written
        self.reused = 0

    @property
    def store(self) -> bytes:
        """Every method's code, as `index` places it."""
        return bytes(self.base) + self.new

    def compacted(self) -> tuple[dict[bytes, tuple[int, int]], bytes]:
        """The index and code of what is held, without the code of replaced entries."""
        index: dict[bytes, tuple[int, int]] = {}
        parts: list[bytes | bytearray | memoryview] = []
        end = 0
        for key, where in list(self.index.items()):  # a snapshot: another thread may add
            blob = self._blob(where)
            index[key] = (end, len(blob))
            parts.append(blob)
            end += len(blob)
        return index, b"".join(parts)

    def _blob(self, where: tuple[int, int]) -> bytes | bytearray | memoryview:
        start, size = where
        base = len(self.base)
        if start < base:
            return self.base[start:start + size]
        return self.new[start - base:start - base + size]

    def exec(self, source: Any, globals_: dict[str, Any] | None = None,
             locals_: Any = None, /) -> None:
        if type(source) is str and len(source) <= MAX_SOURCE_CHARS:
            key = digest(source)
            where = self.index.get(key)
            code = _code(self._blob(where)) if where else None
            if code is None:
                # dont_inherit: compiled as `exec` compiles dataclasses' text (that module
                # has no __future__ imports; this one has).
                code = compile(source, "<string>", "exec", dont_inherit=True)
                blob = marshal.dumps(code)
                end = len(self.base) + len(self.new)
                if len(self.index) < MAX_ENTRIES and end + len(blob) <= MAX_STORE_BYTES:
                    self.index[key] = (end, len(blob))
                    self.new += blob
                    self.added += 1
            else:
                self.reused += 1
            source = code
        builtins.exec(source, globals_, locals_)


def digest(source: str) -> bytes:
    """A method's text, named (128-bit BLAKE2b: two texts never share one in practice)."""
    return blake2b(source.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _code(blob: bytes | bytearray | memoryview) -> CodeType | None:
    try:
        code = marshal.loads(blob)
    except (EOFError, ValueError, TypeError):
        return None
    return code if type(code) is CodeType and code.co_filename == "<string>" else None


_installed: dict[str, CompiledMethods] = {}
_started: list[str] = []  # the program whose start finished in this process (`finish`)
_later: list[Any] = []  # the lock of `import_module`, made on first use (no threading here)


def cache_file(program: str) -> Path:
    """The file of one program's methods (`engine`, `cli-inspect`, …)."""
    from pathlib import Path

    return Path(cache_file_name(program))


def cache_file_name(program: str) -> str:
    """`str(cache_file(program))`, without pathlib (`louise inspect` reads it)."""
    from louise.storage import paths

    return os.path.join(paths.state_dir_name(), CACHE_DIR,
                        f"dataclasses.{program}.{sys.implementation.cache_tag}")


def install(program: str) -> CompiledMethods:
    """Use (and from now on fill) `program`'s cache for every dataclass made in this
    process; call it before the modules that make them are imported. Idempotent."""
    import dataclasses

    methods = _installed.get(program)
    if methods is None:
        try:
            kept = read(cache_file_name(program))
        except Exception:  # a cache never stops a start (read() expects none: belt and braces)
            kept = ({}, b"")
        methods = _installed[program] = CompiledMethods(*kept)
    setattr(dataclasses, "exec", methods.exec)  # noqa: B010 (the module has no such name)
    return methods


def import_dataclasses_without_inspect() -> None:
    """Import `dataclasses` with `inspect` loaded when it is first used, not with it.

    `dataclasses` imports `inspect` (with `ast`, `dis`, `tokenize`, …: ~10 ms, a fifth of
    `louise inspect`) for one use: the signature it writes as the docstring of a class
    that has none (louise's have theirs). A short program (`louise inspect`) calls this
    before anything imports `dataclasses`; the module it is given stands in for `inspect`
    only inside `dataclasses`, loads the real one on first use and then is replaced by it
    there; it leaves `sys.modules` as it was, so any other `import inspect` gets the real
    module. Does nothing when either module is already imported."""
    if "dataclasses" in sys.modules or "inspect" in sys.modules:
        return
    stand_in = _InspectOnFirstUse("inspect")
    sys.modules["inspect"] = stand_in
    try:
        import dataclasses  # noqa: F401 (imported now, with the stand-in)
    finally:
        if sys.modules.get("inspect") is stand_in:
            del sys.modules["inspect"]


class _InspectOnFirstUse(ModuleType):
    """`inspect` as `dataclasses` sees it until it uses it (see
    `import_dataclasses_without_inspect`)."""

    def __getattr__(self, name: str) -> Any:
        if sys.modules.get("inspect") is self:
            del sys.modules["inspect"]
        import dataclasses
        import inspect

        if vars(dataclasses).get("inspect") is self:
            dataclasses.inspect = inspect  # type: ignore[attr-defined]
        return getattr(inspect, name)


def save(program: str) -> bool:
    """Write `program`'s cache if this process compiled methods it did not hold (not when
    Python is told to write no bytecode). True when written; never raises."""
    methods = _installed.get(program)
    if methods is None or not methods.added or sys.dont_write_bytecode:
        return False
    try:
        write(cache_file(program), *methods.compacted())
    except Exception:  # a cache: whatever goes wrong, the start goes on without it
        return False
    methods.added = 0
    return True


def finish(program: str, *, keep_new: bool = True) -> bool:
    """The program's start is over: save its cache (as `save`; not with `keep_new` false:
    a read-only verb reads another program's cache and writes nothing), then let
    `dataclasses` compile as usual and drop the texts and code held (the classes keep
    their methods). True when written."""
    methods = _installed.get(program)
    if methods is not None:
        import dataclasses

        if vars(dataclasses).get("exec") == methods.exec:
            delattr(dataclasses, "exec")  # first: other threads compile as usual from now
    written = save(program) if keep_new else False
    _installed.pop(program, None)
    if keep_new:
        _started[:] = [program]
    return written


def import_module(name: str) -> ModuleType:
    """Import `name` after the program's start, with its dataclasses' methods from the
    cache of the program whose start finished in this process (read again, saved when
    something new was compiled); a plain import when none did or `name` is imported.
    It reads (and may write) the cache file: call it off the event loop."""
    import importlib

    if name in sys.modules or not _started:
        return importlib.import_module(name)
    if not _later:
        import threading

        _later.append(threading.Lock())
    with _later[0]:  # one program's cache installed at a time
        program = _started[0]
        install(program)
        try:
            return importlib.import_module(name)
        finally:
            finish(program)


def read(path: Path | str) -> tuple[dict[bytes, tuple[int, int]], memoryview | bytes]:
    """The index and code kept in `path` (the code as the file mapped, read-only); empty
    when it is missing, unsafe or not a cache of this Python build."""
    empty: tuple[dict[bytes, tuple[int, int]], memoryview | bytes] = ({}, b"")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC)
    except OSError:
        return empty
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or not HEAD < info.st_size <= MAX_FILE_BYTES \
                or (hasattr(os, "getuid") and info.st_uid != os.getuid()) \
                or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return empty
        # Written by rename, never in place: the mapping keeps the file read.
        view = memoryview(mmap.mmap(fd, info.st_size, access=mmap.ACCESS_READ))
    except (OSError, ValueError):
        return empty
    finally:
        os.close(fd)
    size = int.from_bytes(view[:HEAD], "big")
    if size > len(view) - HEAD:
        return empty
    try:
        header = marshal.loads(view[HEAD:HEAD + size])
    except (EOFError, ValueError, TypeError):
        return empty
    if not (isinstance(header, tuple) and len(header) == 3 and header[0] == FORMAT
            and header[1] == BUILD and isinstance(header[2], dict)):
        return empty
    blob = view[HEAD + size:]
    index = {key: (where[0], where[1])
             for key, where in list(header[2].items())[:MAX_ENTRIES]
             if type(key) is bytes and len(key) == 16 and type(where) is tuple
             and len(where) == 2 and all(type(n) is int for n in where)
             and where[0] >= 0 and where[1] > 0 and where[0] + where[1] <= len(blob)}
    return index, blob


def encode(index: dict[bytes, tuple[int, int]], store: bytes | bytearray) -> bytes:
    """A cache file: its header's size, the header (format, Python build, index), then
    the code the index places."""
    header = marshal.dumps((FORMAT, BUILD, dict(list(index.items())[:MAX_ENTRIES])))
    return len(header).to_bytes(HEAD, "big") + header + bytes(store)


def write(path: Path, index: dict[bytes, tuple[int, int]], store: bytes | bytearray) -> None:
    """Replace `path` with `index` and `store` (private, atomic); nothing past the bounds."""
    from louise.storage import durable

    data = encode(index, store)
    if len(data) > MAX_FILE_BYTES:
        raise ValueError("the compiled methods exceed the cache's size bound")
    durable.ensure_private_dir(path.parent.parent)
    durable.ensure_private_dir(path.parent)
    durable.atomic_write_bytes(path, data)
