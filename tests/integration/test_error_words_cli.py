"""Issue 23 item 9 through `louise chat`: a failure whose cause louise knows comes with
louise's own hint, and no JSON-RPC jargon reaches the person."""

from __future__ import annotations

from pathlib import Path

from tests.integration.cli_helpers import environment, louise

AS_ROOT = ("--dangerously-skip-permissions cannot be used with root/sudo privileges for "
           "security reasons")


def agent_env(tmp_path: Path, script: str) -> dict[str, str]:
    config = tmp_path / "config.toml"
    config.write_text("default_agent = 'claude'\n[agents.claude]\ncommand = 'sh'\n"
                      f"args = ['-c', {script!r}]\n")
    return environment(config)


def test_claude_as_root_is_told_how_to_run(tmp_path: Path) -> None:
    env = agent_env(tmp_path, f"echo 'Error: {AS_ROOT}' >&2; exit 1")
    result = louise("chat", "--cwd", str(tmp_path), "hello", env=env)
    assert result.returncode == 1, result.stderr
    first = result.stderr.splitlines()[0]
    assert first.startswith("louise: "), result.stderr
    assert 'set env = { IS_SANDBOX = "1" } for this agent' in first, result.stderr
    assert "Traceback" not in result.stderr and "JSON-RPC" not in result.stderr
