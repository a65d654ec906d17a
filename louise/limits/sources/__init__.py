"""Passive limits sources: each real agent's own rate-limit signals as account-limits v1.

No real agent implements the v1 extension; claude-agent-acp, codex and kimi-code send
rate-limit data in their own dialects, gemini-cli and vibe only refuse a turn. One
translator per dialect turns the agent's payload into a complete v1 wire snapshot, which
then goes through the one validator, `parse_snapshot` (kimi's into an RFD snapshot, which
keeps its amounts: `parse_quota_snapshot`); the result keeps its provenance (`source`).

Which source wins: the v1 extension when it is negotiated (`passive_sources_apply` is then
False and every observation here is to be ignored); otherwise the translator matching what
the agent sends. Limits are account-wide: one state per configured Agent, shared by its
sessions, whatever session the signal arrived on.

Pure: data and `now` in, values out. A payload that is present but unusable gives `Ignored`
with a reason for the caller's log line; nothing here raises for agent input.

Use (the registry and `louise proxy` do exactly this)::

    obs = sources.from_session_update(update, state, now, plan=plan)   # session/update
    obs = sources.from_notification(method, params, state, now)        # `_…` notifications
    obs = sources.from_prompt_error(code, data)                        # session/prompt error
    plan = sources.plan_from_notification(method, params) or plan     # `_auth/status_update`
    if isinstance(obs, sources.Ignored): log.info("%s: %s", obs.source, obs.reason)
    elif obs is not None: state = sources.apply(state, agent, obs, now)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from louise.limits.capability import Capability
from louise.limits.errors import LimitsError
from louise.limits.snapshot import Snapshot, parse_snapshot
from louise.limits.sources import claude, codex, gemini, kimi, vibe
from louise.limits.sources._values import Garbage, mapping
from louise.limits.state import LimitsState, accepted_quota, reached_by_rejection, translated

if TYPE_CHECKING:  # the RFD's parsing: imported with kimi's first amounts
    from louise.limits.quota import QuotaSnapshot

SOURCES: Final[tuple[str, ...]] = (claude.SOURCE, codex.SOURCE, gemini.SOURCE, vibe.SOURCE,
                                   kimi.SOURCE)


@dataclass(frozen=True, slots=True)
class Translated:
    """A complete, validated snapshot translated from the agent's own signals; `quota`
    when the dialect maps onto the quota RFD with more than v1 holds (kimi's amounts)."""

    source: str
    snapshot: Snapshot
    quota: QuotaSnapshot | None = None


@dataclass(frozen=True, slots=True)
class Rejected:
    """A turn refused for a rate limit: the bucket is reached, its reset unknown."""

    source: str
    reached_type: str
    bucket_id: str
    bucket_label: str


@dataclass(frozen=True, slots=True)
class Ignored:
    """A rate-limit payload that could not be used; `reason` is for a log line."""

    source: str
    reason: str


Observation = Translated | Rejected | Ignored


def passive_sources_apply(capability: Capability | None) -> bool:
    """True unless the v1 extension was negotiated (then it is the only source)."""
    return capability is None


def _previous(state: LimitsState | None, source: str) -> Snapshot | None:
    """The snapshot a translator merges into: only one translated from the same source."""
    if state is None or state.source != source:
        return None
    return state.snapshot


def _validated(source: str, wire: dict[str, Any] | None) -> Observation | None:
    if wire is None:
        return None
    try:
        return Translated(source, parse_snapshot(wire))
    except LimitsError as exc:
        return Ignored(source, f"translated snapshot rejected: {exc}")


def from_session_update(
    update: object, state: LimitsState | None, now: float, *, plan: str | None = None
) -> Observation | None:
    """The observation in one `session/update`'s `update` object, or `None` when it carries
    no rate-limit data (almost every update)."""
    raw = mapping(update)
    if raw is None or raw.get("sessionUpdate") != "usage_update":
        return None
    meta = mapping(raw.get("_meta"))
    if meta is None:
        return None
    if claude.META_KEY in meta:
        try:
            wire = claude.translate(
                meta[claude.META_KEY], _previous(state, claude.SOURCE), now, plan=plan
            )
        except Garbage as exc:
            return Ignored(claude.SOURCE, str(exc))
        return _validated(claude.SOURCE, wire)
    if codex.META_KEY in meta:
        try:
            wire = codex.translate(meta[codex.META_KEY], _previous(state, codex.SOURCE), now)
        except Garbage as exc:
            return Ignored(codex.SOURCE, str(exc))
        return _validated(codex.SOURCE, wire)
    if kimi.META_KEY in meta:
        from louise.limits.quota import QuotaError, parse_quota_snapshot

        try:
            quota_wire = kimi.translate(meta[kimi.META_KEY], now)
            if quota_wire is None:
                return None
            quota = parse_quota_snapshot(quota_wire)
        except (Garbage, QuotaError) as exc:
            return Ignored(kimi.SOURCE, str(exc))
        from louise.limits.quota_project import project

        return Translated(kimi.SOURCE, project(quota), quota)
    return None


def from_notification(
    method: str, params: object, state: LimitsState | None, now: float
) -> Observation | None:
    """The observation in an agent notification other than `session/update`."""
    if method != codex.NOTIFICATION:
        return None
    try:
        wire = codex.translate(params, _previous(state, codex.SOURCE), now)
    except Garbage as exc:
        return Ignored(codex.SOURCE, str(exc))
    return _validated(codex.SOURCE, wire)


def from_prompt_error(code: int, data: object) -> Rejected | None:
    """A `session/prompt` error that means the account hit a rate limit, or `None`."""
    if claude.is_rejection(data):
        return Rejected(claude.SOURCE, claude.REJECTED_ERROR_KIND, claude.DEFAULT_BUCKET, "Claude")
    if gemini.is_rejection(code):
        return Rejected(gemini.SOURCE, gemini.REACHED_TYPE, gemini.BUCKET, gemini.BUCKET_LABEL)
    if vibe.is_rejection(code, data):
        return Rejected(vibe.SOURCE, vibe.REACHED_TYPE, vibe.BUCKET, vibe.BUCKET_LABEL)
    return None


def plan_from_notification(method: str, params: object) -> str | None:
    """The account's plan label from an `_auth/status_update`, else `None`."""
    if method != claude.AUTH_STATUS_METHOD:
        return None
    return claude.plan_from_auth_status(params)


def apply(
    state: LimitsState | None, agent: str, observation: Translated | Rejected, now: float
) -> LimitsState:
    """The Agent's next limits state after `observation` at `now`."""
    if isinstance(observation, Translated):
        if observation.quota is not None:
            return accepted_quota(agent, observation.quota, now, observation.source)
        return translated(agent, observation.snapshot, observation.source, now)
    previous = state if state is not None and state.source == observation.source else None
    return reached_by_rejection(
        previous,
        agent,
        observation.source,
        now,
        reached_type=observation.reached_type,
        bucket_id=observation.bucket_id,
        bucket_label=observation.bucket_label,
    )


def capabilities_meta(agent_capabilities: Mapping[str, Any]) -> bool:
    """True when the agent advertises a structured rate-limit push (codex #524)."""
    return codex.advertises_push(agent_capabilities)


__all__ = [
    "SOURCES",
    "Ignored",
    "Observation",
    "Rejected",
    "Translated",
    "apply",
    "capabilities_meta",
    "from_notification",
    "from_prompt_error",
    "from_session_update",
    "passive_sources_apply",
    "plan_from_notification",
]
