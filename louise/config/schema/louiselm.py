"""LouiseLM's settings as validation meets them: those louise does not use dropped (each
noted for a warning), its `provider` shapes to one name (see `louise/config/louiselm.py`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationInfo

from louise.config.louiselm import LOUISELM_CONTEXT
from louise.config.schema.errors import custom_error


def ignore_louiselm(data: Any, keys: Mapping[str, str], where: tuple[str, ...],
                     info: ValidationInfo) -> Any:
    """Drop LouiseLM settings louise does not use, noting each (path, why) in the
    validation context so that the loader warns about them."""
    if not isinstance(data, Mapping) or not any(key in data for key in keys):
        return data
    ignored = info.context.get(LOUISELM_CONTEXT) if isinstance(info.context, dict) else None
    kept = dict(data)
    for key in keys:
        if key in kept:
            del kept[key]
            if isinstance(ignored, list):
                ignored.append(((*where, key), keys[key]))
    return kept


def provider_name(value: Any) -> Any:
    """LouiseLM's `provider` shapes to the one name louise shows: a string as it is;
    routes `{ {provider = …, options = {…}}, … }` and a prefix map `{option = …,
    prefixes = {[prefix] = provider}}` to their provider names (louise does not route by
    option: every name is kept, in order, joined with " / ")."""
    if value is None or isinstance(value, str):
        return value
    names: list[Any] = []
    if isinstance(value, list):
        for index, route in enumerate(value):
            if not isinstance(route, Mapping) or not isinstance(route.get("provider"), str):
                raise custom_error("a provider route needs provider = \"…\"",
                              "write routes as { { provider = 'OpenAI', options = { model = "
                              "'gpt-5' } } }", (index, "provider"))
            names.append(route["provider"])
    elif isinstance(value, Mapping) and isinstance(value.get("prefixes"), Mapping):
        names = list(value["prefixes"].values())
        if not names or not all(isinstance(name, str) for name in names):
            raise custom_error("provider prefixes must map each prefix to a provider name",
                          "e.g. prefixes = { ['opencode/'] = 'OpenCode Zen' }", ("prefixes",))
    else:
        raise custom_error("provider must be a string, a list of routes or a prefix map",
                      "e.g. provider = 'Anthropic', or LouiseLM's routes "
                      "{ { provider = …, options = { … } } }")
    names = [" ".join(str(name).split()) for name in names]
    return " / ".join(dict.fromkeys(name for name in names if name)) or None
