"""`python -m louise.nvim.health --json`: what `:checkhealth louise` needs from the Python
side, as one JSON object on stdout.

Reads `{"opts": <the engine part of setup{}>}` on stdin. Reports the interpreter, the
louise package, whether the Neovim side can be imported (pynvim), the configuration as
the engine will load it (every problem with its field path), each agent's command as the
engine will spawn it, the state directory and the limits cache. Starts nothing: no
engine, no agent; only a temporary file is created in the state directory (and removed)
to see that it is writable.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import tempfile
from typing import Any

import louise


def interpreter() -> dict[str, Any]:
    return {"version": ".".join(str(part) for part in sys.version_info[:3]),
            "executable": sys.executable,
            "louise": louise.__version__,
            "louise_file": louise.__file__}


def configuration(opts: dict[str, Any], out: dict[str, Any]) -> None:
    from louise.acp.install_hints import install_hint
    from louise.config.agents import demo_agent_config, resolve_command
    from louise.config.problems import ConfigError
    from louise.nvim.engine_options import ENGINE_KEYS, engine_config
    from louise.storage import paths

    chosen = [k for k in opts if k in ENGINE_KEYS]
    config_file = paths.config_file()
    problems: list[dict[str, str]] = []
    out["config"] = {
        "from_setup": bool(chosen),
        "file": str(config_file),
        "file_exists": config_file.is_file(),
        "engine_keys": list(ENGINE_KEYS),
        "problems": problems,
    }
    try:
        config = engine_config(opts, keep=False)  # it looks: no file written, no dir made
    except ConfigError as exc:
        for problem in exc.problems:
            text = dataclasses.replace(problem, hint="").render(exc.source)
            problems.append({"text": text, "hint": problem.hint})
        return
    source = "setup{}" if chosen else str(config_file)
    out["config"]["warnings"] = [
        {"text": dataclasses.replace(warning, hint="").render(source), "hint": warning.hint}
        for warning in config.warnings]
    demo = demo_agent_config().argv
    out["agents"] = [
        {"name": name, "command": agent.command, "resolved": resolve_command(agent),
         "builtin": agent.argv == demo, "default": name == config.default_agent,
         "install": (hint.text() if (hint := install_hint(agent.command)) else None)}
        for name, agent in config.agents.items()
    ]


def state() -> dict[str, Any]:
    from louise.storage import paths

    directory = paths.state_dir()
    out: dict[str, Any] = {"path": str(directory), "exists": directory.is_dir()}
    try:
        if directory.is_dir():
            fd, name = tempfile.mkstemp(prefix=".louise-health-", dir=directory)
            os.close(fd)
            os.unlink(name)
            out["writable"] = True
        else:
            parent = directory
            while not parent.exists() and parent.parent != parent:
                parent = parent.parent
            out["parent"] = str(parent)
            out["writable"] = parent.is_dir() and os.access(parent, os.W_OK | os.X_OK)
    except OSError as exc:
        out["writable"] = False
        out["error"] = exc.strerror or str(exc)
    return out


def limits_cache() -> dict[str, Any]:
    try:
        from louise.storage.limits_cache import LimitsCache

        view = LimitsCache(read_only=True).load()  # checking changes nothing
        return {"path": str(view.path), "status": view.file_status,
                "warnings": list(view.warnings), "agents": list(view.agents)}
    except Exception as exc:  # reported as a warning, never a traceback
        return {"status": "error", "warnings": [f"{type(exc).__name__}: {exc}"]}


def report(raw_input: str) -> dict[str, Any]:
    out: dict[str, Any] = {"python": interpreter()}
    try:
        loaded = json.loads(raw_input or "{}")
    except ValueError:
        loaded = {}
    raw = loaded.get("opts") if isinstance(loaded, dict) else None
    opts = raw if isinstance(raw, dict) else {}  # an empty Lua table arrives as []
    try:
        import pynvim

        out["pynvim"] = str(pynvim.__version__)
        import louise.nvim.engine  # noqa: F401  (the Neovim side imports)
    except Exception as exc:
        out["engine_error"] = f"{type(exc).__name__}: {exc}"
        return out
    configuration(opts, out)
    out["state"] = state()
    out["cache"] = limits_cache()
    return out


def main(argv: list[str]) -> int:
    if argv != ["--json"]:
        print("usage: python -m louise.nvim.health --json  (reads {\"opts\": …} on stdin)",
              file=sys.stderr)
        return 2
    print(json.dumps(report(sys.stdin.read())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
