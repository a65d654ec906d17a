"""What one turn cost in tokens, from the prompt's reply. Pure.

Agents report it two ways (both seen from claude-agent-acp and codex-acp): `usage` in the
`session/prompt` result (unstable in ACP 1.19: `totalTokens`, `inputTokens`,
`outputTokens`, `thoughtTokens`, `cachedReadTokens`, `cachedWriteTokens`) and the quota
counts in its `_meta` (`quota.token_count`, `quota.model_usage[].model`). `usage` wins;
the `_meta` counts stand in when it is absent or null (a cancelled turn's).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MAX_TOKENS = 10**15  # a count past this is not a count
MAX_MODELS = 4
MAX_MODEL_CHARS = 80

# (field, keys in `usage`, keys in `_meta.quota.token_count`)
_FIELDS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("total", "totalTokens", ("totalTokens",)),
    ("input", "inputTokens", ("inputTokens",)),
    ("output", "outputTokens", ("outputTokens",)),
    ("thought", "thoughtTokens", ("reasoningOutputTokens",)),
    ("cached_read", "cachedReadTokens", ("cachedInputTokens",)),
    ("cached_write", "cachedWriteTokens", ("cachedWriteTokens", "cacheWriteInputTokens")),
)


def _count(value: Any) -> int | None:
    if type(value) is int and 0 <= value <= MAX_TOKENS:
        return value
    if type(value) is float and value.is_integer() and 0 <= value <= MAX_TOKENS:
        return int(value)
    return None


def _mapping(value: Any) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else None


@dataclass(frozen=True, slots=True)
class TurnUsage:
    """Token counts of one turn (None: not reported) and the models that served it."""

    total: int | None = None
    input: int | None = None
    output: int | None = None
    thought: int | None = None
    cached_read: int | None = None
    cached_write: int | None = None
    models: tuple[str, ...] = ()

    @classmethod
    def from_prompt_result(cls, result: Mapping[str, Any]) -> TurnUsage | None:
        """The usage a `session/prompt` result reports, or None when it reports none."""
        meta = _mapping(result.get("_meta"))
        quota = _mapping(meta.get("quota")) if meta is not None else None
        models = _models(quota.get("model_usage")) if quota is not None else ()
        usage = _mapping(result.get("usage"))
        if usage is not None:
            found = cls._read(usage, {name: (key,) for name, key, _ in _FIELDS}, models)
            if found is not None:
                return found
        counts = _mapping(quota.get("token_count")) if quota is not None else None
        if counts is not None:
            return cls._read(counts, {name: keys for name, _, keys in _FIELDS}, models)
        return None

    @classmethod
    def _read(cls, source: Mapping[str, Any], keys: Mapping[str, tuple[str, ...]],
              models: tuple[str, ...]) -> TurnUsage | None:
        values: dict[str, int | None] = {}
        for name, names in keys.items():
            values[name] = next((c for c in (_count(source.get(k)) for k in names)
                                 if c is not None), None)
        if all(value is None for value in values.values()):
            return None
        if values["total"] is None:
            parts = [values[n] for n in ("input", "output", "thought")]
            values["total"] = sum(p for p in parts if p is not None)
        return cls(models=models, **values)

    @classmethod
    def from_record(cls, record: Any) -> TurnUsage | None:
        """Back from `to_record` (a transcript's `turn_end`); None for anything else."""
        record = _mapping(record)
        if record is None:
            return None
        return cls.from_prompt_result({"usage": record.get("tokens"), "_meta": {"quota": {
            "model_usage": [{"model": m} for m in record.get("models") or []
                            if isinstance(m, str)]}}})

    def to_record(self) -> dict[str, Any]:
        tokens = {key: getattr(self, name) for name, key, _ in _FIELDS
                  if getattr(self, name) is not None}
        return {"tokens": tokens, "models": list(self.models)}

    def text(self) -> str:
        """The turn's end line: `1,234 tokens: 1,000 in · 234 out · 50 cache read`."""
        parts = [f"{self.total or 0:,} tokens"]
        details = [f"{value:,} {label}" for value, label in (
            (self.input, "in"), (self.output, "out"), (self.thought, "thinking"),
            (self.cached_read, "cache read"), (self.cached_write, "cache write"))
            if value]
        text = parts[0] + (": " + " · ".join(details) if details else "")
        if self.models:
            text += " · " + ", ".join(self.models)
        return text


def _models(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    names: list[str] = []
    for item in value[:MAX_MODELS]:
        model = item.get("model") if isinstance(item, Mapping) else None
        if isinstance(model, str):
            name = " ".join(model.split())[:MAX_MODEL_CHARS]
            if name and name not in names:
                names.append(name)
    return tuple(names)
