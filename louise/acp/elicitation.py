"""`elicitation/create` (schema v1.21, stable): an agent asks the person for structured
input through a form, or to visit a URL. Read defensively and bounded; the answers a
person gives are checked against the requested schema before they go back. Pure.

Form mode: a flat object of primitive fields (string, number, integer, boolean, a
single-select enum by `enum` or `oneOf`, a multi-select `array`). A field of a type louise
does not know makes the whole form unanswerable (the spec: never render it as a known
control), and the caller answers `cancel`. URL mode: an http(s) URL the person may open,
its host as a browser reads it (`louise.acp.urls`); one written to disguise where it goes
is refused. `accept` means they consented to open it, not that anything finished.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Literal

from louise.acp.urls import UrlError, WebUrl, parse_web_url

MAX_FIELDS = 50
MAX_CHOICES = 200
MAX_TEXT = 2000  # a message, title or description shown to the person
MAX_VALUE_CHARS = 10_000  # one string answer
MAX_URL_CHARS = 4096

FieldKind = Literal["string", "number", "integer", "boolean", "choice", "multi"]
_FORMATS = ("email", "uri", "date", "date-time")


class ElicitationError(ValueError):
    """A request louise cannot answer as asked (its text says why)."""


@dataclass(frozen=True, slots=True)
class Choice:
    value: str
    title: str


@dataclass(frozen=True, slots=True)
class FormField:
    name: str
    kind: FieldKind
    title: str
    description: str = ""
    required: bool = False
    default: Any = None
    choices: tuple[Choice, ...] = ()
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    format: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    min_items: int | None = None
    max_items: int | None = None

    def to_wire(self) -> dict[str, Any]:
        """What the editor shows and asks (plain data)."""
        return {"name": self.name, "kind": self.kind, "title": self.title,
                "description": self.description, "required": self.required,
                "default": self.default,
                "choices": [{"value": c.value, "title": c.title} for c in self.choices],
                "format": self.format, "min": self.minimum, "max": self.maximum,
                "min_length": self.min_length, "max_length": self.max_length}


@dataclass(frozen=True, slots=True)
class ElicitationRequest:
    """One `elicitation/create`, scoped to a session (optionally a tool call) or to a
    request of louise's (`request_id`, e.g. while signing in)."""

    mode: Literal["form", "url"]
    message: str
    session_id: str | None = None
    tool_call_id: str | None = None
    request_id: Any = None
    title: str = ""
    fields: tuple[FormField, ...] = ()
    elicitation_id: str | None = None
    url: str | None = None
    host: str | None = None
    warnings: tuple[str, ...] = field(default_factory=tuple)


def _text(value: Any, limit: int = MAX_TEXT) -> str:
    return value[:limit] if isinstance(value, str) else ""


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
        else None


def _choices(items: Any, titled: bool) -> tuple[Choice, ...]:
    out: list[Choice] = []
    for item in items if isinstance(items, list) else []:
        if len(out) >= MAX_CHOICES:
            break
        if titled and isinstance(item, dict) and isinstance(item.get("const"), str):
            out.append(Choice(item["const"][:MAX_TEXT],
                              _text(item.get("title")) or item["const"][:MAX_TEXT]))
        elif not titled and isinstance(item, str):
            out.append(Choice(item[:MAX_TEXT], item[:MAX_TEXT]))
    return tuple(out)


