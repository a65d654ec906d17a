"""What the start of louise's processes imports (issue 25, items 2 and 5): modules moved off
a start path stay off it. Each check runs in a fresh interpreter (`python -P`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def imported_after(code: str, tmp_path: Path) -> set[str]:
    """The modules a fresh interpreter holds after running `code`."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), LOUISE_STATE_DIR=str(tmp_path / "state"),
               LOUISE_CONFIG=str(tmp_path / "config.toml"))
    program = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-P", "-c", program], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


def under(modules: set[str], *packages: str) -> list[str]:
    return sorted(m for m in modules
                  if any(m == p or m.startswith(p + ".") for p in packages))


@pytest.mark.parametrize("module", [
    "louise.session", "louise.acp.connection", "louise.acp.handlers", "louise.acp.jsonrpc",
    "louise.storage.transcript"])
def test_the_protocol_and_session_layers_load_no_pydantic(module: str, tmp_path: Path) -> None:
    """The SDK's schema (and pydantic with it) loads when a payload is validated, not with
    the modules that carry the wire as dicts."""
    modules = imported_after(f"import {module}", tmp_path)
    assert under(modules, "pydantic", "pydantic_core", "acp") == []


def test_the_engine_start_loads_no_sdk_schema(tmp_path: Path) -> None:
    modules = imported_after("import louise.nvim.app", tmp_path)
    assert under(modules, "acp") == []  # the SDK's generated models: on first validation


# Issue 25 item 2: what the engine's start imports only when a feature is first used.
DEFERRED_AT_THE_ENGINE_START = [
    # the checkpoint store (snapshots, git, diffs, undo, review): with a session's first
    # snapshot, in its worker thread (checkpoints/service.py)
    "louise.checkpoints.workspace", "louise.checkpoints.store",
    "louise.checkpoints.snapshots", "louise.checkpoints.git", "louise.checkpoints.diffs",
    "louise.checkpoints.undo", "louise.checkpoints.records", "louise.checkpoints.review",
    "louise.checkpoints.workspace_files",
    # an agent's elicitation: its parsing and URL checks, with its first request
    "louise.acp.elicitation", "louise.acp.urls",
    # the filter of an agent terminal's output (seven patterns): with its first terminal
    "louise.nvim.terminal_filter",
    # the ACP quota RFD's parsing (an agent advertising `quota`, a quotaExceeded, kimi's
    # figures): with the first of them (`quota_order.Freshness` is what every Agent holds)
    "louise.limits.quota",
]


def test_the_engine_start_leaves_out_what_a_first_chat_needs_later(tmp_path: Path) -> None:
    """The engine's imports as its process makes them: what a chat uses only after it is
    on screen (or a feature not every chat uses) is imported on first use."""
    modules = imported_after("from louise.nvim.process_start import load_engine\n"
                             "load_engine()", tmp_path)
    assert "louise.nvim.engine" in modules
    assert under(modules, *DEFERRED_AT_THE_ENGINE_START) == []


def test_the_engine_start_finds_its_modules_where_the_last_one_found_them(
        tmp_path: Path) -> None:
    """louise/storage/module_places.py: the second start imports its modules from the
    files the first found, without importlib's search; the same files."""
    program = "\n".join([
        "import json, sys",
        "from louise.nvim.process_start import load_engine",
        "load_engine()",
        "from louise.storage import module_places",
        "answered = module_places.install('engine').answered",  # the installed finder
        "files = {name: getattr(module, '__file__', None)",
        "         for name, module in list(sys.modules.items())}",
        "module_places.finish('engine')",  # as app.main does once the engine runs
        "print(json.dumps([answered, files]))"])
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(ROOT), LOUISE_STATE_DIR=str(tmp_path / "state"),
               LOUISE_CONFIG=str(tmp_path / "config.toml"), LOUISE_EARLY_AGENT="")
    runs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-P", "-c", program], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=120, check=True)
        runs.append(json.loads(done.stdout.splitlines()[-1]))
    (first, first_files), (second, second_files) = runs
    assert first == 0
    assert second >= 200  # ~285 of the ~350 modules (the rest: built in, or imported before)
    assert second_files == first_files


