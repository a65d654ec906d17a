"""dev.py, the plugin's build step and the demo: what each installs, where the demo keeps
its state. Runs dev.py's own functions against a scratch root (pip itself is replaced by
a recorder: installing packages is not what is under test)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_dev(root: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("louise_dev_py", ROOT / "dev.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    module.ROOT = root
    module.VENV = root / ".venv"
    module.STAMP = module.VENV / ".louise-installed"
    module.DEMO_HOME = module.VENV / "demo-home"
    return module


@pytest.fixture
def dev(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[ModuleType, list[str]]:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    module = load_dev(tmp_path)
    python = module._python()
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\n")  # an existing venv: only the install step runs
    python.chmod(0o755)  # (and the bytecode step, which this one runs as a no-op)
    installed: list[str] = []
    monkeypatch.setattr(module, "_pip_install", installed.append)
    return module, installed


def test_usage_names_every_command() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "dev.py")], capture_output=True,
                         text=True)
    assert out.returncode == 2
    for command in ("dev.py run", "dev.py test", "dev.py setup"):
        assert command in out.stdout, out.stdout


def test_setup_installs_only_the_plugin_and_test_adds_the_dev_tools(
    dev: tuple[ModuleType, list[str]],
) -> None:
    module, installed = dev
    module.ensure_venv(dev=False)
    assert installed == [str(module.ROOT)], "setup: louise alone, no dev extras"
    module.ensure_venv(dev=False)
    assert len(installed) == 1, "nothing changed: nothing installed"
    module.ensure_venv(dev=True)
    assert installed[-1] == f"{module.ROOT}[dev]", "test/run add the dev tools"
    module.ensure_venv(dev=False)
    module.ensure_venv(dev=True)
    assert len(installed) == 2, "the dev install serves setup too"
    (module.ROOT / "pyproject.toml").write_text("[project]\nname = 'y'\n")
    module.ensure_venv(dev=False)
    assert installed[-1] == str(module.ROOT), "pyproject changed: reinstalled"


def test_the_demo_keeps_its_state_in_its_scratch_home(
    dev: tuple[ModuleType, list[str]], monkeypatch: pytest.MonkeyPatch,
) -> None:
    module, _ = dev
    monkeypatch.setenv("LOUISE_STATE_DIR", "/somewhere/real")
    monkeypatch.setenv("XDG_STATE_HOME", "/home/someone/.local/state")
    env = module.demo_env()
    home = str(module.DEMO_HOME)
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME",
                 "LOUISE_STATE_DIR", "LOUISE_DEMO_STATE_DIR"):
        assert env[name].startswith(home), (name, env[name])


def test_the_demo_workspace_has_the_file_the_first_edit_changes(
        dev: tuple[ModuleType, list[str]], tmp_path: Path) -> None:
    """Issue 23 item 6: `/scenario edit` in `dev.py run` changes hello.py as it is there
    (its `oldText` is the file), it does not write a file the agent only believed in."""
    from louise.demo_agent import catalog

    module, _ = dev
    workspace = tmp_path / "workspace"
    module.seed_demo_workspace(workspace)
    assert (workspace / "hello.py").read_text() == catalog.HELLO_OLD
    assert (workspace / "README.md").exists()
    first_multi_edit = catalog.MULTI_EDIT[0]
    assert (workspace / first_multi_edit[0]).read_text() == first_multi_edit[1]
    # A person's edits are theirs: seeding again leaves them.
    (workspace / "hello.py").write_text("mine\n")
    module.seed_demo_workspace(workspace)
    assert (workspace / "hello.py").read_text() == "mine\n"


def test_setup_says_how_to_put_louise_on_path_and_links_it_on_request(
    dev: tuple[ModuleType, list[str]], monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    module, _ = dev
    command = module._bin("louise")
    command.write_text("#!/bin/sh\n")
    command.chmod(0o755)
    bin_home = tmp_path / "home" / ".local" / "bin"
    monkeypatch.setenv("XDG_BIN_HOME", str(bin_home))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert module.main(["setup"]) == 0
    out = capsys.readouterr().out
    assert f"the command line is {command}" in out and "dev.py setup --link" in out, out
    assert not bin_home.exists(), "nothing is linked unless asked"
    assert module.main(["setup", "--link"]) == 0
    out = capsys.readouterr().out
    link = bin_home / "louise"
    assert link.is_symlink() and link.resolve() == command.resolve()
    assert f'export PATH="{bin_home}:$PATH"' in out, out  # not on PATH yet: says how
    monkeypatch.setenv("PATH", f"{bin_home}:/usr/bin:/bin")
    assert module.main(["setup", "--link"]) == 0, "again: already there"
    assert "already links" in capsys.readouterr().out
    assert module.main(["setup"]) == 0
    assert "`louise` on your PATH is this one" in capsys.readouterr().out


def test_link_never_replaces_a_file_of_yours(
    dev: tuple[ModuleType, list[str]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    module, _ = dev
    bin_home = tmp_path / "bin"
    bin_home.mkdir()
    (bin_home / "louise").write_text("mine\n")
    monkeypatch.setenv("XDG_BIN_HOME", str(bin_home))
    assert module.main(["setup", "--link"]) == 1
    assert (bin_home / "louise").read_text() == "mine\n"
    assert "left as it is" in capsys.readouterr().err


def test_setup_compiles_louises_bytecode(
    dev: tuple[ModuleType, list[str]], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A person's first chat must not compile the engine's modules (seconds without
    bytecode): the build step compiles them, also when bytecode writing is off."""
    module, _ = dev
    monkeypatch.setattr(module, "_python", lambda: Path(sys.executable))
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    package = module.ROOT / "louise" / "nvim"
    package.mkdir(parents=True)
    (package / "engine.py").write_text("ENGINE = 1\n")
    assert module.main(["setup"]) == 0
    tag = sys.implementation.cache_tag
    assert (package / "__pycache__" / f"engine.{tag}.pyc").is_file()
