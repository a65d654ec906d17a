"""Rendering a limits state: the one-line label (statusline) and the detail lines (float, CLI).

The label follows the reference plugin (docs/louiselm-reference.md §2.5) with two
deliberate differences required by issue 3:

- bucket choice ranks *every* bucket, the default included (reached > ≤10 % left >
  ≤20 % left > other; the default bucket wins ties), so an exhausted default bucket is never
  hidden behind a merely low secondary one;
- a snapshot that is `stale` or `loading` always says so and is always `warning`, including
  an unlimited or empty one (the reference printed a bare `limits unlimited` there, which
  would present an unconfirmed observation as current).

Every string that comes from the agent goes through `sanitize` (control characters become
spaces) so a payload can never break a statusline or a buffer line.
"""

from __future__ import annotations

from louise.limits.state import LimitsState
from louise.limits.text import (
    Label,
    format_age,
    format_duration,
    format_number,
    format_percent,
    format_remaining,
    format_until,
    format_utc,
    reset_text,
    sanitize,
)

TYPE_CHECKING = False  # typing's, without importing typing (louise inspect's start)
if TYPE_CHECKING:
    from datetime import tzinfo
    from typing import Final

    from louise.limits.pace import PaceHistory
    from louise.limits.snapshot import Bucket, Snapshot, Window
    from louise.limits.text import Level

# --------------------------------------------------------------------------- label


def bucket_rank(bucket: Bucket) -> int:
    """Urgency: 3 reached (only from `reached_type`, never from percentages), 2 when a window
    has ≤10 % left, 1 when one has ≤20 % left, else 0."""
    if bucket.reached_type is not None:
        return 3
    rank = 0
    for window in bucket.windows:
        remaining = 100 - window.used_percent
        if remaining <= 10:
            return 2
        if remaining <= 20:
            rank = 1
    return rank


def choose_bucket(snapshot: Snapshot) -> tuple[Bucket, int] | None:
    """The most urgent bucket and its rank; the default bucket wins ties, else the first."""
    best: Bucket | None = None
    best_rank = -1
    default_id = snapshot.default_bucket_id
    for bucket in snapshot.buckets:
        rank = bucket_rank(bucket)
        if rank > best_rank or (rank == best_rank and bucket.id == default_id):
            best, best_rank = bucket, rank
    return None if best is None else (best, best_rank)


def _window_text(window: Window, now: float) -> str:
    remaining = format_remaining(100 - window.used_percent)
    duration = format_duration(window.duration_mins)
    return f"{remaining}/{duration} ↻{format_until(window.resets_at, now)}"


def _by_duration(window: Window) -> int:
    return window.duration_mins


def render_label(state: LimitsState, now: float) -> Label | None:
    """The statusline label, or `None` for an Agent not observed yet.

    `limits [bucket] <remaining>/<duration> ↻<reset> [second window] [+N] [stale|loading]`,
    with the bucket label omitted when it is the default bucket and equals the Agent name
    (case-insensitively). Without a snapshot: `limits loading` / `limits unavailable`;
    `limits unlimited`, `limits no data`, `limits n/a` (unsupported).
    """
    status = state.status
    if status == "not_observed":
        return None
    if status == "unsupported":
        return Label("limits n/a", "neutral")
    snapshot = state.snapshot
    if snapshot is None:
        if status == "loading":
            return Label("limits loading", "active")
        return Label("limits unavailable", "error")
    if state.quota is not None:
        from louise.limits.quota_render import quota_label  # only for an RFD state

        return quota_label(state, state.quota, now)
    suffix = " stale" if status == "stale" else " loading" if status == "loading" else ""
    refusal = state.refused_until(now)
    if refusal is not None and refusal.resets_at is not None:
        return Label(f"limits reached ↻{format_until(refusal.resets_at, now)}{suffix}",
                     "warning" if suffix else "error")
    if status == "unlimited" or snapshot.unlimited:
        return Label("limits unlimited" + suffix, "warning" if suffix else "ok")
    chosen = None if status == "empty" else choose_bucket(snapshot)
    if chosen is None:
        return Label("limits no data" + suffix, "warning")
    bucket, rank = chosen
    parts = ["limits"]
    name = bucket.display_name
    if not (bucket.id == snapshot.default_bucket_id and name.casefold() == state.agent.casefold()):
        parts.append(sanitize(name))
    windows = sorted(bucket.windows, key=_by_duration)
    parts.extend(_window_text(window, now) for window in windows[:2])
    if len(windows) > 2:
        parts.append(f"+{len(windows) - 2}")
    if rank == 3 and not windows:
        # A refused turn with no window data (a passive source): say what is known.
        parts.append("reached")
    level: Level
    if suffix:
        level = "warning"
    elif rank >= 2:
        level = "error"
    elif rank == 1:
        level = "warning"
    else:
        level = "ok"
    return Label(" ".join(parts) + suffix, level)


