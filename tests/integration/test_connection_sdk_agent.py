"""Our client against an agent built with the SDK's agent side (not our code)."""

from __future__ import annotations

import anyio
import pytest

from louise.acp.connection import Unsupported, open_connection
from louise.acp.handlers import ClientHandlers
from tests.integration.agents import Recorder, sdk_agent, wait_until

pytestmark = pytest.mark.anyio
LIMITS_READ = "_io.github.euri10.louiselm/account_limits/read"


async def test_initialize_new_session_prompt_and_limits_read() -> None:
    rec = Recorder()
    async with open_connection(sdk_agent(), rec.handlers()) as conn:
        init = conn.initialized
        assert init is not None and init.agent_info["name"] == "fake-sdk-agent"
        meta = init.agent_capabilities["_meta"]["io.github.euri10.louiselm"]
        assert meta["accountLimits"]["readMethod"] == LIMITS_READ

        session = await conn.new_session("/tmp")
        assert session.session_id == "sdk-1"
        # The update sent before the reply arrived for that session.
        await wait_until(lambda: rec.updates)
        assert rec.updates[0][0] == "sdk-1" and rec.updates[0][1].kind == "usage_update"

        result = await conn.prompt("sdk-1", [{"type": "text", "text": "hello brave world"}])
        assert result["stopReason"] == "end_turn"
        await wait_until(lambda: len(rec.texts()) == 3)
        assert rec.texts() == ["hello ", "brave ", "world "]
        # A usage_update after the reply, and the limits push, both arrive.
        await wait_until(lambda: rec.kinds().count("usage_update") == 2)
        await wait_until(lambda: any(m.endswith("account_limits/updated") for m, _ in rec.ext))
        assert ("_auth/status_update", {"authStatus": {"kind": "none"}}) in rec.ext

        snapshot = await conn.ext_request(LIMITS_READ, {})
        assert snapshot["defaultBucketId"] == "requests"


async def test_every_update_validates_against_the_schema() -> None:
    rec = Recorder()
    async with open_connection(sdk_agent(), rec.handlers()) as conn:
        await conn.new_session("/tmp")
        await conn.prompt("sdk-1", [{"type": "text", "text": "a b"}])
        await wait_until(lambda: len(rec.texts()) == 2)
        assert all(update.model is not None for _, update in rec.updates)


async def test_permission_selected_and_cancelled() -> None:
    rec = Recorder(choose="yes")
    async with open_connection(sdk_agent(), rec.handlers()) as conn:
        await conn.new_session("/tmp")
        await conn.prompt("sdk-1", [{"type": "text", "text": "permission"}])
        await wait_until(lambda: "outcome:yes" in rec.texts())
        rec.choose = None
        await conn.prompt("sdk-1", [{"type": "text", "text": "permission"}])
        await wait_until(lambda: "outcome:cancelled" in rec.texts())
        assert len(rec.permission_requests) == 2


async def test_permission_without_a_handler_fails_closed() -> None:
    rec = Recorder()
    handlers = ClientHandlers(on_update=rec.on_update)  # no permission handler at all
    async with open_connection(sdk_agent(), handlers) as conn:
        await conn.new_session("/tmp")
        await conn.prompt("sdk-1", [{"type": "text", "text": "permission"}])
        await wait_until(lambda: "outcome:cancelled" in rec.texts())


async def test_permission_handler_error_or_bogus_option_fails_closed() -> None:
    rec = Recorder()

    async def broken(params: dict[str, object]) -> dict[str, object]:
        raise RuntimeError("UI exploded")

    async def bogus(params: dict[str, object]) -> dict[str, object]:
        return {"outcome": {"outcome": "selected", "optionId": "not-offered"}}

    for handler in (broken, bogus):
        rec.updates.clear()
        handlers = ClientHandlers(on_update=rec.on_update, request_permission=handler)
        async with open_connection(sdk_agent(), handlers) as conn:
            await conn.new_session("/tmp")
            await conn.prompt("sdk-1", [{"type": "text", "text": "permission"}])
            await wait_until(lambda: "outcome:cancelled" in rec.texts())


async def test_list_sessions_follows_cursor_pages() -> None:
    async with open_connection(sdk_agent(), Recorder().handlers()) as conn:
        ids = [info["sessionId"] async for info in conn.list_sessions("/tmp")]
        assert ids == ["old-1", "old-2"]


async def test_ungated_methods_are_refused_locally() -> None:
    async with open_connection(sdk_agent(), Recorder().handlers()) as conn:
        with pytest.raises(Unsupported):
            await conn.load_session("x", "/tmp")
        with pytest.raises(Unsupported):
            await conn.resume_session("x", "/tmp")


async def test_cancel_ends_a_waiting_turn_with_cancelled() -> None:
    rec = Recorder()
    async with open_connection(sdk_agent(), rec.handlers()) as conn:
        await conn.new_session("/tmp")
        results: list[dict[str, object]] = []

        async def turn() -> None:
            results.append(await conn.prompt("sdk-1", [{"type": "text", "text": "wait"}]))

        async with anyio.create_task_group() as tg:
            tg.start_soon(turn)
            await wait_until(lambda: rec.texts() == ["waiting"])  # the turn is under way
            await conn.cancel("sdk-1")
        assert results == [{"stopReason": "cancelled"}]


async def test_capabilities_are_honest() -> None:
    handlers = ClientHandlers()
    caps = handlers.capabilities()
    assert caps["fs"] == {"readTextFile": False, "writeTextFile": False}
    assert caps["terminal"] is False
