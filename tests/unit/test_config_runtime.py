"""The configuration louise holds (frozen dataclasses, `louise/config/*.py`) against its one
validator (pydantic models, `louise/config/schema/*.py`): the same fields, the same
defaults, and validation giving the dataclasses field for field (issue 25 items 2 and 5)."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
from typing import Any

import pytest

import louise.config.schema as schema_package
from louise.config.data import config_from_data, config_to_data
from louise.config.loading import load_config_mapping
from louise.config.schema.fields import ConfigModel

RUNTIME_ONLY = {"Config": {"warnings"}}  # what validation says beside the data


def schema_models() -> list[tuple[type[Any], type[Any]]]:
    """Every pydantic model of `schema/`, with the dataclass of the same name in the
    runtime module of the same name (`schema/sections.py` → `config/sections.py`)."""
    pairs = []
    for info in pkgutil.iter_modules(schema_package.__path__):
        module = importlib.import_module(f"louise.config.schema.{info.name}")
        for name, model in vars(module).items():
            if inspect.isclass(model) and issubclass(model, ConfigModel) \
                    and model is not ConfigModel and model.__module__ == module.__name__:
                runtime = importlib.import_module(f"louise.config.{info.name}")
                pairs.append((model, getattr(runtime, name)))
    return pairs


def test_every_section_has_its_validator_and_its_runtime_type() -> None:
    names = {model.__name__ for model, _ in schema_models()}
    assert names == {"Config", "AgentConfig", "AgentDefaults", "AgentOptions", "FsConfig",
                     "FsOverride", "TerminalConfig", "TerminalOverride", "PermissionRule",
                     "PermissionsConfig", "McpServerConfig", "ContextConfig", "HostConfig",
                     "CheckpointsConfig", "LimitsConfig"}


@pytest.mark.parametrize(("model", "runtime"), schema_models(),
                         ids=lambda kind: f"{kind.__module__}.{kind.__name__}")
def test_a_validator_and_its_runtime_type_have_the_same_fields(
        model: type[Any], runtime: type[Any]) -> None:
    """Fails when a pydantic model gains a field its dataclass lacks, or the reverse."""
    assert dataclasses.is_dataclass(runtime)
    params = runtime.__dataclass_params__
    assert params.frozen and hasattr(runtime, "__slots__")
    fields = [field.name for field in dataclasses.fields(runtime)
              if field.name not in RUNTIME_ONLY.get(runtime.__name__, set())]
    assert fields == list(model.model_fields)


def all_defaulted() -> list[tuple[type[Any], type[Any]]]:
    """The sections whose every field has a default (Config aside: its validation adds
    the demo agent; see the next test)."""
    return [(model, runtime) for model, runtime in schema_models()
            if model.__name__ != "Config"
            and not any(field.is_required() for field in model.model_fields.values())]


@pytest.mark.parametrize(("model", "runtime"), all_defaulted(),
                         ids=lambda kind: f"{kind.__module__}.{kind.__name__}")
def test_a_runtime_type_has_its_validators_defaults(model: type[Any], runtime: type[Any]) -> None:
    """Made in code (tests, `demo_agent_config`), a section is what validating an empty
    table gives."""
    assert dataclasses.asdict(runtime()) == model.model_construct().model_dump()


def test_the_whole_configurations_defaults_are_the_validators() -> None:
    from louise.config.model import Config

    assert Config() == load_config_mapping({})  # the demo agent too


def test_validation_gives_the_runtime_types_field_for_field() -> None:
    config = load_config_mapping(EVERY_SECTION)
    assert type(config).__module__ == "louise.config.model"
    agent = config.agent("a")
    assert type(agent).__module__ == "louise.config.agents"
    assert type(agent.fs).__module__ == type(config.fs).__module__ == "louise.config.sections"
    assert agent.session_meta == {"claudeCode": {"options": {"maxThinkingTokens": 8000}}}
    assert config.fs_for("a").roots == ["/srv/extra"] and config.fs_for("a").write is False
    assert config.fs_for("demo") == config.fs
    assert config.terminal_for("a").output_byte_limit == 4096
    assert config.terminal_for("a").enabled is True
    assert set(config.mcp_servers_for("a")) == {"docs", "own"}
    assert config.limits.budgets == {"/srv/w": {300: 50.0}}
    assert config_from_data(config_to_data(config), config.warnings) == config


def test_unknown_or_missing_fields_in_data_are_refused() -> None:
    data = config_to_data(load_config_mapping(EVERY_SECTION))
    data["agents"]["a"]["surprise"] = 1
    with pytest.raises(KeyError):
        config_from_data(data)
    data = config_to_data(load_config_mapping(EVERY_SECTION))
    data["fs"]["surprise"] = 1
    with pytest.raises(TypeError):
        config_from_data(data)
    data = config_to_data(load_config_mapping(EVERY_SECTION))
    del data["limits"]["park"]
    with pytest.raises(KeyError):
        config_from_data(data)


# Every section and override set (louise's and LouiseLM's settings), all valid.
EVERY_SECTION: dict[str, Any] = {
    "agents": {
        "a": {"command": "agent-acp", "args": ["--acp"], "env": {"K": "v"}, "cwd": "/srv",
              "provider": [{"provider": "OpenAI"}, {"provider": "Zen"}],
              "fs": {"write": False, "roots": ["/srv/extra"]},
              "terminal": {"output_byte_limit": 4096}, "prompt_idle_timeout": 12,
              "mcp_servers": {"own": {"type": "http", "url": "https://example.com/mcp",
                                      "headers": {"A": "b"}},
                              "off": {"enabled": False}},
              "defaults": {"mode": "plan", "model": "m", "thought_level": "high"},
              "options": {"_meta": {"claudeCode": {"options": {"maxThinkingTokens": 8000}}}},
              "skills": {"x": 1}},
        "b": {"command": "~/bin/b"},
    },
    "default_agent": "b",
    "permissions": {"default": "reject", "gate_unasked": False,
                    "rules": [{"kind": "read", "decision": "allow"},
                              {"kind": ["edit", "delete"], "inside_workspace": False,
                               "decision": "reject"}]},
    "fs": {"read": True, "write": True, "roots": ["~/notes"]},
    "terminal": {"enabled": True, "output_byte_limit": 65536},
    "request_timeout": 12.5,
    "prompt_idle_timeout": 0,
    "mcp_servers": {"docs": {"command": "docs-mcp", "args": ["-q"], "env": {"T": "1"}},
                    "off": {"command": "x"}},
    "checkpoints": {"enabled": False, "max_file_bytes": 1, "max_workspace_files": 2,
                    "max_workspace_bytes": 3, "keep_turns": 4, "max_store_bytes": 5},
    "limits": {"confirm": False, "near_percent": 80, "park": False,
               "budgets": {"/srv/w": {"5h": 50}}},
    "context": {"instructions_file": "AGENTS.md"},
    "host": {"mode": "auto", "via": "ssh devbox louise serve --stdio", "idle_exit": 60},
    "attention": True,
}
