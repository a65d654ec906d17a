"""pydantic's validation errors as `ConfigProblem`s a person can act on, and the error a
validator raises to say a problem in louise's own words (`custom_error`)."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticCustomError

from louise.config.problems import ConfigProblem, format_path

ModelAt = Callable[[tuple[str | int, ...]], type[BaseModel] | None]

# error type -> (what was expected, hint)
_TYPE_ERRORS: dict[str, tuple[str, str]] = {
    "string_type": ("a string", 'put the value in quotes, e.g. "value"'),
    "bool_type": ("true or false", "write true or false without quotes"),
    "int_type": ("a whole number", "write a whole number without quotes, e.g. 1048576"),
    "float_type": ("a number", "write a number without quotes, e.g. 30"),
    "list_type": ("a list", 'use a list, e.g. ["a", "b"]'),
    "dict_type": ("a table", 'use a table, e.g. { KEY = "value" } or a [section]'),
    "model_type": ("a table", "use a table: a [section] or { key = value }"),
    "model_attributes_type": ("a table", "use a table: a [section] or { key = value }"),
}

_FIELD_EXAMPLES: dict[str, str] = {
    "command": 'command = "claude-agent-acp"',
    "decision": 'decision = "allow"',
    "kind": 'kind = "read"',
}


def describe(value: Any) -> str:
    """A value's type in TOML words (the same words fit Lua tables well enough)."""
    names = {bool: "a boolean", int: "an integer", float: "a float", str: "a string"}
    for kind, name in names.items():
        if type(value) is kind:
            return f"{name} ({value!r})"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "a table"
    return type(value).__name__


def problem_from_error(error: Any, model_at: ModelAt) -> ConfigProblem:
    """One pydantic error as a problem a person can act on; `model_at` names the model a
    location points into (for the known settings of an unknown one)."""
    loc: tuple[str | int, ...] = tuple(error["loc"])
    kind: str = error["type"]
    ctx: dict[str, Any] = error.get("ctx") or {}
    key_error = bool(loc) and loc[-1] == "[key]"
    if key_error:
        loc = loc[:-1]
    if kind == "louise":
        loc = loc + tuple(ctx.get("subpath", ()))
        return ConfigProblem(format_path(loc), str(ctx["message"]), str(ctx["hint"]))
    path = format_path(loc)
    prefix = "key: " if key_error else ""
    if kind == "extra_forbidden":
        return ConfigProblem(path, "unknown setting", _unknown_field_hint(loc, model_at))
    if kind == "missing":
        field = loc[-1] if loc else ""
        example = _FIELD_EXAMPLES.get(str(field))
        hint = f"add it, e.g. {example}" if example else f"add {field}"
        return ConfigProblem(path, "required setting is missing", hint)
    if kind == "literal_error":
        message = f"{prefix}unsupported value {error['input']!r}"
        return ConfigProblem(path, message, f"use {ctx.get('expected', 'a listed value')}")
    if kind in _TYPE_ERRORS:
        expected, hint = _TYPE_ERRORS[kind]
        message = f"{prefix}expected {expected}, got {describe(error['input'])}"
        return ConfigProblem(path, message, hint)
    if kind == "greater_than":
        message = f"{prefix}must be greater than {ctx.get('gt')}, got {error['input']!r}"
        return ConfigProblem(path, message, "use a positive number")
    if kind == "greater_than_equal":
        message = f"{prefix}must be at least {ctx.get('ge')}, got {error['input']!r}"
        return ConfigProblem(path, message, "use 0 or a positive number")
    return ConfigProblem(path, prefix + str(error["msg"]), "see the configuration documentation")


def _unknown_field_hint(loc: tuple[str | int, ...], model_at: ModelAt) -> str:
    model = model_at(loc[:-1])
    if model is None:
        return "remove it"
    known = list(model.model_fields)
    hint = f"remove it or check its spelling; known settings here: {', '.join(known)}"
    close = difflib.get_close_matches(str(loc[-1]), known, n=1)
    if close:
        hint = f"did you mean {close[0]!r}? Known settings here: {', '.join(known)}"
    return hint


def custom_error(message: str, hint: str,
                 subpath: tuple[str | int, ...] = ()) -> PydanticCustomError:
    """A validation error that becomes one `ConfigProblem` (message, hint, path below the
    field). The message goes through a placeholder so braces in user values are never
    formatted."""
    return PydanticCustomError(
        "louise", "{message}", {"message": message, "hint": hint, "subpath": subpath}
    )
