"""Rendering a state that holds an RFD snapshot (`LimitsState.quota`): the label, the
detail lines and the alerts. Pure; `louise.limits.render` and the alerts delegate here.

What the RFD adds is kept in view: pools in the agent's order with their state words
(`not enabled`, `exhausted`; an unknown state is "unavailable", as the RFD asks), meters
with their amounts and units (`$12.40 of $50.00`, `118.5 credits`), the agent's own
severity (`warning`), the agent's `updatedAt` ("As of"), and a `quotaExceeded` refusal
("reached, resets in 2h"). Nothing is shown that the agent did not send: no zero for a
missing amount, no reset for a meter without one.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Final

from louise.limits.quota import Meter, Pool, Quantity, QuotaSnapshot
from louise.limits.quota_project import reached, share_used
from louise.limits.snapshot import Window

if TYPE_CHECKING:
    from datetime import tzinfo

    from louise.limits.alerts import Alert, AlertKey, AlertMemory
    from louise.limits.pace import PaceHistory
    from louise.limits.state import LimitsState
    from louise.limits.text import Label, Level

STATE_WORDS: Final[dict[str, str]] = {
    "available": "available",
    "exhausted": "exhausted",
    "not_enabled": "not enabled",
    "not_permitted": "not permitted",
    "not_eligible": "not eligible",
}
_MONEY: Final[dict[str, str]] = {"USD": "$", "EUR": "€", "GBP": "£"}


def state_word(state: str) -> str:
    """A pool state for a person; unknown and `_`-prefixed ones are "unavailable"."""
    return STATE_WORDS.get(state, "unavailable")


def format_quantity(quantity: Quantity) -> str:
    """Money as money (`$12.40`, `12.40 CHF`), a count with its unit (`118.5 credits`), an
    amount without a unit as a bare number. The decimal string is shown as sent."""
    from louise.limits.text import sanitize

    value = quantity.value
    unit = quantity.unit
    if unit is None:
        return value
    if quantity.is_money:
        symbol = _MONEY.get(unit)
        if symbol is not None:
            return f"-{symbol}{value[1:]}" if value.startswith("-") else f"{symbol}{value}"
        return f"{value} {unit}"
    return f"{value} {sanitize(unit)}"


def window_word(meter: Meter) -> str | None:
    """`5h`, `7d`, `1mo`, `1y` (or the duration as sent)."""
    window = meter.window
    if window is None:
        return None
    if window.minutes is not None:
        from louise.limits.text import format_duration

        return format_duration(window.minutes)
    text = window.text
    for suffix, word in (("M", "mo"), ("Y", "y")):
        number = text[1:-1]
        if text.startswith("P") and text.endswith(suffix) and number.isdigit():
            return f"{number}{word}"
    return text


def _amounts(meter: Meter) -> str | None:
    used, limit, remaining = meter.used, meter.limit, meter.remaining
    if used is not None and limit is not None:
        return f"{format_quantity(used)} of {format_quantity(limit)}"
    if remaining is not None:
        return f"{format_quantity(remaining)} left"
    if used is not None:
        return f"{format_quantity(used)} used"
    return None


# --------------------------------------------------------------------------- label


def pool_rank(pool: Pool, *, warning_used: float = 80.0, error_used: float = 90.0) -> int:
    """Urgency: 3 reached (`exhausted`, or a meter `exceeded`), 2 a meter at or over
    `error_used` %, 1 one at or over `warning_used` % or graded `warning`, else 0."""
    if reached(pool) is not None:
        return 3
    rank = 0
    for meter in pool.meters:
        used = share_used(meter)
        if used is not None and used >= error_used:
            return 2
        if (used is not None and used >= warning_used) or meter.status == "warning":
            rank = 1
    return rank


def _meter_label_text(meter: Meter, now: float) -> str:
    from louise.limits.text import format_remaining, format_until, sanitize

    used = share_used(meter)
    window = window_word(meter)
    if used is not None:
        text = format_remaining(100 - used)
        if window is not None:
            text += f"/{window}"
    else:
        text = _amounts(meter) or sanitize(meter.status or "")
    if meter.resets_at is not None and meter.resets_at.seconds > now:
        text += f" ↻{format_until(meter.resets_at.seconds, now)}"
    return text


def quota_label(state: LimitsState, quota: QuotaSnapshot, now: float) -> Label:
    """The statusline label of an RFD state (see `render_label`). The first pool is the
    agent's own (its label is left out, as an Agent's default bucket's is); another pool
    shown says its name."""
    from louise.limits.text import Label, format_until, sanitize

    status = state.status
    suffix = " stale" if status == "stale" else " loading" if status == "loading" else ""
    refusal = state.refused_until(now)
    if refusal is not None:
        text = "limits reached"
        pool = quota.pool(refusal.pool_id) if refusal.pool_id is not None else None
        if pool is not None and quota.pools and pool is not quota.pools[0]:
            text += f" {sanitize(pool.display_name)}"
        if refusal.resets_at is not None:
            text += f" ↻{format_until(refusal.resets_at, now)}"
        return Label(text + suffix, "warning" if suffix else "error")
    if not quota.pools:
        # The RFD: an agent without quota data for this account returns no pools.
        return Label("limits n/a", "neutral")
    best, best_rank = quota.pools[0], -1
    for pool in quota.pools:
        rank = pool_rank(pool)
        if rank > best_rank:
            best, best_rank = pool, rank
    parts = ["limits"]
    if best is not quota.pools[0]:
        parts.append(sanitize(best.display_name))
    parts.extend(_meter_label_text(meter, now) for meter in best.meters[:2])
    if len(best.meters) > 2:
        parts.append(f"+{len(best.meters) - 2}")
    if not best.meters and best.state is not None:
        parts.append("reached" if best.state == "exhausted" else state_word(best.state))
    level: Level = "warning" if suffix else (
        "error" if best_rank >= 2 else "warning" if best_rank == 1 else "ok")
    return Label(" ".join(parts) + suffix, level)


# --------------------------------------------------------------------------- detail


def _meter_lines(pool: Pool, meter: Meter, now: float, pace: PaceHistory | None,
                 local: tzinfo | None) -> list[str]:
    from louise.limits.text import format_percent, reset_text, sanitize

    head = f"- {sanitize(meter.display_name)}"
    if meter.label is not None:
        head += f" ({sanitize(meter.id)})"
    figures: list[str] = []
    amounts = _amounts(meter)
    if amounts is not None:
        figures.append(amounts)
    if meter.used_percent is not None:
        figures.append(f"{format_percent(meter.used_percent)} used")
        if meter.used_percent <= 100:
            figures.append(f"{format_percent(100 - meter.used_percent)} left")
    if meter.status is not None:
        figures.append(sanitize(meter.status))
    lines = [head + ": " + " · ".join(figures) if figures else head]
    period: list[str] = []
    window = window_word(meter)
    if window is not None:
        period.append(f"Window: {sanitize(window)}")
    if meter.resets_at is not None:
        period.append(f"Resets: {reset_text(meter.resets_at.seconds, now, local)}")
    if period:
        lines.append("  " + " · ".join(period))
    used = share_used(meter)
    if pace is not None and used is not None and meter.window is not None \
            and meter.window.minutes is not None and meter.resets_at is not None:
        from louise.limits.pace import pace_line

        line = pace_line(pool.id, Window(min(used, 100.0), meter.window.minutes,
                                         meter.resets_at.seconds), pace, now)
        if line is not None:
            lines.append(f"  {line}")
    return lines


def quota_detail(state: LimitsState, quota: QuotaSnapshot, now: float, *,
                 pace: PaceHistory | None = None, local: tzinfo | None = None) -> list[str]:
    """The RFD part of the detail view: the agent's time, a refusal, pools and meters."""
    from louise.limits.text import format_utc, sanitize

    lines = [f"As of: {format_utc(quota.updated_at.micros / 1e6, seconds=True, local=local)}"
             " (the agent's time)"]
    lines.extend(refusal_lines(state, now, local))
    for skipped in quota.skipped:
        lines.append(f"Skipped: {sanitize(skipped)}")
    if not quota.pools:
        lines.append("Pools: none (the agent has no quota data for this account)")
        return lines
    lines.extend(["", "## Pools"])
    for pool in quota.pools:
        heading = sanitize(pool.id)
        if pool.label is not None:
            heading = f"{sanitize(pool.label)} ({heading})"
        if pool.state is not None:
            heading += f" · {state_word(pool.state)}"
        lines.extend(["", f"### {heading}"])
        if not pool.meters:
            lines.append("No meters reported")
        for meter in pool.meters:
            lines.extend(_meter_lines(pool, meter, now, pace, local))
    return lines


