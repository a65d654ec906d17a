"""The validated-configuration cache: a start whose inputs have not changed since the last
validation gets that validation's result (the same `Config`, warnings and all) without
importing pydantic (`schema/`, ~70 ms and ~7 MiB, plus ~20 ms building its validators).

An entry is kept under a digest of everything validation depends on:

- the input: `setup{}`'s options canonically encoded (`_canonical`: every value typed,
  order kept, as `agents` keeps it), or `config.toml`'s path and bytes (or that there is
  none), and `setup{}`'s host options;
- the validator itself: this cache's format, the Python build, and the size and
  modification time of every module of `louise/config/` and `louise/config/schema/`, of
  `louise/limits/governor.py` (the budgets' window names, `near_percent`'s default) and of
  the pydantic and pydantic-core packages (their `__init__.py` and pydantic's
  `version.py`), as a `.pyc` is checked against its source;
- what the validators read beyond their input: `HOME` (`~` expanded in `command`, `cwd`,
  `fs.roots`, the budgets' workspaces: `os.path.expanduser`) and the demo agent's
  command, `os.path.abspath(sys.executable)`. A configuration with `~user` (another
  user's home, from the password database) is never kept; nor is any when `HOME` is not
  set (expanduser then reads that database too). Nothing else: `cwd`, `PATH` and the
  files a configuration names are read when it is used, not when it is validated.

What is kept is the result as plain JSON data (`data.py`) and the warnings, written only
when reading it back gives exactly the `Config` validation gave (else the input is
validated every time), at most once per new input and never on a hit. An invalid
configuration is never kept: its problems come from pydantic every time. Written also
under PYTHONDONTWRITEBYTECODE: it is data in louise's own state directory, not bytecode
beside a source (and a person's every start would otherwise pay pydantic). The file is
`storage/config_cache.py`'s; whatever goes wrong with it, the start validates."""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from louise.config.data import (
    config_from_data,
    config_to_data,
    warnings_from_data,
    warnings_to_data,
)
from louise.config.model import Config
from louise.storage import config_cache

if TYPE_CHECKING:
    from pathlib import Path

try:  # hashlib's own blake2b, without importing hashlib (and OpenSSL)
    from _blake2 import blake2b
except ImportError:  # a Python built without it
    from hashlib import blake2b

FORMAT = 1
MAX_INPUT_CHARS = 4 * 1024 * 1024  # a larger input is validated every time
_CONFIG_DIR = os.path.dirname(os.path.abspath(__file__))
_VALIDATOR_FILES = (os.path.join(os.path.dirname(_CONFIG_DIR), "limits", "governor.py"),)


class _NotKept(Exception):
    """An input the cache cannot key exactly: validated every time."""


def load_config_cached(path: Path | None = None) -> Config:
    """`loading.load_config`'s result (`config.toml`, default `paths.config_file()`),
    through the cache."""
    from louise.config.loading import config_from_file, read_config_file
    from louise.storage import paths

    file = path if path is not None else paths.config_file()
    raw = read_config_file(file)
    return cached_config(("config.toml", str(file), raw),
                         lambda: config_from_file(raw, str(file)), lambda: parse_toml(raw))


def parse_toml(raw: bytes | None) -> Any:
    """A valid file's bytes as validation read them (None: no file, defaults)."""
    if raw is None:
        return {}
    import tomllib

    return tomllib.loads(raw.decode("utf-8"))


def cached_config(inputs: tuple[Any, ...], validate: Callable[[], Config],
                  parsed: Callable[[], Any], *, keep: bool = True) -> Config:
    """`validate()`'s result, from the cache when the same `inputs` were validated before
    (with the same validator and environment); else validated, and kept when it is valid.
    `parsed()` is the input as validation reads it (to refuse `~user`); `inputs` must be
    all that `validate` reads. A ConfigError from `validate` goes through, nothing kept.
    `keep` false: read only (what only looks, e.g. a health check, creates no file)."""
    key = _key(inputs)
    path = config_cache.cache_file_name() if key is not None else None
    if key is not None and path is not None:
        entry = config_cache.read_entry(path, key)
        if entry is not None:
            try:
                return decode(entry)
            except (KeyError, TypeError, ValueError, AttributeError):
                pass  # not what this module writes: validated, and replaced below
    config = validate()
    if keep and key is not None and path is not None:
        entry = encode(config)
        if entry is not None and not _other_homes(parsed()):
            config_cache.write_entry(path, key, entry)
    return config