# --------------------------------------------------------------------------- detail

_STATUS_NOTES: Final[dict[str, str]] = {
    "not_observed": "No initialized Session of this Agent has been observed yet.",
    "unsupported": "This Agent does not advertise the account limits extension.",
}


def _bucket_lines(
    bucket: Bucket, is_default: bool, now: float, pace: PaceHistory | None = None,
    reset_available: int | None = None, local: tzinfo | None = None,
) -> list[str]:
    heading = sanitize(bucket.id)
    if bucket.label is not None:
        heading = f"{sanitize(bucket.label)} ({heading})"
    lines = [f"### {heading}" + (" [default]" if is_default else "")]
    if not bucket.windows:
        lines.append("No quota windows reported")
    for window in sorted(bucket.windows, key=_by_duration):
        remaining = format_percent(100 - window.used_percent)
        lines.append(f"{remaining} left · {format_percent(window.used_percent)} used")
        lines.append(
            f"Window: {format_duration(window.duration_mins)} · "
            f"Resets: {reset_text(window.resets_at, now, local)}"
        )
        if pace is not None:
            from louise.limits.pace import pace_line  # only with a pace history

            line = pace_line(bucket.id, window, pace, now)
            if line is not None:
                lines.append(line)
    if bucket.reached_type is not None:
        reached = f"Reached: {sanitize(bucket.reached_type)}"
        if reset_available:  # what could lift it at once
            reached += f" · Reset credits available: {reset_available}"
        lines.append(reached)
    if bucket.plan_type is not None:
        lines.append(f"Plan: {sanitize(bucket.plan_type)}")
    credits = bucket.credits
    if credits is not None:
        if credits.unlimited:
            lines.append("Credits: unlimited")
        elif credits.balance is not None:
            lines.append(f"Credits: {format_number(credits.balance)}")
        else:
            lines.append("Credits: no balance reported")
    return lines


def render_detail(
    state: LimitsState, now: float, *, pace: PaceHistory | None = None,
    local: tzinfo | None = None, awaiting: str | None = None,
) -> list[str]:
    """The lines of the detail view (Neovim float and `louise inspect` alike).

    A translated state names its `Source:`; with `pace` (from `louise.limits.pace.record`)
    each window with a projection gets a `Pace:` line; with `local` (a time zone) every
    time shows in that zone too, next to UTC. `awaiting` (`sources.expected`) says what
    the agent sends and when, while there is no figure yet."""
    waiting = awaiting is not None and state.status in ("unsupported", "not_observed")
    status = "no figures yet" if waiting else state.status.replace("_", " ")
    lines = [
        "# Account limits",
        "",
        f"Agent: {sanitize(state.agent)}",
        f"Status: {status}",
    ]
    if state.source is not None:
        lines.append(f"Source: {sanitize(state.source)}")
    if state.updated_at is not None:
        lines.append(
            f"Updated: {format_utc(state.updated_at, seconds=True, local=local)} "
            f"({format_age(state.updated_at, now)})"
        )
    if state.error is not None:
        lines.append(f"Note: {sanitize(state.error)}")
    note = awaiting if waiting else _STATUS_NOTES.get(state.status)
    if note is not None:
        lines.append(note)
    snapshot = state.snapshot
    if snapshot is None:
        return lines
    if state.quota is not None:
        from louise.limits.quota_render import quota_detail

        return lines + quota_detail(state, state.quota, now, pace=pace, local=local)
    if state.refusal is not None:
        from louise.limits.quota_render import refusal_lines

        lines.extend(refusal_lines(state, now, local))
    if snapshot.unlimited:
        lines.append("Account limits: unlimited")
    if not snapshot.buckets:
        lines.append("Metered buckets: none")
    else:
        lines.extend(["", "## Buckets"])
        available = snapshot.reset_credits.available_count if snapshot.reset_credits else None
        for bucket in snapshot.buckets:
            lines.append("")
            lines.extend(_bucket_lines(bucket, bucket.id == snapshot.default_bucket_id, now,
                                       pace, available, local))
    reset = snapshot.reset_credits
    if reset is not None:
        lines.extend(["", f"Reset credits: {reset.available_count}"])
        for credit in reset.credits or ():
            name = credit.title or credit.id or "Reset credit"
            line = f"- {sanitize(name)}"
            if credit.title is not None and credit.id is not None:
                line += f" ({sanitize(credit.id)})"
            if credit.expires_at is not None:
                if credit.expires_at <= now:
                    line += f" · Expired ({format_utc(credit.expires_at, local=local)})"
                else:
                    line += (
                        f" · Expires: in {format_until(credit.expires_at, now)} "
                        f"({format_utc(credit.expires_at, local=local)})"
                    )
            lines.append(line)
            if credit.description is not None:
                lines.append(f"  {sanitize(credit.description)}")
    return lines
