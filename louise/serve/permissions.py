"""The automatic answer to a permission request nobody is attached to answer: what the
configured rules (`[permissions]`) say, as the broker applies them: a reject rule or
`default = "reject"` refuses (a one-time reject, else cancelled), an allow rule allows
once; anything else waits for a person. Never an allow by default, never "always"."""

from __future__ import annotations

from typing import Any

from louise.config.sections import PermissionsConfig
from louise.permissions.rules import configured_decisions
from louise.serve.routing import CANCELLED, AutoAnswer


def _option(params: dict[str, Any], kind: str) -> str | None:
    for option in params.get("options") or []:
        if isinstance(option, dict) and option.get("kind") == kind:
            option_id = option.get("optionId")
            if isinstance(option_id, str):
                return option_id
    return None


def _kind_and_paths(params: dict[str, Any]) -> tuple[str | None, list[str]]:
    call = params.get("toolCall")
    if not isinstance(call, dict):
        return None, []
    kind = call.get("kind")
    paths = [loc["path"] for loc in call.get("locations") or []
             if isinstance(loc, dict) and isinstance(loc.get("path"), str)]
    return (kind if isinstance(kind, str) else None), paths


def auto_answer_for(policy: PermissionsConfig) -> AutoAnswer:
    def answer(params: dict[str, Any], cwd: str | None) -> dict[str, Any] | None:
        kind, paths = _kind_and_paths(params)
        decisions = configured_decisions(policy, kind, paths, [cwd] if cwd else [])
        if "reject" in decisions or ("allow" not in decisions and policy.default == "reject"):
            refusal = _option(params, "reject_once")
            return CANCELLED if refusal is None else {
                "outcome": {"outcome": "selected", "optionId": refusal}}
        if "allow" in decisions:
            allow = _option(params, "allow_once")
            if allow is not None:
                return {"outcome": {"outcome": "selected", "optionId": allow}}
        return None

    return answer
