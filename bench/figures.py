"""How the benchmarks print a series: median (min–max)."""

from __future__ import annotations

import statistics


def spread(values: list[float], digits: int = 1) -> str:
    """median (min–max) of `values`, each with `digits` decimals; "-" when there are none."""
    if not values:
        return "-"
    return (f"{statistics.median(values):.{digits}f} "
            f"({min(values):.{digits}f}–{max(values):.{digits}f})")