def test_the_engine_starts_dataclasses_have_their_docstrings(tmp_path: Path) -> None:
    """A dataclass without a docstring gets its signature as one, made with
    `inspect.signature` when the class is made (~60 us each, ~2 % of the engine's start
    for the 38 that had none): every louise dataclass the start makes has its own."""
    program = "\n".join([
        "import dataclasses, json, sys",
        "from louise.nvim.process_start import load_engine",
        "load_engine()",
        "print(json.dumps(sorted(f'{name}.{value.__name__}'",
        "    for name, module in list(sys.modules.items()) if name.startswith('louise')",
        "    for value in vars(module).values() if isinstance(value, type)",
        "    and value.__module__ == name and dataclasses.is_dataclass(value)",
        "    and (value.__doc__ or '').startswith(value.__name__ + '('))))"])
    env = dict(os.environ, PYTHONPATH=str(ROOT), LOUISE_STATE_DIR=str(tmp_path / "state"))
    done = subprocess.run([sys.executable, "-P", "-c", program], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(done.stdout.splitlines()[-1]) == []


def test_the_engine_start_compiles_only_the_configurations_patterns(tmp_path: Path) -> None:
    """Issue 25 item 2: louise's own regular expressions for what a first chat may never
    meet (unreadable lines, quotas of the ACP RFD, terminal methods and output, diff hunks)
    are compiled on first use, not at the engine's start."""
    program = "\n".join([
        "import re, re._compiler, sys",
        "compiled = []",
        "def caller(frame):",  # the first frame outside `re`: who asked for the pattern
        "    while frame is not None and frame.f_globals.get('__name__', '').split('.')[0]"
        " == 're':",
        "        frame = frame.f_back",
        "    return '' if frame is None else frame.f_globals.get('__name__', '')",
        "sys.setprofile(lambda frame, event, arg: compiled.append(caller(frame))"
        " if event == 'call' and frame.f_code is re._compiler.compile.__code__ else None)",
        "from louise.nvim.process_start import load_engine",
        "load_engine()",
        "sys.setprofile(None)",
        "print(' '.join(sorted(set(compiled))))"])
    env = dict(os.environ, PYTHONPATH=str(ROOT), LOUISE_STATE_DIR=str(tmp_path / "state"))
    done = subprocess.run([sys.executable, "-P", "-c", program], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=True)
    callers = done.stdout.split()
    assert "logging" in callers  # the standard library's own patterns are seen
    assert [name for name in callers if name.startswith("louise.")
            and not name.startswith("louise.config.")] == []


def test_a_sessions_first_snapshot_imports_the_store_in_a_worker_thread(
        tmp_path: Path) -> None:
    """The checkpoint service made without its store's modules takes a session's first
    snapshot as before: the modules are imported then, in the worker thread, not on the
    event loop that shows the chat."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("a\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT), LOUISE_STATE_DIR=str(tmp_path / "state"))
    program = "\n".join([
        "import sys, threading, anyio",
        "from pathlib import Path",
        "from louise.checkpoints.service import Checkpoints",
        "from louise.config.checkpoints import CheckpointsConfig",
        "where = []",
        "sys.addaudithook(lambda event, args: where.append(threading.current_thread().name)"
        " if event == 'import' and args[0] == 'louise.checkpoints.workspace' else None)",
        "before = 'louise.checkpoints.workspace' in sys.modules",
        "async def main():",
        f"    service = Checkpoints(CheckpointsConfig(), Path({str(tmp_path / 'cp')!r}))",
        "    async with anyio.create_task_group() as tg:",
        "        service.bind(tg)",
        f"        service.session_opened('s1', {str(work)!r})",
        "        await service.idle()",
        f"    return service.workspace({str(work)!r}).store.last is not None",
        "print(before, anyio.run(main), where == [] or where[0] != 'MainThread')"])
    done = subprocess.run([sys.executable, "-P", "-c", program], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["False", "True", "True"], done.stderr


def test_louise_inspect_imports_only_what_it_prints(tmp_path: Path) -> None:
    code = ("import io, contextlib, sys\n"
            "from louise.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    sys.argv = ['louise', 'inspect']\n"
            "    assert main(['inspect']) == 0")
    modules = imported_after(code, tmp_path)
    assert under(modules, "pydantic", "pydantic_core", "acp", "asyncio", "anyio",
                 "louise.config", "louise.registry", "louise.session", "louise.acp",
                 "louise.checkpoints", "louise.limits.sources", "tomllib") == []
    # issue 25 item 5: its usual command lines are read without a parser
    assert under(modules, "argparse", "gettext", "locale") == []
    # nor platformdirs (with tempfile, shutil and random) for its state and config paths
    assert under(modules, "platformdirs", "tempfile", "shutil", "random") == []
    # nor typing: its modules import typing's names for the type checker only
    assert under(modules, "typing") == []
    # nor pathlib (with urllib.parse, ipaddress, fnmatch, ntpath): it names its files as
    # strings (`paths.state_dir_name`, `LimitsCache`, `CacheView.file`)
    assert under(modules, "pathlib", "urllib", "ipaddress", "fnmatch", "ntpath") == []
    # nor the governor's and the shared records' dataclasses: the cache has no records
    assert under(modules, "louise.limits.governor", "louise.storage.limits_shared") == []
    # nor a snapshot's (six dataclasses): without a cache file there is none to read
    assert under(modules, "louise.limits.snapshot") == []
    # nor what writes the state (durable, with contextlib and fcntl: the test itself
    # imports contextlib) nor threading
    assert under(modules, "louise.storage.durable", "fcntl", "threading") == []


def test_louise_inspect_reads_a_plain_config_without_tomllib(tmp_path: Path) -> None:
    """Issue 25 item 5: the Agents of a plain config.toml are listed without tomllib
    (with typing, datetime and its regular expressions), and listed."""
    (tmp_path / "config.toml").write_text(
        '[agents.claude]\ncommand = "claude-agent-acp"  # via the proxy: see README\n\n'
        '[agents.gemini]\ncommand = "gemini"\nargs = ["--experimental-acp"]\n'
        '[limits.budgets]\n"~/work/x" = { "5h" = 50 }\n')
    code = ("import io, contextlib, json, sys\n"
            "from louise.cli.main import main\n"
            "printed = io.StringIO()\n"
            "with contextlib.redirect_stdout(printed):\n"
            "    assert main(['inspect', '--json']) == 0\n"
            "assert [agent['agent'] for agent in json.loads(printed.getvalue())['agents']]"
            " == ['claude', 'gemini', 'demo'], printed.getvalue()")
    modules = imported_after(code, tmp_path)
    assert under(modules, "tomllib", "typing", "datetime", "louise.config") == []


def test_louise_inspect_as_the_program_loads_no_inspect_module(tmp_path: Path) -> None:
    """`dataclasses` gets `inspect` (and ast, dis, tokenize) only when it uses it: never
    for louise's dataclasses, which have their docstrings (issue 25 item 5)."""
    code = ("import io, contextlib, sys\n"
            "sys.argv = ['louise', 'inspect']\n"
            "from louise.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    assert main() == 0")
    modules = imported_after(code, tmp_path)
    assert "dataclasses" in modules
    assert under(modules, "inspect", "ast", "dis", "tokenize", "hashlib") == []


def test_a_dataclass_made_after_inspect_gets_its_signature_as_its_doc(
        tmp_path: Path) -> None:
    """What `dataclasses` does with `inspect` still happens when it is needed, and
    `import inspect` gives the real module."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), LOUISE_STATE_DIR=str(tmp_path / "state"),
               LOUISE_CONFIG=str(tmp_path / "config.toml"))
    program = "\n".join([
        "import io, contextlib, sys",
        "sys.argv = ['louise', 'inspect']",
        "from louise.cli.main import main",
        "with contextlib.redirect_stdout(io.StringIO()):",
        "    assert main() == 0",
        "import dataclasses",
        "@dataclasses.dataclass",
        "class Point:",
        "    x: int",
        "    y: str = 'a'",
        "import inspect",
        "print(Point.__doc__)",
        "print(inspect.signature(Point), inspect.__name__, hasattr(inspect, 'getsource'))",
        "print(dataclasses.inspect is inspect)"])
    done = subprocess.run([sys.executable, "-P", "-c", program], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.splitlines() == [
        "Point(x: int, y: str = 'a')", "(x: int, y: str = 'a') -> None inspect True", "True"]


def test_configuration_models_build_their_validators_on_first_use(tmp_path: Path) -> None:
    """Made when validation first imports them, built when they first validate; a
    remembered rule is checked by hand (no pydantic)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), LOUISE_STATE_DIR=str(tmp_path / "state"))
    program = "\n".join([
        "import json, sys",
        "from louise.config.loading import load_config_mapping",
        "from louise.permissions.rules import RememberedRule",
        "before = 'pydantic' in sys.modules",
        "from louise.config.schema.model import Config",
        "complete = Config.__pydantic_complete__",
        "config = load_config_mapping({'fs': {'read': False}})",
        "print(json.dumps([before, complete, Config.__pydantic_complete__]))"])
    done = subprocess.run([sys.executable, "-P", "-c", program], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(done.stdout.splitlines()[-1]) == [False, False, True]


def test_louise_inspect_reads_the_engines_compiled_methods_and_writes_none(
        tmp_path: Path) -> None:
    """Issue 25 item 5: the limits dataclasses `louise inspect` makes come compiled from
    the engine's code cache (made here as the engine's start makes it); inspect, a
    read-only verb, compiles none of them again and writes no cache of its own."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), LOUISE_STATE_DIR=str(tmp_path / "state"),
               LOUISE_CONFIG=str(tmp_path / "config.toml"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # the cache follows the bytecode setting
    engine = "\n".join([
        "from louise.storage import code_cache",
        "code_cache.install('engine')",
        "import louise.cli.commands._common, louise.cli.terminal_text",
        "import louise.limits, louise.storage.limits_cache",
        "assert code_cache.finish('engine')"])
    subprocess.run([sys.executable, "-P", "-c", engine], env=env, cwd=tmp_path,
                   timeout=120, check=True)
    cache_dir = tmp_path / "state" / "code-cache"
    kept = {path.name: path.read_bytes() for path in cache_dir.iterdir()}
    inspect = "\n".join([
        "import sys",
        "compiled = []",
        "sys.addaudithook(lambda event, args: compiled.append(args[0]) if event == 'compile'"
        " and '__create_fn__' in str(args[0]) else None)",  # a dataclass's method text
        "sys.argv = ['louise', 'inspect']",
        "from louise.cli.main import main",
        "code = main()",
        "print(len(compiled), code, file=sys.stderr)"])
    done = subprocess.run([sys.executable, "-P", "-c", inspect], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=True)
    assert done.stderr.split() == ["0", "0"]  # no method compiled; exit status 0
    assert "No account limits have been observed yet" in done.stdout
    assert {path.name: path.read_bytes() for path in cache_dir.iterdir()} == kept


def test_the_engine_process_loads_no_openssl(tmp_path: Path) -> None:
    """Issue 25 items 2 and 5: `python -m louise.nvim` imports asyncio with `ssl` loaded on
    first use (louise/storage/first_use.py), and nothing on its start uses it: neither
    `ssl` nor OpenSSL's `_ssl` is imported, from its first import to its exit (here:
    Neovim's channel, its stdin, closes at once); nor is hashlib's `_hashlib`."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), LOUISE_STATE_DIR=str(tmp_path / "state"),
               LOUISE_CONFIG=str(tmp_path / "config.toml"))
    done = subprocess.run([sys.executable, "-P", "-X", "importtime", "-m", "louise.nvim"],
                          env=env, cwd=tmp_path, stdin=subprocess.PIPE,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          timeout=120)
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:")}
    assert done.returncode == 0, done.stderr
    assert {"asyncio", "louise.nvim.engine", "anyio._backends._asyncio"} <= imported
    assert sorted(imported & {"ssl", "_ssl"}) == []
    # nor pynvim (with greenlet, pathlib, urllib): the job's stdio is louise's own
    # msgpack-RPC (louise/nvim/stdio.py); pynvim is the remote-plugin host's alone
    assert sorted(m for m in imported if m.split(".")[0] in {"pynvim", "greenlet"}) == []
    # nor hashlib's OpenSSL (libcrypto, ~4 MiB): pydantic's `secrets` (with hmac and
    # hashlib) is deferred, louise's own short digests use Python's sha256
    assert sorted(imported & {"secrets", "hmac", "hashlib", "_hashlib"}) == []


