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
"""

from __future__ import annotations

import builtins
import hashlib
import marshal
import os
import stat
import sys
from pathlib import Path
from types import CodeType
from typing import Any

MAX_ENTRIES = 4_096
MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_SOURCE_CHARS = 16 * 1024  # a longer generated method is compiled every time, not kept
CACHE_DIR = "code-cache"
FORMAT = 2
# The marshal format and the compiler's output change between Python builds.
BUILD = f"{sys.implementation.cache_tag} {sys.version}"


class CompiledMethods:
    """`exec` for `dataclasses`: a method's source text is compiled once, then its code
    comes from `known` (read from the file, and what this process compiled since).

    Held as the texts' digests and each code object marshalled, unmarshalled when used:
    the code then lives in the method made from it, and what the cache holds is dropped
    whole when the start is over (`finish`), not left as many small objects among the
    process's own."""

    def __init__(self, known: dict[bytes, bytes] | None = None) -> None:
        self.known: dict[bytes, bytes] = dict(known or {})
        self.added = 0  # compiled by this process, not yet written
        self.reused = 0

    def exec(self, source: Any, globals_: dict[str, Any] | None = None,
             locals_: Any = None, /) -> None:
        if type(source) is str and len(source) <= MAX_SOURCE_CHARS:
            key = digest(source)
            blob = self.known.get(key)
            code = _code(blob) if blob is not None else None
            if code is None:
                # dont_inherit: compiled as `exec` compiles dataclasses' text (that module
                # has no __future__ imports; this one has).
                code = compile(source, "<string>", "exec", dont_inherit=True)
                if len(self.known) < MAX_ENTRIES:
                    self.known[key] = marshal.dumps(code)
                    self.added += 1
            else:
                self.reused += 1
            source = code
        builtins.exec(source, globals_, locals_)


def digest(source: str) -> bytes:
    """A method's text, named (128-bit BLAKE2b: two texts never share one in practice)."""
    return hashlib.blake2b(source.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _code(blob: bytes) -> CodeType | None:
    try:
        code = marshal.loads(blob)
    except (EOFError, ValueError, TypeError):
        return None
    return code if type(code) is CodeType and code.co_filename == "<string>" else None


_installed: dict[str, CompiledMethods] = {}


def cache_file(program: str) -> Path:
    """The file of one program's methods (`engine`, `cli-inspect`, …)."""
    from louise.storage import paths

    return paths.state_dir() / CACHE_DIR / f"dataclasses.{program}.{sys.implementation.cache_tag}"


def install(program: str) -> CompiledMethods:
    """Use (and from now on fill) `program`'s cache for every dataclass made in this
    process; call it before the modules that make them are imported. Idempotent."""
    import dataclasses

    methods = _installed.get(program)
    if methods is None:
        methods = _installed[program] = CompiledMethods(read(cache_file(program)))
    setattr(dataclasses, "exec", methods.exec)  # noqa: B010 (the module has no such name)
    return methods


def save(program: str) -> bool:
    """Write `program`'s cache if this process compiled methods it did not hold (not when
    Python is told to write no bytecode). True when written; never raises."""
    methods = _installed.get(program)
    if methods is None or not methods.added or sys.dont_write_bytecode:
        return False
    try:
        write(cache_file(program), methods.known)
    except (OSError, ValueError):
        return False
    methods.added = 0
    return True


def finish(program: str) -> bool:
    """The program's start is over: save its cache (as `save`), then let `dataclasses`
    compile as usual and drop the texts and code held (the classes keep their methods).
    True when written."""
    written = save(program)
    if _installed.pop(program, None) is not None:
        import dataclasses

        if "exec" in vars(dataclasses):
            delattr(dataclasses, "exec")
    return written


def read(path: Path) -> dict[bytes, bytes]:
    """The methods kept in `path`; empty when it is missing, unsafe or not a cache of this
    Python build."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC)
    except OSError:
        return {}
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES \
                or (hasattr(os, "getuid") and info.st_uid != os.getuid()) \
                or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return {}
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError:
        return {}
    finally:
        os.close(fd)
    try:
        document = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return {}
    if not (isinstance(document, tuple) and len(document) == 3
            and document[0] == FORMAT and document[1] == BUILD
            and isinstance(document[2], dict)):
        return {}
    return {key: blob for key, blob in list(document[2].items())[:MAX_ENTRIES]
            if type(key) is bytes and len(key) == 16 and type(blob) is bytes}


def write(path: Path, known: dict[bytes, bytes]) -> None:
    """Replace `path` with `known` (private, atomic); nothing past the bounds."""
    from louise.storage import durable

    entries = dict(list(known.items())[:MAX_ENTRIES])
    data = marshal.dumps((FORMAT, BUILD, entries))
    if len(data) > MAX_FILE_BYTES:
        raise ValueError("the compiled methods exceed the cache's size bound")
    durable.ensure_private_dir(path.parent.parent)
    durable.ensure_private_dir(path.parent)
    durable.atomic_write_bytes(path, data)