def _field(name: str, schema: Any, required: bool) -> FormField:
    if not isinstance(schema, dict):
        raise ElicitationError(f"field {name!r} has no schema")
    kind = schema.get("type")
    common: dict[str, Any] = {"name": name, "title": _text(schema.get("title")) or name,
                              "description": _text(schema.get("description")),
                              "required": required}
    if kind == "string":
        choices = _choices(schema.get("oneOf"), True) or _choices(schema.get("enum"), False)
        default = schema.get("default") if isinstance(schema.get("default"), str) else None
        if choices:
            return FormField(kind="choice", choices=choices, default=default, **common)
        fmt = schema.get("format")
        pattern = schema.get("pattern")
        return FormField(kind="string", default=default,
                         min_length=_count(schema.get("minLength")),
                         max_length=_count(schema.get("maxLength")),
                         pattern=pattern[:MAX_TEXT] if isinstance(pattern, str) else None,
                         format=fmt if fmt in _FORMATS else None, **common)
    if kind in ("number", "integer"):
        default_value = _number(schema.get("default"))
        if kind == "integer" and default_value is not None and default_value != int(default_value):
            default_value = None
        return FormField(kind=kind, minimum=_number(schema.get("minimum")),
                         maximum=_number(schema.get("maximum")),
                         default=(int(default_value) if kind == "integer" and default_value
                                  is not None else default_value), **common)
    if kind == "boolean":
        default = schema.get("default")
        return FormField(kind="boolean", default=default if isinstance(default, bool) else None,
                         **common)
    if kind == "array":
        items = schema.get("items")
        items = items if isinstance(items, dict) else {}
        choices = _choices(items.get("anyOf"), True) or _choices(items.get("enum"), False)
        if not choices:
            raise ElicitationError(f"field {name!r} is a list without choices")
        default = schema.get("default")
        return FormField(kind="multi", choices=choices,
                         default=[v for v in default if isinstance(v, str)]
                         if isinstance(default, list) else None,
                         min_items=_count(schema.get("minItems")),
                         max_items=_count(schema.get("maxItems")), **common)
    raise ElicitationError(f"field {name!r} has a type louise cannot show "
                           f"({str(kind)[:40]!r})")


class UrlRefused(ElicitationError):
    """A URL louise will not offer to open: written to disguise where it goes, or not a
    URL a browser would open. `host` is where a browser would go, when that is known."""

    def __init__(self, reason: str, host: str | None = None) -> None:
        super().__init__(reason)
        self.host = host


_LOOPBACK = ("localhost", "127.0.0.1", "[::1]")


def check_url(url: str) -> tuple[WebUrl, tuple[str, ...]]:
    """The URL as a browser reads it and the warnings to show with it; UrlRefused for one
    written to look like it goes somewhere else (user info before the host, a backslash,
    a %-escaped host, other than `//` after the scheme) or that is no http(s) URL."""
    try:
        parsed = parse_web_url(url)
    except UrlError as exc:
        raise UrlRefused(str(exc)) from None
    disguise = None
    if parsed.userinfo:
        disguise = "it has a name before an @ in its address, which is not where it goes"
    elif parsed.backslash:
        disguise = "it has a backslash in its address, which a browser reads as a /"
    elif parsed.escaped_host:
        disguise = "its host is written with %-escapes"
    elif parsed.slashes != "//":
        disguise = f"it does not start with {parsed.scheme}://"
    if disguise is not None:
        raise UrlRefused(f"{disguise}: a browser would open {parsed.host}", parsed.host)
    warnings = []
    if parsed.punycode:
        warnings.append("the host name is punycode (it may imitate another name)")
    if parsed.non_ascii:
        warnings.append("the host name has non-ASCII letters (it may imitate another name)")
    if parsed.ip:
        warnings.append(f"the host is a bare IP address ({parsed.host})")
    if parsed.scheme == "http" and parsed.host not in _LOOPBACK:
        warnings.append("the URL is not https")
    return parsed, tuple(warnings)


def parse_request(params: Any) -> ElicitationRequest:
    """The request, or ElicitationError saying what louise cannot answer."""
    if not isinstance(params, dict):
        raise ElicitationError("params must be an object")
    session_id = params.get("sessionId")
    tool_call_id = params.get("toolCallId")
    scope: dict[str, Any] = {
        "session_id": session_id if isinstance(session_id, str) else None,
        "tool_call_id": tool_call_id if isinstance(tool_call_id, str) else None,
        "request_id": params.get("requestId")
        if isinstance(params.get("requestId"), str | int) else None,
    }
    if scope["session_id"] is None and scope["request_id"] is None:
        raise ElicitationError("neither sessionId nor requestId")
    message = _text(params.get("message"))
    mode = params.get("mode")
    if mode == "form":
        schema = params.get("requestedSchema")
        if not isinstance(schema, dict):
            raise ElicitationError("a form needs requestedSchema")
        properties = schema.get("properties", {})
        if not isinstance(properties, dict) or len(properties) > MAX_FIELDS:
            raise ElicitationError(f"the form's properties must be an object of at most "
                                   f"{MAX_FIELDS} fields")
        required = schema.get("required")
        required_names = {r for r in required if isinstance(r, str)} \
            if isinstance(required, list) else set()
        fields = tuple(_field(str(name)[:200], value, name in required_names)
                       for name, value in properties.items())
        return ElicitationRequest(mode="form", message=message, fields=fields,
                                  title=_text(schema.get("title")), **scope)
    if mode == "url":
        url, ident = params.get("url"), params.get("elicitationId")
        if not isinstance(ident, str) or not ident or len(ident) > 200:
            raise ElicitationError("a URL elicitation needs an elicitationId")
        if not isinstance(url, str) or len(url) > MAX_URL_CHARS:
            raise ElicitationError("a URL elicitation needs a url")
        parsed, warnings = check_url(url)
        return ElicitationRequest(mode="url", message=message, elicitation_id=ident,
                                  url=url, host=parsed.host, warnings=warnings, **scope)
    raise ElicitationError(f"unknown elicitation mode {str(mode)[:40]!r}")