def test_the_engine_start_to_its_configuration_loads_no_openssl_nor_metadata(
        tmp_path: Path) -> None:
    """The engine's imports as its process makes them (`process_start.load_engine`), its
    loop, and its configuration validated (the README's setup{}): no ssl, no hashlib's
    OpenSSL, and no importlib.metadata (pydantic's plugin loader, with email, zipfile,
    csv, …) when no pydantic plugin is installed."""
    modules = imported_after("\n".join([
        "from louise.nvim.process_start import load_engine",
        "load_engine()",
        "import anyio",
        "from louise.nvim.engine_options import engine_config",
        "config = engine_config({'agents': {'fast': {'command': 'true'}},",
        "                        'default_agent': 'fast', 'permissions': {'rules': [",
        "                        {'kind': ['read', 'search'], 'decision': 'allow'}]}})",
        "assert config.default_agent == 'fast'",
        "from louise.nvim.engine_options import default_agent_named",
        "assert default_agent_named({'default_agent': 'fast'})",
        "anyio.run(anyio.sleep, 0)"]), tmp_path)
    assert {"asyncio", "anyio._backends._asyncio", "louise.nvim.engine"} <= modules
    assert under(modules, "ssl", "_ssl", "secrets", "hmac", "hashlib", "_hashlib") == []
    assert under(modules, "importlib.metadata", "email", "zipfile", "csv") == []
    # nor tomllib: given setup{}'s options, the engine reads no config.toml
    assert under(modules, "tomllib") == []


