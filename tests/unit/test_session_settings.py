"""The session's model for every agent (config option or the legacy `models` state) and
how a default mode, model or thought level is matched against what the agent offers."""

from __future__ import annotations

from louise.session import ModelChanged, Session
from louise.session.model import LEGACY_MODE, LEGACY_MODEL

OPTIONS = [
    {"id": "mode", "name": "Mode", "category": "mode", "type": "select", "currentValue": "code",
     "options": [{"value": "ask", "name": "Ask"}, {"value": "code", "name": "Code"}]},
    {"id": "model", "name": "Model", "category": "model", "type": "select",
     "currentValue": "fast", "options": [{"group": "g", "name": "G", "options": [
         {"value": "fast", "name": "Demo Fast"}, {"value": "smart", "name": "Demo Smart"}]}]},
    {"id": "effort", "name": "Effort", "category": "thought_level", "type": "select",
     "currentValue": "low", "options": [{"value": "low", "name": "Low"},
                                        {"value": "high", "name": "High"}]},
]
LEGACY = {"currentModelId": "gemini-2.5-flash", "availableModels": [
    {"modelId": "gemini-2.5-pro", "name": "Gemini 2.5 Pro"},
    {"modelId": "gemini-2.5-flash", "name": "Gemini 2.5 Flash", "description": "fast"},
    {"name": "no id"}]}


def session() -> Session:
    return Session("s", "agent", "/tmp")


def test_legacy_models_become_a_model_choice() -> None:
    model = session()
    events = model.apply_setup({"currentModeId": "a", "availableModes": [{"id": "a",
                                                                         "name": "A"}]},
                               [], LEGACY)
    assert ModelChanged("s", "gemini-2.5-flash") in events
    assert model.current_model == "gemini-2.5-flash"
    assert model.model_option_id == LEGACY_MODEL
    (choice,) = model.option_choices()
    assert choice == {"id": LEGACY_MODEL, "name": "Model", "current": "gemini-2.5-flash",
                      "values": [{"value": "gemini-2.5-pro", "name": "Gemini 2.5 Pro"},
                                 {"value": "gemini-2.5-flash", "name": "Gemini 2.5 Flash"}]}
    assert model.option_choices(LEGACY_MODEL) == [choice]
    assert model.set_current_model("gemini-2.5-pro") == [ModelChanged("s", "gemini-2.5-pro")]
    assert model.current_model == "gemini-2.5-pro"


def test_a_model_config_option_wins_over_the_legacy_state() -> None:
    model = session()
    model.apply_setup(None, OPTIONS, LEGACY)
    assert model.current_model == "fast" and model.model_option_id == "model"
    assert [c["id"] for c in model.option_choices()] == ["mode", "model", "effort"]


def test_defaults_match_ids_then_names_case_insensitively() -> None:
    model = session()
    model.apply_setup(None, OPTIONS)
    assert model.setting_for("mode", "ask") == ("mode", "ask", False)
    assert model.setting_for("mode", "CODE") == ("mode", "code", True)
    assert model.setting_for("model", "demo smart") == ("model", "smart", False)
    assert model.setting_for("thought_level", "High") == ("effort", "high", False)
    assert model.setting_for("model", "opus") == (
        "agent offers no model 'opus' (it offers: fast, smart)")


def test_defaults_through_the_legacy_mode_and_model() -> None:
    model = session()
    model.apply_setup({"currentModeId": "a", "availableModes": [
        {"id": "a", "name": "Auto"}, {"id": "p", "name": "Plan"}]}, None, LEGACY)
    assert model.setting_for("mode", "plan") == (LEGACY_MODE, "p", False)
    assert model.setting_for("model", "Gemini 2.5 Pro") == (LEGACY_MODEL, "gemini-2.5-pro",
                                                             False)
    assert model.setting_for("thought_level", "high") == (
        "agent offers no thought level setting")


def test_vibes_thinking_category_counts_as_thought_level() -> None:
    model = session()
    model.apply_setup(None, [{"id": "thinking", "name": "Thinking", "category": "thinking",
                              "type": "select", "currentValue": "off",
                              "options": [{"value": "off", "name": "Off"},
                                          {"value": "low", "name": "Low"}]}])
    assert model.setting_for("thought_level", "low") == ("thinking", "low", False)
