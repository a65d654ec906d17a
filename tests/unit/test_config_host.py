"""`[host]` and `setup{ host = "auto" }`: every Agent launched as `louise attach` with its
own command carried in the hello's shape; a remote host (`via`) given the name only; the
default stays in-process."""

from __future__ import annotations

import json
import os
import sys

import pytest

from louise.cli.commands import attach
from louise.config.host import ATTACH_SPEC_ENV, attach_launch
from louise.config.loading import load_config_mapping
from louise.config.problems import ConfigError
from louise.nvim.engine_options import engine_config
from louise.registry import SessionRegistry
from louise.serve.hello import parse_hello

AGENTS = {"claude": {"command": "/opt/claude-agent-acp", "args": ["--x"],
                     "env": {"TOKEN": "t"}, "cwd": "/srv"}}


def test_the_default_runs_agents_in_process() -> None:
    config = load_config_mapping({"agents": AGENTS})
    assert config.host.mode == "off"
    assert attach_launch(config.host, "claude", config.agent("claude"), "cli") is None


def test_auto_launches_attach_with_the_agent_command_for_the_hello() -> None:
    config = load_config_mapping({"agents": AGENTS, "host": {"mode": "auto", "idle_exit": 30}})
    launch = attach_launch(config.host, "claude", config.agent("claude"), "nvim")
    assert launch is not None
    assert launch.command == os.path.abspath(sys.executable)
    assert launch.args[:4] == ["-P", "-m", "louise.cli", "attach"]
    assert launch.args[4:] == ["--agent", "claude", "--front-end", "nvim", "--idle-exit", "30.0"]
    spec = json.loads(launch.env[ATTACH_SPEC_ENV])
    assert spec == {"command": "/opt/claude-agent-acp", "args": ["--x"],
                    "env": {"TOKEN": "t"}, "cwd": "/srv"}
    assert attach.SPEC_ENV == ATTACH_SPEC_ENV
    # The spec is what `louise attach` puts into the hello, as the host parses it.
    command = attach._spec_from_env("claude", launch.env[ATTACH_SPEC_ENV])
    assert command is not None and command.argv == ["/opt/claude-agent-acp", "--x"]
    assert command.env == {"TOKEN": "t"} and command.cwd == "/srv"


def test_via_sends_no_command_and_names_the_transport() -> None:
    config = load_config_mapping({"host": {"mode": "auto",
                                           "via": "ssh devbox louise serve --stdio"}})
    launch = attach_launch(config.host, "demo", config.agent("demo"), "cli")
    assert launch is not None
    assert launch.args[-2:] == ["--via", "ssh devbox louise serve --stdio"]
    assert ATTACH_SPEC_ENV not in launch.env


@pytest.mark.parametrize("host", [{"mode": "always"}, {"via": "ssh 'unclosed"},
                                  {"via": "  "}, {"idle_exit": -1}, {"port": 1}])
def test_a_bad_host_section_is_a_config_problem(host: dict[str, object]) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config_mapping({"host": host})
    assert "host" in str(caught.value)


