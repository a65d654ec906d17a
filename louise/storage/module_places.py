"""Where a program's modules were found, kept between runs: importlib's search, skipped.

Importing a module not yet loaded asks each finder on `sys.meta_path`; the path finder
looks in each directory of the search path (`sys.path`, or the package's `__path__`) and
its loader names, reads and checks the bytecode, all in importlib's own Python: ~300,000
instructions for an empty module, half of them the search and the names. What the search
finds depends only on the names in those directories. So a program keeps, in one file of
its own in louise's state directory, the source and bytecode file each module of its start
came from, with the modification time of every directory searched for it (for a top-level
module, `sys.path` up to the entry it was in). At the next start a module whose search path
is the same and whose directories are unchanged gets its spec at once, with the path
finder's loader told where its bytecode is (`KeptLoader`: `SourceFileLoader` in all else;
the bytecode checked against the source as importlib checks it). A directory changed in
any way (a name added, removed or renamed in it: its time changes, which importlib's own
`FileFinder` trusts as well) drops whatever was found through it; a module not kept is
found as always, and kept for the next start. Only modules from a file are kept (source
and extension modules): not namespace packages, nor a module with a directory of its own
name beside it (an `__init__.py` added there would make that directory the package
without changing its parent's time).

The file is treated like the code cache's (code_cache.py): read only when it is the
user's own and nobody else can write it, bounded, ignored when it is not what this module
writes (another format, Python build or bytecode naming), and it never stops a start.
The Neovim engine's start (~285 modules answered): 515 -> 480 M instructions
(bench/engine_start.py --callgrind).
"""

from __future__ import annotations

import _imp
import marshal
import os
import stat
import sys
from importlib._bootstrap_external import MAGIC_NUMBER  # importlib.util's, without it
from importlib.machinery import ExtensionFileLoader, ModuleSpec, SourceFileLoader
from types import CodeType

TYPE_CHECKING = False  # typing's, without importing typing
if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import ModuleType
    from typing import Any

CACHE_DIR = "code-cache"
FORMAT = 1
MAX_MODULES = 2_048
MAX_FILE_BYTES = 1024 * 1024
BUILD = f"{sys.implementation.cache_tag} {sys.version}"

# A module kept: its source file, whether it is a package (an __init__.py), the
# directories searched for it (its package's path; for a top-level module, sys.path up to
# the entry it was found in) and its bytecode file ("": an extension module, the file is
# the module).
Place = tuple[str, bool, "tuple[str, ...]", str]
# What the bytecode files' names depend on, besides the source's (cache_from_source).
NAMING = (sys.implementation.cache_tag, sys.pycache_prefix, sys.flags.optimize)


class KeptLoader(SourceFileLoader):
    """The path finder's loader, told where the bytecode is: it reads it and checks it
    against the source as `SourceFileLoader.get_code` does (timestamp bytecode: the
    source's time and size), without recomputing the names; anything else (no bytecode
    yet, stale, hash-based) goes through `SourceFileLoader.get_code` itself."""

    def __init__(self, fullname: str, path: str, cached: str) -> None:
        super().__init__(fullname, path)
        self.cached = cached

    def get_code(self, fullname: str) -> Any:
        try:  # os's calls, not open(): a buffered file object costs as much as the read
            source = os.stat(self.path)
            fd = os.open(self.cached, os.O_RDONLY | os.O_CLOEXEC)
            try:
                size = os.fstat(fd).st_size
                data = os.read(fd, size)
            finally:
                os.close(fd)
        except OSError:
            return super().get_code(fullname)
        if size != len(data) or size < 16 or data[:4] != MAGIC_NUMBER \
                or data[4:8] != b"\0\0\0\0" \
                or int.from_bytes(data[8:12], "little") != int(source.st_mtime) & 0xFFFFFFFF \
                or int.from_bytes(data[12:16], "little") != source.st_size & 0xFFFFFFFF:
            return super().get_code(fullname)
        try:
            code = marshal.loads(memoryview(data)[16:])
        except (EOFError, ValueError, TypeError):
            return super().get_code(fullname)
        if type(code) is not CodeType:
            return super().get_code(fullname)
        _imp._fix_co_filename(code, self.path)  # type: ignore[attr-defined]  # as importlib
        return code


