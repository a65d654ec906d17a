"""Reading the configuration: `config.toml` (default: `paths.config_file()`), or a mapping
shaped like it (what Neovim's `setup{}` passes), into a whole, valid `Config`, or a
`ConfigError` naming every problem at once. Every call validates (`schema/validate.py`);
a start uses `cached.py`, which validates only what it has not validated before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from louise.config.model import Config
from louise.config.problems import ConfigError, ConfigProblem, toml_problem
from louise.storage import paths


def load_config(path: Path | None = None) -> Config:
    """Load `config.toml` (default: `louise.storage.paths.config_file()`); a missing
    file means defaults."""
    file = path if path is not None else paths.config_file()
    return config_from_file(read_config_file(file), str(file))


def read_config_file(file: Path) -> bytes | None:
    """The bytes of `config.toml`, None when there is none (ConfigError when unreadable)."""
    try:
        return file.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        problem = ConfigProblem(
            "", f"cannot read the file: {exc.strerror or exc}", "check that it is a readable file"
        )
        raise ConfigError([problem], str(file)) from None


def config_from_file(raw: bytes | None, source: str) -> Config:
    """The configuration a file's bytes hold (`read_config_file`'s: None means defaults)."""
    if raw is None:
        return load_config_mapping({}, source=source)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        problem = ConfigProblem(
            "", f"the file is not UTF-8 (byte {exc.start})", "save it as UTF-8 text"
        )
        raise ConfigError([problem], source) from None
    import tomllib  # only for a file that is there (an engine given setup{} reads none)

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([toml_problem(str(exc), text)], source) from None
    return load_config_mapping(data, source=source)


def load_config_mapping(data: Any, *, source: str = "setup{}") -> Config:
    """Validate a mapping shaped like `config.toml` (what Neovim's `setup{}` passes).
    LouiseLM settings louise does not use are dropped; `Config.warnings` names them.
    pydantic (`schema/`) is imported here, on the first validation."""
    from louise.config.schema.validate import validate_mapping

    return validate_mapping(data, source)
