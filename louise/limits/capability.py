"""Negotiating the accountLimits extension from an initialize response's `agentCapabilities`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

NAMESPACE: Final = "io.github.euri10.louiselm"


@dataclass(frozen=True, slots=True)
class Capability:
    """The advertised method names, used as advertised (never hard-coded)."""

    read_method: str
    updated_method: str


def _method(value: object) -> str | None:
    return value if isinstance(value, str) and value.startswith("_") else None


def negotiate(agent_capabilities: Mapping[str, Any]) -> Capability | None:
    """The v1 capability under `_meta["io.github.euri10.louiselm"].accountLimits`, or `None`.

    `version` must be the JSON number 1 (`1` or `1.0`; never `"1"` or `true`) and both method
    names strings starting with `_`. Anything else, at any level, does not negotiate.
    """
    if not isinstance(agent_capabilities, Mapping):
        return None
    meta = agent_capabilities.get("_meta")
    if not isinstance(meta, Mapping):
        return None
    namespace = meta.get(NAMESPACE)
    if not isinstance(namespace, Mapping):
        return None
    limits = namespace.get("accountLimits")
    if not isinstance(limits, Mapping):
        return None
    version = limits.get("version")
    # `type(...) in` rather than isinstance: a bool is an int in Python but never a JSON number.
    if type(version) not in (int, float) or version != 1:
        return None
    read_method = _method(limits.get("readMethod"))
    updated_method = _method(limits.get("updatedMethod"))
    if read_method is None or updated_method is None:
        return None
    return Capability(read_method=read_method, updated_method=updated_method)