def encode(config: Config) -> dict[str, Any] | None:
    """`config` as the cache keeps it; None when reading it back would not give exactly
    `config` (e.g. a `_meta` table with number keys, which JSON makes strings)."""
    entry = {"config": config_to_data(config), "warnings": warnings_to_data(config.warnings)}
    try:
        again = decode(json.loads(json.dumps(entry, allow_nan=False)))
    except (KeyError, TypeError, ValueError, RecursionError):
        return None
    return entry if again == config else None


def decode(entry: Any) -> Config:
    return config_from_data(entry["config"], warnings_from_data(entry["warnings"]))


def _key(inputs: tuple[Any, ...]) -> str | None:
    """The digest of `inputs`, the validator and what it reads; None: not kept."""
    home = os.environ.get("HOME")
    if not home:
        return None
    parts: list[str] = []
    try:
        _canonical(("louise config", FORMAT, config_cache.BUILD, home,
                    os.path.abspath(sys.executable), _validator_stamp(), inputs), parts)
    except (_NotKept, OSError, RecursionError):
        return None
    if sum(map(len, parts)) > MAX_INPUT_CHARS:
        return None
    digest = blake2b(digest_size=20)
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _validator_stamp() -> list[Any]:
    """Each module the validation runs: its name, size and modification time (OSError
    when one cannot be found; _NotKept when pydantic cannot)."""
    from importlib.machinery import PathFinder

    files = [entry.path for directory in (_CONFIG_DIR, os.path.join(_CONFIG_DIR, "schema"))
             for entry in os.scandir(directory) if entry.name.endswith(".py")]
    files += _VALIDATOR_FILES
    for package in ("pydantic", "pydantic_core"):
        spec = PathFinder.find_spec(package)
        if spec is None or spec.origin is None:
            raise _NotKept(package)
        files.append(spec.origin)
        if package == "pydantic":
            files.append(os.path.join(os.path.dirname(spec.origin), "version.py"))
    stamp: list[Any] = []
    for file in sorted(files):
        info = os.stat(file)
        if not stat.S_ISREG(info.st_mode):
            raise _NotKept(file)
        stamp.append([file, info.st_size, info.st_mtime_ns])
    return stamp


def _canonical(value: Any, out: list[str]) -> None:
    """`value` written so that two different values (types included, order kept) never
    read alike: a tag, then a length or the value. _NotKept for a value of another
    type."""
    kind = type(value)
    if kind is str:
        out.append(f"s{len(value)}:")
        out.append(value)
    elif kind is bytes:
        out.append(f"b{len(value)}:")
        out.append(value.hex())
    elif value is None:
        out.append("n")
    elif kind is bool:
        out.append("t" if value else "f")
    elif kind is int:
        out.append(f"i{value};")
    elif kind is float:
        out.append(f"d{value.hex()};")  # exact (nan, inf and -0.0 too)
    elif kind is list or kind is tuple:
        out.append(f"{'l' if kind is list else 'u'}{len(value)}:")
        for item in value:
            _canonical(item, out)
    elif kind is dict:
        out.append(f"m{len(value)}:")
        for name, item in value.items():
            _canonical(name, out)
            _canonical(item, out)
    else:
        raise _NotKept(kind.__name__)


def _other_homes(value: Any) -> bool:
    """Whether any string in `value` (keys too) is `~user…`: expanded from the password
    database, which the key does not cover."""
    if isinstance(value, str):
        return value.startswith("~") and value != "~" and not value.startswith("~/")
    if isinstance(value, Mapping):
        return any(_other_homes(k) or _other_homes(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_other_homes(item) for item in value)
    return False