def refusal_lines(state: LimitsState, now: float, local: tzinfo | None = None) -> list[str]:
    """`Reached: 5-hour limit reached (plan/five_hour) · resets in 2h (…)`, while the
    last `quotaExceeded` is in force."""
    from louise.limits.text import reset_text, sanitize

    refusal = state.refused_until(now)
    if refusal is None:
        return []
    where = "/".join(sanitize(part) for part in (refusal.pool_id, refusal.meter_id)
                     if part is not None)
    line = f"Reached: {sanitize(refusal.message)}" + (f" ({where})" if where else "")
    line += (f" · resets {reset_text(refusal.resets_at, now, local)}"
             if refusal.resets_at is not None else " · reset unknown")
    return [line]


# --------------------------------------------------------------------------- alerts


def _meter_key(pool: Pool, meter: Meter) -> AlertKey:
    minutes = meter.window.minutes if meter.window is not None else None
    resets = meter.resets_at.seconds if meter.resets_at is not None else 0
    return (f"{pool.id}/{meter.id}", minutes or 0, resets)


def quota_alerts(state: LimitsState, quota: QuotaSnapshot, seen: AlertMemory | None,
                 now: float, *, warning_left: float = 20.0, error_left: float = 10.0
                 ) -> tuple[list[Alert], AlertMemory]:
    """Threshold alerts for an RFD state, once per meter, period and escalation: the
    agent's `warning` or ≤ `warning_left` % left (warning), ≤ `error_left` % left
    (error), `exceeded` or its pool `exhausted` (error, "reached")."""
    from louise.limits.alerts import Escalations
    from louise.limits.text import format_remaining, format_until, sanitize

    if state.status != "fresh":
        return [], MappingProxyType({}) if seen is None else seen
    book = Escalations(seen, now)
    agent = sanitize(state.agent)
    for pool in quota.pools:
        name = sanitize(pool.display_name)
        for meter in pool.meters:
            if meter.resets_at is not None and meter.resets_at.seconds <= now:
                continue
            used = share_used(meter)
            left = None if used is None else 100 - used
            if meter.status == "exceeded" or (pool.state == "exhausted" and left is not None
                                             and left <= 0):
                rank = 3
            elif left is not None and left <= error_left:
                rank = 2
            elif meter.status == "warning" or (left is not None and left <= warning_left):
                rank = 1
            else:
                continue
            key = _meter_key(pool, meter)
            if not book.new(key, rank):
                continue
            what = f"{agent} {name} {sanitize(meter.display_name)}"
            if rank == 3:
                message = f"{what}: limit reached"
            elif left is not None:
                message = f"{what}: {format_remaining(left)} left"
            else:
                message = f"{what}: approaching its limit"
            if meter.resets_at is not None:
                message += f"; resets in {format_until(meter.resets_at.seconds, now)}"
            book.add("warning" if rank == 1 else "error", message, key)
    return book.result()


def earliest_reset(quota: QuotaSnapshot, now: float) -> int | None:
    """The first reset time ahead among the meters, if any."""
    ahead = [meter.resets_at.seconds for pool in quota.pools for meter in pool.meters
             if meter.resets_at is not None and meter.resets_at.seconds > now]
    return min(ahead) if ahead else None


__all__ = ["earliest_reset", "format_quantity", "pool_rank", "quota_alerts",
           "quota_detail", "quota_label", "state_word", "window_word"]