def test_setup_host_auto_applies_over_config_toml(tmp_path: object,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOUISE_CONFIG", "/nonexistent/louise-config.toml")
    config = engine_config({"host": {"mode": "auto", "via": "ssh box louise serve --stdio"}})
    assert config.host.enabled and config.host.via == "ssh box louise serve --stdio"
    with pytest.raises(ConfigError):
        engine_config({"host": {"mode": "auto", "via": "ssh 'x"}})


def test_the_registry_starts_attach_but_keeps_the_agent_command() -> None:
    """What is spawned is `louise attach`; remembered rules, sign-in and the session's
    directory still see the Agent's own command."""
    config = load_config_mapping({"agents": AGENTS, "host": {"mode": "auto"}})
    registry = SessionRegistry(config, decider=None, limits_cache=None,
                               permission_memory=None, transcripts_dir=None, remembered=None)
    runtime = registry._table.runtime("claude")
    assert runtime.command.argv == ["/opt/claude-agent-acp", "--x"]
    assert runtime.launch is not None and "attach" in runtime.launch.args
    assert "--front-end" in runtime.launch.args
    assert runtime.launch.args[runtime.launch.args.index("--front-end") + 1] == "cli"


def test_a_hello_built_by_attach_is_read_by_the_host() -> None:
    from louise.serve.hello import FrontEnd, Hello, build_hello

    line = build_hello(Hello(agent="claude", front_end=FrontEnd("cli", 7, True)))
    hello = parse_hello(line)
    assert hello is not None and hello.agent == "claude" and hello.front_end.pid == 7


def test_permission_answered_becomes_one_line_saying_what_and_who() -> None:
    from louise.registry.host_notes import permission_answered

    base = {"sessionId": "s1", "toolCallId": "t", "by": "Neovim (pid 12)"}
    allowed = permission_answered({**base, "outcome": {"outcome": "selected", "optionId": "a"},
                                   "optionKind": "allow_once", "optionName": "Allow"})
    assert allowed is not None
    assert allowed.option_kind == "allow_once"
    assert (allowed.session_id, allowed.line, allowed.tool_call_id, allowed.outcome) == (
        "s1", "answered in another window: allowed once — by Neovim (pid 12)", "t",
        {"outcome": "selected", "optionId": "a"})
    cancelled = permission_answered({**base, "outcome": {"outcome": "cancelled"}})
    assert cancelled is not None and cancelled.outcome is None and cancelled.option_kind is None
    assert cancelled.line == "answered in another window: cancelled — by Neovim (pid 12)"
    odd = permission_answered({**base, "outcome": {"outcome": "selected", "optionId": "x"},
                               "optionName": "Yes\nand " + "x" * 500, "by": 3})
    assert odd is not None and "\n" not in odd.line and len(odd.line) < 200
    assert permission_answered({"sessionId": 5}) is None
    assert permission_answered(None) is None


def test_a_request_the_host_sent_again_shows_how_long_it_waited() -> None:
    from louise.cli.console import describe_request
    from louise.permissions.broker import QueueView, extract_request, waited_text

    def request(meta: object) -> float | None:
        params = {"sessionId": "s", "toolCall": {"toolCallId": "t", "title": "Edit"},
                  "options": [{"optionId": "a", "kind": "allow_once", "name": "Allow"}],
                  "_meta": meta}
        return extract_request(1, "demo", "[]", "/w", params, None).waited_seconds

    assert request({"louise": {"askedAt": 1, "waitedSeconds": 300}}) == 300.0
    for hostile in (None, {"louise": {"waitedSeconds": "300"}}, {"louise": {"waitedSeconds":
                    True}}, {"louise": {"waitedSeconds": -1}}, {"louise": 3},
                    {"louise": {"waitedSeconds": 1e300}}):
        assert request(hostile) is None
    assert waited_text(None) is None
    assert waited_text(0.4) == "asked 0 s ago, while no window was attached"
    assert waited_text(42) == "asked 42 s ago, while no window was attached"
    assert waited_text(300) == "asked 5 min ago, while no window was attached"
    assert waited_text(4 * 3600) == "asked 4 h ago, while no window was attached"
    params = {"sessionId": "s", "toolCall": {"toolCallId": "t", "title": "Edit"},
              "options": [], "_meta": {"louise": {"waitedSeconds": 90}}}
    shown = describe_request(extract_request(1, "demo", "[]", "/w", params, None),
                             QueueView(1, 1))
    assert shown.splitlines()[0].endswith("── asked 2 min ago, while no window was attached")


def test_turn_ended_elsewhere_is_one_line() -> None:
    from louise.registry.host_notes import turn_ended

    assert turn_ended({"sessionId": "s", "stopReason": "end_turn"}) == (
        "s", "the turn prompted in another window ended")
    assert turn_ended({"sessionId": "s", "stopReason": "cancelled"}) == (
        "s", "the turn prompted in another window was cancelled")
    assert turn_ended({"sessionId": "s", "stopReason": "\x1b[2J"}) == (
        "s", "the turn prompted in another window ended")
    assert turn_ended({"sessionId": 3}) is None and turn_ended([]) is None
