"""Per-Agent defaults (`[agents.NAME] defaults = { mode, model, thought_level }`) applied
to every new session: each through the agent's config option for it, else the legacy
`session/set_mode` / `session/set_model`. A default the agent does not offer, or that it
refuses, leaves the session as the agent started it, with a note in the chat saying why."""

from __future__ import annotations

import logging

from louise.acp.errors import AcpError
from louise.config.agents import AgentDefaults
from louise.registry.events import Emitter
from louise.registry.records import SessionTable
from louise.registry.settings import SessionSettings
from louise.session.model import LEGACY_MODE, LEGACY_MODEL, SETTING_CATEGORIES

log = logging.getLogger("louise.registry")


async def apply_defaults(table: SessionTable, emitter: Emitter, settings: SessionSettings,
                         session_id: str, defaults: AgentDefaults) -> None:
    """Mode first, then model, then thought level (a model may change which thought
    levels there are)."""
    for category in SETTING_CATEGORIES:
        wanted = getattr(defaults, category)
        if wanted is None:
            continue
        live = table.live(session_id)
        found = live.model.setting_for(category, wanted)
        if isinstance(found, str):
            emitter.emit_all(live.model.add_notice("info", f"default {category.replace('_', ' ')}"
                                                   f" not applied: {found}"))
            continue
        how, value, current = found
        if current:
            continue
        try:
            if how == LEGACY_MODE:
                await settings.set_mode(session_id, value)
            elif how == LEGACY_MODEL:
                await settings.set_model(session_id, value)
            else:
                await settings.set_config_option(session_id, how, value)
        except AcpError as exc:
            log.info("%s: default %s %r refused: %s", live.agent, category, value, exc)
            emitter.emit_all(table.live(session_id).model.add_notice(
                "info", f"default {category.replace('_', ' ')} {value!r} not applied: "
                f"{str(exc).splitlines()[0]}"))
