"""Models for every agent and per-Agent defaults, against the demo agent over real stdio:
its model as a config option, and the legacy way (LOUISE_DEMO_MODELS=legacy: `models` in
the session replies and `session/set_model`, as gemini-cli has it)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from louise.config.loading import load_config_mapping
from louise.registry import SessionRegistry
from louise.registry.records import RegistryError
from louise.session import Notice
from louise.session.model import LEGACY_MODEL

pytestmark = pytest.mark.anyio


def config(tmp_path: Path, defaults: dict[str, str] | None = None, **env: str) -> Any:
    agent: dict[str, Any] = {
        "command": sys.executable, "args": ["-P", "-m", "louise.demo_agent"],
        "env": {"LOUISE_DEMO_STATE_DIR": str(tmp_path / "demo-state"), **env}}
    if defaults is not None:
        agent["defaults"] = defaults
    return load_config_mapping({"agents": {"demo": agent}})


async def settings(reg: SessionRegistry, session_id: str) -> str:
    assert await reg.prompt(session_id, "/scenario settings") == "end_turn"
    return [m.text for m in reg.session(session_id).messages() if m.role == "agent"][-1]


def notices(reg: SessionRegistry, session_id: str) -> list[str]:
    return [e.text for e in reg.session(session_id).entries if isinstance(e, Notice)]


async def test_the_legacy_model_state_is_picked_like_a_config_option(tmp_path: Path) -> None:
    async with SessionRegistry(config(tmp_path, LOUISE_DEMO_MODELS="legacy"),
                               grace_seconds=0.5) as reg:
        session = await reg.new_session("demo", str(tmp_path))
        assert session.current_model == "demo-fast"
        assert [o["id"] for o in session.config_options] == ["mode", "thought_level"]
        (choice,) = session.option_choices(session.model_option_id)
        assert choice["id"] == LEGACY_MODEL
        assert [v["value"] for v in choice["values"]] == ["demo-fast", "demo-smart"]
        # The picker's answer goes the same way as a config option's.
        await reg.set_config_option(session.session_id, LEGACY_MODEL, "demo-smart")
        assert reg.session(session.session_id).current_model == "demo-smart"
        assert "model `demo-smart`" in await settings(reg, session.session_id)
        with pytest.raises(RegistryError, match="offers no model 'nope'"):
            await reg.set_model(session.session_id, "nope")


async def test_set_model_uses_the_config_option_where_there_is_one(tmp_path: Path) -> None:
    async with SessionRegistry(config(tmp_path), grace_seconds=0.5) as reg:
        session = await reg.new_session("demo", str(tmp_path))
        await reg.set_model(session.session_id, "demo-smart")
        assert reg.session(session.session_id).current_model == "demo-smart"
        assert "model `demo-smart`" in await settings(reg, session.session_id)


@pytest.mark.parametrize("legacy", [False, True])
async def test_defaults_apply_to_every_new_session(tmp_path: Path, legacy: bool) -> None:
    env = {"LOUISE_DEMO_MODELS": "legacy"} if legacy else {}
    cfg = config(tmp_path, {"mode": "Ask", "model": "Demo Smart", "thought_level": "high"},
                 **env)
    async with SessionRegistry(cfg, grace_seconds=0.5) as reg:
        for _ in range(2):
            session = await reg.new_session("demo", str(tmp_path))
            assert await settings(reg, session.session_id) == (
                "Mode `ask`, model `demo-smart`, thinking `high`.")
            assert session.current_model == "demo-smart" or \
                reg.session(session.session_id).current_model == "demo-smart"
            assert not any("default" in n for n in notices(reg, session.session_id))


async def test_a_default_the_agent_does_not_offer_is_a_note(tmp_path: Path) -> None:
    cfg = config(tmp_path, {"model": "opus", "thought_level": "low"})
    async with SessionRegistry(cfg, grace_seconds=0.5) as reg:
        session = await reg.new_session("demo", str(tmp_path))
        assert notices(reg, session.session_id) == [
            "default model not applied: demo offers no model 'opus' (it offers: demo-fast, "
            "demo-smart)"]
        assert await settings(reg, session.session_id) == (
            "Mode `code`, model `demo-fast`, thinking `low`.")