class KeptPlaces:
    """A finder first on `sys.meta_path` answering for the modules kept (see the module's
    docstring); None for any other, and the path finder finds it as always."""

    def __init__(self, places: dict[str, Place], times: dict[str, int | None]) -> None:
        self.places = places
        self.times = times  # directory -> st_mtime_ns when kept (None: missing)
        self._unchanged: dict[str, bool] = {}
        self.answered = 0
        self.stale = False  # a kept module was not answered for: its directories changed
        self.missed: list[str] = []  # asked, not kept: found as always

    def find_spec(self, name: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        place = self.places.get(name)
        if place is None:
            self.missed.append(name)
            return None
        origin, package, searched, cached = place
        if path is None:  # a top-level module: sys.path searched up to where it was
            if tuple(sys.path[:len(searched)]) != searched:
                self.stale = True
                return None
        elif tuple(path) != searched:
            self.stale = True
            return None
        for directory in searched:
            unchanged = self._unchanged.get(directory)
            if unchanged is None:
                unchanged = self._unchanged[directory] = \
                    mtime_ns(directory) == self.times.get(directory, -1)
            if not unchanged:
                self.stale = True
                return None
        if cached:
            spec = ModuleSpec(name, KeptLoader(name, origin, cached), origin=origin,
                              is_package=package)
            spec.cached = cached
        else:  # an extension module
            spec = ModuleSpec(name, ExtensionFileLoader(name, origin), origin=origin)
        spec.has_location = True
        if package:
            spec.submodule_search_locations = [os.path.dirname(origin)]
        self.answered += 1
        return spec

    def invalidate_caches(self) -> None:
        """`importlib.invalidate_caches()`: the directories are looked at again."""
        self._unchanged.clear()


KEPT_LOADERS = (SourceFileLoader, KeptLoader, ExtensionFileLoader)


def mtime_ns(directory: str) -> int | None:
    try:
        return os.stat(directory).st_mtime_ns
    except (OSError, ValueError):
        return None


_installed: dict[str, KeptPlaces] = {}


def install(program: str) -> KeptPlaces:
    """Answer for `program`'s kept modules from now on: call it before the start's
    imports. Idempotent."""
    finder = _installed.get(program)
    if finder is None:
        try:
            kept = read(cache_file_name(program))
        except Exception:  # a cache never stops a start
            kept = None
        places, times = kept if kept is not None else ({}, {})
        finder = _installed[program] = KeptPlaces(places, times)
    if finder not in sys.meta_path:
        sys.meta_path.insert(0, finder)
    return finder


def finish(program: str) -> bool:
    """The program's start is over: stop answering, and keep where its modules are
    when that differs from what was read (not when Python is told to write no
    bytecode). True when written; never raises."""
    finder = _installed.pop(program, None)
    if finder is None:
        return False
    # A new list, not the old one changed: another thread's import may be going through
    # the old one (the engine's thread imports on use), and a finder removed from under
    # its loop makes it skip the one after (the path finder: "No module named …").
    sys.meta_path = [entry for entry in sys.meta_path if entry is not finder]
    if sys.dont_write_bytecode or not (finder.stale or any(
            type(getattr(getattr(sys.modules.get(name), "__spec__", None), "loader", None))
            in KEPT_LOADERS for name in finder.missed)):
        return False  # nothing new was found, nothing kept went stale
    try:
        places, times = found(list(sys.modules.items()))
        write(cache_file_name(program), places, times)
    except Exception:  # a cache: whatever goes wrong, the start goes on without it
        return False
    return True


def found(modules: list[tuple[str, Any]]) -> tuple[dict[str, Place], dict[str, int | None]]:
    """Where `modules` (sys.modules' items) were found by the path finder, and the times
    of the directories searched for them."""
    sys_path = tuple(sys.path)
    places: dict[str, Place] = {}
    for name, module in modules:
        spec = getattr(module, "__spec__", None)
        loader = getattr(spec, "loader", None)
        origin = getattr(spec, "origin", None)
        cached = "" if type(loader) is ExtensionFileLoader else getattr(spec, "cached", None)
        if type(loader) not in KEPT_LOADERS or not isinstance(origin, str) \
                or not isinstance(cached, str) or not os.path.isabs(origin) \
                or len(places) >= MAX_MODULES:
            continue
        package = bool(cached) and os.path.basename(origin) == "__init__.py"
        parent, _, tail = name.rpartition(".")
        where = os.path.dirname(os.path.dirname(origin) if package else origin)
        if parent:
            parent_path = getattr(sys.modules.get(parent), "__path__", None)
            if not isinstance(parent_path, list):
                continue  # a namespace package's path changes as sys.path does
            searched = tuple(parent_path)
        elif where in sys_path:
            searched = sys_path[:sys_path.index(where) + 1]
        else:
            continue
        if not all(isinstance(entry, str) and os.path.isabs(entry) for entry in searched):
            continue  # "" (the working directory) or a relative entry
        if not package and os.path.isdir(os.path.join(where, tail)):
            continue  # a directory of its name beside it (see the module's docstring)
        places[name] = (origin, package, searched, cached)
    directories = {d for _, _, searched, _ in places.values() for d in searched}
    return places, {d: mtime_ns(d) for d in sorted(directories)}


def cache_file_name(program: str) -> str:
    from louise.storage import paths

    return os.path.join(paths.state_dir_name(), CACHE_DIR,
                        f"modules.{program}.{sys.implementation.cache_tag}")


def read(path: str) -> tuple[dict[str, Place], dict[str, int | None]] | None:
    """What `path` keeps; None when it is missing, unsafe, or not a file of this format,
    Python build and bytecode naming."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or not 0 < info.st_size <= MAX_FILE_BYTES \
                or (hasattr(os, "getuid") and info.st_uid != os.getuid()) \
                or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return None
        data = os.read(fd, info.st_size + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        kept = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None
    if not (type(kept) is tuple and len(kept) == 5 and kept[0] == FORMAT
            and kept[1] == BUILD and kept[2] == NAMING
            and type(kept[3]) is dict and type(kept[4]) is dict):
        return None
    places = {name: place for name, place in list(kept[3].items())[:MAX_MODULES]
              if type(name) is str and valid_place(place)}
    times = {d: t for d, t in kept[4].items()
             if type(d) is str and (t is None or type(t) is int)}
    return places, times


def valid_place(place: Any) -> bool:
    if not (type(place) is tuple and len(place) == 4 and type(place[0]) is str
            and type(place[1]) is bool and type(place[3]) is str):
        return False
    return type(place[2]) is tuple and all(type(d) is str for d in place[2])


def write(path: str, places: dict[str, Place], times: dict[str, int | None]) -> None:
    """Replace `path` (private, atomic)."""
    from pathlib import Path

    from louise.storage import durable

    data = marshal.dumps((FORMAT, BUILD, NAMING, places, times))
    if len(data) > MAX_FILE_BYTES:
        raise ValueError("the kept module places exceed the file's size bound")
    file = Path(path)
    durable.ensure_private_dir(file.parent.parent)
    durable.ensure_private_dir(file.parent)
    durable.atomic_write_bytes(file, data)
