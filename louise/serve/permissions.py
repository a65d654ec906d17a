"""The automatic answer to a permission request nobody is attached to answer: what the
configured rules (`[permissions]`) say, as the broker applies them: a reject rule or
`default = "reject"` refuses (a one-time reject, else cancelled), an allow rule allows
once; anything else waits for a person. Never an allow by default, never "always"."""

from __future__ import annotations

from typing import Any

from louise.config.sections import PermissionsConfig
from louise.permissions.broker import MalformedPermission, extract_request
from louise.permissions.rules import configured_decisions
from louise.serve.routing import CANCELLED, AutoAnswer


def _option(params: dict[str, Any], kind: str) -> str | None:
    for option in params.get("options") or []:
        if isinstance(option, dict) and option.get("kind") == kind:
            option_id = option.get("optionId")
            if isinstance(option_id, str):
                return option_id
    return None


def auto_answer_for(policy: PermissionsConfig) -> AutoAnswer:
    def answer(params: dict[str, Any], cwd: str | None,
               known_tool_call: dict[str, Any] | None) -> dict[str, Any] | None:
        try:  # read as the broker reads it: the request over what the updates said
            request = extract_request(0, "", "", cwd or "", params, known_tool_call)
        except MalformedPermission:
            return None  # nothing is decided on what cannot be read: it waits
        decisions = configured_decisions(policy, request.kind, list(request.paths),
                                         [cwd] if cwd else [])
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