@pytest.mark.parametrize("argv", [
    ["chat", "--agent", "demo", "hello"],
    ["serve", "--idle-exit", "0.1", "--socket", "host.sock"]])
def test_the_cli_event_loop_verbs_never_load_ssl(argv: list[str], tmp_path: Path) -> None:
    """`louise chat` (a turn with the demo agent) and `louise serve` (the session host, until
    it is idle) as the program: asyncio and anyio without ssl, pydantic without secrets
    (hashlib's OpenSSL) nor its plugin loader (louise/storage/first_use.py)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), LOUISE_STATE_DIR=str(tmp_path / "state"),
               LOUISE_CONFIG=str(tmp_path / "config.toml"),
               LOUISE_DEMO_STATE_DIR=str(tmp_path / "demo"))
    program = "\n".join([
        "import json, sys",
        f"sys.argv = ['louise', *{argv!r}]",
        "from louise.cli.main import main",
        "code = main()",
        "print(json.dumps([code, sorted(sys.modules)]), file=sys.stderr)"])
    done = subprocess.run([sys.executable, "-P", "-c", program], env=env, cwd=tmp_path,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=120)
    code, modules = json.loads(done.stderr.splitlines()[-1])
    assert code == 0, done.stderr
    assert {"asyncio", "anyio._backends._asyncio", "pydantic"} <= set(modules)
    assert under(set(modules), "ssl", "_ssl", "secrets", "_hashlib") == []
    assert under(set(modules), "importlib.metadata", "email", "zipfile") == []


def test_the_demo_agent_never_loads_ssl(tmp_path: Path) -> None:
    """The bundled agent a first chat starts speaks on stdio: asyncio without ssl (~4 MiB
    of its ~22), from its first import to its exit (here: its stdin closes at once)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), LOUISE_STATE_DIR=str(tmp_path / "state"),
               LOUISE_DEMO_STATE_DIR=str(tmp_path / "demo"))
    done = subprocess.run([sys.executable, "-P", "-X", "importtime", "-m", "louise.demo_agent"],
                          env=env, cwd=tmp_path, stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          timeout=120)
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:")}
    assert done.returncode == 0, done.stderr
    assert {"asyncio", "louise.demo_agent.entry"} <= imported
    assert sorted(imported & {"ssl", "_ssl", "anyio"}) == []