def _check(form_field: FormField, value: Any) -> tuple[Any, str | None]:
    """The value as it goes on the wire, or why it is not acceptable."""
    what = form_field.title
    if form_field.kind == "boolean":
        return (value, None) if isinstance(value, bool) else (None, f"{what}: yes or no")
    if form_field.kind in ("number", "integer"):
        if isinstance(value, str):
            try:
                value = int(value) if form_field.kind == "integer" else float(value)
            except ValueError:
                noun = "an integer" if form_field.kind == "integer" else "a number"
                return None, f"{what}: not {noun}"
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None, f"{what}: not a number"
        if form_field.kind == "integer" and value != int(value):
            return None, f"{what}: not an integer"
        if form_field.kind == "integer":
            value = int(value)
        if form_field.minimum is not None and value < form_field.minimum:
            return None, f"{what}: at least {form_field.minimum:g}"
        if form_field.maximum is not None and value > form_field.maximum:
            return None, f"{what}: at most {form_field.maximum:g}"
        return value, None
    if form_field.kind == "choice":
        allowed = [c.value for c in form_field.choices]
        return (value, None) if value in allowed else (None, f"{what}: pick one of the choices")
    if form_field.kind == "multi":
        offered = {c.value for c in form_field.choices}
        if not isinstance(value, list) or not all(isinstance(v, str) and v in offered
                                                  for v in value):
            return None, f"{what}: pick among the choices"
        chosen = list(dict.fromkeys(value))
        if form_field.min_items is not None and len(chosen) < form_field.min_items:
            return None, f"{what}: pick at least {form_field.min_items}"
        if form_field.max_items is not None and len(chosen) > form_field.max_items:
            return None, f"{what}: pick at most {form_field.max_items}"
        return chosen, None
    if not isinstance(value, str) or len(value) > MAX_VALUE_CHARS:
        return None, f"{what}: text of at most {MAX_VALUE_CHARS} characters"
    if form_field.min_length is not None and len(value) < form_field.min_length:
        return None, f"{what}: at least {form_field.min_length} characters"
    if form_field.max_length is not None and len(value) > form_field.max_length:
        return None, f"{what}: at most {form_field.max_length} characters"
    if form_field.pattern is not None:
        try:
            if re.search(form_field.pattern, value) is None:
                return None, f"{what}: does not match the pattern {form_field.pattern}"
        except re.error:
            pass  # a pattern Python cannot read: the agent checks again
    problem = _format_problem(form_field.format, value)
    return (None, f"{what}: {problem}") if problem else (value, None)


def _format_problem(fmt: str | None, value: str) -> str | None:
    if fmt == "email" and not re.fullmatch(r"[^@\s]+@[^@\s]+\.[^@\s]+", value):
        return "not an email address"
    if fmt == "uri" and not urllib.parse.urlsplit(value).scheme:
        return "not a URI"
    if fmt == "date":
        try:
            date.fromisoformat(value)
        except ValueError:
            return "not a date (YYYY-MM-DD)"
    if fmt == "date-time":
        try:
            datetime.fromisoformat(value)
        except ValueError:
            return "not a date and time (ISO 8601)"
    return None


def check_content(fields: tuple[FormField, ...], content: Any
                  ) -> tuple[dict[str, Any], list[str]]:
    """The answers as they go back (only the form's fields; empty optional ones left
    out), and what is wrong with them (empty when they can be sent)."""
    given = content if isinstance(content, Mapping) else {}
    out: dict[str, Any] = {}
    problems: list[str] = []
    for form_field in fields:
        value = given.get(form_field.name)
        if value is None or value == "" or value == []:
            if form_field.required:
                problems.append(f"{form_field.title}: required")
            continue
        checked, problem = _check(form_field, value)
        if problem is not None:
            problems.append(problem)
        else:
            out[form_field.name] = checked
    return out, problems
