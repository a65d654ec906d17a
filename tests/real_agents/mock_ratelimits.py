"""Anthropic "unified" rate-limit response headers for the offline model API (model_api/).

Claude Code (inside claude-agent-acp) reads these headers from every `/v1/messages`
response, turns them into an `SDKRateLimitInfo` and claude-agent-acp forwards that as
`_meta["_claude/rateLimit"]` on a `usage_update` session notification. The header names
are the ones the Claude Code binary parses (for each window key `5h`, `7d`, `7d_oi`,
`overage`: `-utilization` as a 0–1 fraction, `-reset` in Unix seconds,
`-surpassed-threshold`, `-status`; plus the account-wide `-status`, `-reset` and
`-representative-claim`).

Stdlib only, self-contained. The model API's Anthropic dialect (`model_api/anthropic.py`)
adds `RateLimits.headers` to every `/v1/messages` answer, its Responses dialect
`RateLimits.codex_headers` to every `/v1/responses` answer.

Configuration, from the environment of the mock process:

- `MOCK_RATELIMIT`: `off` (send nothing), or comma-separated `WINDOW=FRACTION` pairs,
  default `5h=0.24,7d=0.13`. WINDOW is one of `5h`, `7d`, `7d_oi`, `overage`.
- `MOCK_RATELIMIT_STEP`: added to every window's utilization after each main
  `/v1/messages` request (one that offers tools), default `0`; lets a test watch the
  windows fill up (pace).

`/v1/responses` answers (codex) carry the `5h` and `7d` windows as codex's own headers:
`x-codex-primary-*` / `x-codex-secondary-*` (`-used-percent` 0–100, `-window-minutes`,
`-reset-at`).

Reset times are fixed when the server starts (5h window: start + 2 h; 7d windows:
start + 4 d; overage: start + 20 d), so successive responses describe the same cycle.
A `429` answer (the `MOCK-ERROR 429` scenario) carries `status: rejected`, the 5h window
at utilization 1 and `representative-claim: five_hour`, as the real API does for a
subscriber who hit the five-hour limit.

Claude Code applies these headers only for a claude.ai subscription (or a gateway); with a
plain API key it ignores them and claude-agent-acp sends no `_claude/rateLimit`. Offline,
against this mock, that takes (verified with claude-agent-acp 0.101.0, Claude Code 2.1.318):

- `CLAUDE_CODE_OAUTH_TOKEN` set to any string (e.g. `offline-mock-oauth-token`; Claude Code
  sends it as `Authorization: Bearer …`), and `ANTHROPIC_API_KEY` unset or empty, with no
  `ANTHROPIC_AUTH_TOKEN` and no `apiKeyHelper`; no credentials file and no subscription type
  are needed, and only `POST /v1/messages` is used;
- or the "Cloud gateway" provider: `CLAUDE_CODE_USE_GATEWAY=1` with `ANTHROPIC_AUTH_TOKEN`
  set to any string.

claude-agent-acp sends a `_claude/rateLimit` only when the figures change since Claude Code
last saw them: a side request without tools (naming the session after a prompt of several
words) that gets the headers first leaves nothing new for the turn's own response, so the
first event then comes a turn later (with `MOCK_RATELIMIT_STEP` > 0).
"""

from __future__ import annotations

import os
import threading
import time

WINDOW_RESET_OFFSETS = {"5h": 2 * 3600, "7d": 4 * 86400, "7d_oi": 4 * 86400, "overage": 20 * 86400}
CLAIMS = {"5h": "five_hour", "7d": "seven_day", "7d_oi": "seven_day_overage_included",
          "overage": "overage"}
DEFAULT = "5h=0.24,7d=0.13"
WARNING_AT = 0.75


class RateLimits:
    """The account's windows: utilization per window key, and each window's reset time."""

    def __init__(self, spec: str, step: float, start: float) -> None:
        self.lock = threading.Lock()
        self.step = step
        self.utilization: dict[str, float] = {}
        self.resets_at: dict[str, int] = {}
        if spec.strip().lower() == "off":
            return
        for part in spec.split(","):
            key, _, value = part.strip().partition("=")
            if key not in WINDOW_RESET_OFFSETS:
                raise SystemExit(f"MOCK_RATELIMIT: unknown window {key!r}")
            self.utilization[key] = min(1.0, max(0.0, float(value)))
            self.resets_at[key] = int(start) + WINDOW_RESET_OFFSETS[key]

    def headers(self, status_code: int, main_request: bool) -> list[tuple[str, str]]:
        """The headers of one `/v1/messages` response; advances utilization by `step`."""
        with self.lock:
            if not self.utilization:
                return []
            rejected = status_code == 429
            utilization = dict(self.utilization)
            if rejected and "5h" in utilization:
                utilization["5h"] = 1.0
            out: list[tuple[str, str]] = []
            for key, used in utilization.items():
                prefix = f"anthropic-ratelimit-unified-{key}"
                out.append((f"{prefix}-utilization", f"{used:.2f}"))
                out.append((f"{prefix}-reset", str(self.resets_at[key])))
                if key != "overage":
                    window_status = ("rejected" if used >= 1.0
                                     else "allowed_warning" if used >= WARNING_AT else "allowed")
                    out.append((f"{prefix}-status", window_status))
                if used >= WARNING_AT:
                    out.append((f"{prefix}-surpassed-threshold", f"{WARNING_AT:.2f}"))
            # The representative claim is the fullest window (the one that binds first).
            claim_key = max(utilization, key=lambda key: (utilization[key], -self.resets_at[key]))
            fullest = utilization[claim_key]
            status = ("rejected" if rejected or fullest >= 1.0
                      else "allowed_warning" if fullest >= WARNING_AT else "allowed")
            out.append(("anthropic-ratelimit-unified-status", status))
            out.append(("anthropic-ratelimit-unified-reset", str(self.resets_at[claim_key])))
            out.append(("anthropic-ratelimit-unified-representative-claim", CLAIMS[claim_key]))
            if rejected:
                wait = max(0, self.resets_at[claim_key] - int(time.time()))
                out.append(("retry-after", str(wait)))
                out.append(("x-should-retry", "false"))
            if main_request and self.step:
                for key in self.utilization:
                    self.utilization[key] = min(1.0, self.utilization[key] + self.step)
            return out

    def codex_headers(self) -> list[tuple[str, str]]:
        """The same windows as codex's `x-codex-{primary,secondary}-*` headers (percent
        used, window minutes, reset time), which codex parses from `/v1/responses`."""
        with self.lock:
            out: list[tuple[str, str]] = []
            for family, key, minutes in (("primary", "5h", 300), ("secondary", "7d", 10080)):
                if key not in self.utilization:
                    continue
                prefix = f"x-codex-{family}"
                out.append((f"{prefix}-used-percent", f"{self.utilization[key] * 100:g}"))
                out.append((f"{prefix}-window-minutes", str(minutes)))
                out.append((f"{prefix}-reset-at", str(self.resets_at[key])))
            return out


def from_environment(start: float | None = None) -> RateLimits:
    return RateLimits(os.environ.get("MOCK_RATELIMIT", DEFAULT),
                      float(os.environ.get("MOCK_RATELIMIT_STEP", "0")),
                      time.time() if start is None else start)