ENGINE_START = "\n".join([
    "from louise.nvim.process_start import load_engine",
    "load_engine()",
    "from louise.nvim.engine_options import default_agent_named, engine_config",
    "opts = {'agents': {'fast': {'command': 'true'}}, 'host': {'mode': 'auto', 'via': None},",
    "        'permissions': {'rules': [{'kind': ['read'], 'decision': 'allow'}]}}",
    "config = engine_config(opts)",
    "assert config.default_agent == 'fast' and config.host.enabled",
    "default_agent_named(opts)",
    "from louise.permissions.rules import PermissionMemory",
    "PermissionMemory().list()"])


@pytest.mark.parametrize("config_toml", [None, '[agents.x]\ncommand = "x-acp"\n'],
                         ids=["setup", "config.toml"])
def test_the_engine_start_with_a_cached_configuration_imports_no_pydantic(
        config_toml: str | None, tmp_path: Path) -> None:
    """Issue 25 items 2 and 5: the engine's first start validates its configuration (and
    keeps the result, louise/config/cached.py); the next start with the same options
    imports no pydantic at all, nor reading remembered permission choices."""
    program = ENGINE_START
    if config_toml is not None:
        (tmp_path / "config.toml").write_text(config_toml)
        program = program.replace("engine_config(opts)", "engine_config({})").replace(
            "config.default_agent == 'fast' and config.host.enabled",
            "config.default_agent == 'x'")
    first = imported_after(program, tmp_path)
    assert "pydantic" in first  # validated: nothing kept yet
    assert (tmp_path / "state" / "config-cache.json").is_file()
    again = imported_after(program, tmp_path)
    assert {"louise.nvim.engine", "louise.permissions.rules"} <= again
    assert under(again, "pydantic", "pydantic_core", "louise.config.schema") == []


