"""How one connection answers agent requests, without a process: permission requests
fail closed on anything malformed, and never raise."""

from __future__ import annotations

from typing import Any

import pytest

from louise.acp.handlers import ClientHandlers, Dispatcher

pytestmark = pytest.mark.anyio
CANCELLED = {"outcome": {"outcome": "cancelled"}}


def dispatcher(choice: Any) -> Dispatcher:
    async def choose(params: dict[str, Any]) -> Any:
        return choice

    return Dispatcher(ClientHandlers(request_permission=choose), "agent")


async def test_a_selected_option_that_was_offered_goes_out() -> None:
    selected = {"outcome": {"outcome": "selected", "optionId": "yes"}}
    result = await dispatcher(selected).handle_request(
        "session/request_permission", {"options": [{"optionId": "yes"}], "toolCall": {}})
    assert result == selected


@pytest.mark.parametrize("options", [5, "yes", {"optionId": "yes"}, None, [["yes"]],
                                     [{"optionId": ["yes"]}]])
@pytest.mark.parametrize("chosen", ["yes", ["yes"], {"a": 1}])
async def test_malformed_options_or_choices_answer_cancelled(options: Any, chosen: Any) -> None:
    params: dict[str, Any] = {"toolCall": {}}
    if options is not None:
        params["options"] = options
    result = await dispatcher({"outcome": {"outcome": "selected", "optionId": chosen}}) \
        .handle_request("session/request_permission", params)
    assert result == CANCELLED