def test_louise_chat_with_a_cached_configuration_imports_no_pydantic(tmp_path: Path) -> None:
    """`louise chat` as the program, a whole turn with the demo agent: the second run's
    configuration comes from the validated-configuration cache, without pydantic."""
    (tmp_path / "config.toml").write_text('[agents.other]\ncommand = "other-acp"\n')
    env = dict(os.environ, PYTHONPATH=str(ROOT), LOUISE_STATE_DIR=str(tmp_path / "state"),
               LOUISE_CONFIG=str(tmp_path / "config.toml"),
               LOUISE_DEMO_STATE_DIR=str(tmp_path / "demo"))
    program = "\n".join([
        "import json, sys",
        "sys.argv = ['louise', 'chat', '--agent', 'demo', 'hello']",
        "from louise.cli.main import main",
        "code = main()",
        "print(json.dumps([code, sorted(sys.modules)]), file=sys.stderr)"])
    runs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-P", "-c", program], env=env, cwd=tmp_path,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=120)
        code, modules = json.loads(done.stderr.splitlines()[-1])
        assert code == 0, done.stderr
        runs.append(set(modules))
    assert "pydantic" in runs[0]
    assert {"louise.cli.commands.chat", "louise.registry"} <= runs[1]
    assert under(runs[1], "pydantic", "pydantic_core", "louise.config.schema") == []
