"""louise's config and state directories are where platformdirs puts them, whether they
are named by hand (the plain Linux cases, without importing platformdirs: issue 25 item 5)
or by platformdirs itself."""

from __future__ import annotations

from pathlib import Path

import platformdirs
import pytest

from louise.storage import paths

CASES = [
    {"XDG_STATE_HOME": "/x/state", "XDG_CONFIG_HOME": "/x/config", "HOME": "/home/u"},
    {"XDG_STATE_HOME": "/x/state/", "XDG_CONFIG_HOME": "//x//config", "HOME": "/home/u"},
    {"HOME": "/home/u"},
    {"HOME": "/home/u/"},
    {"HOME": "/"},
    {"XDG_STATE_HOME": "", "XDG_CONFIG_HOME": "", "HOME": "/home/u"},
    {"XDG_STATE_HOME": "relative/state", "XDG_CONFIG_HOME": "rel", "HOME": "/home/u"},
    {"XDG_STATE_HOME": " ", "XDG_CONFIG_HOME": "~/c", "HOME": "/home/u"},
]


@pytest.mark.parametrize("env", CASES)
def test_the_directories_are_platformdirs_own(env: dict[str, str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LOUISE_STATE_DIR", "LOUISE_CONFIG", "XDG_STATE_HOME", "XDG_CONFIG_HOME",
                 "HOME", "ANDROID_DATA"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    expected_state = expected_config = None
    try:
        expected_state = Path(platformdirs.user_state_dir("louise"))
        expected_config = Path(platformdirs.user_config_dir("louise")) / "config.toml"
    except RuntimeError:  # a newer platformdirs refuses a home it cannot resolve
        pass
    if expected_state is not None:
        assert paths.state_dir() == expected_state
        assert str(paths.state_dir()) == str(expected_state)
    if expected_config is not None:
        assert str(paths.config_file()) == str(expected_config)


def test_the_plain_cases_are_named_without_platformdirs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.delenv("LOUISE_STATE_DIR", raising=False)
    monkeypatch.delenv("LOUISE_CONFIG", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", "/x/state")
    monkeypatch.setenv("XDG_CONFIG_HOME", "/x/config")
    monkeypatch.setitem(sys.modules, "platformdirs", None)  # importing it fails
    assert str(paths.state_dir()) == "/x/state/louise"  # louise runs on Linux
    assert str(paths.config_file()) == "/x/config/louise/config.toml"


NAMES = ["/x/state", "/x//state", "//x/state", "///x", "/x/./y", "/x/.", "/x/", "/",
         "/x/../y", "/x/..", "x", "x/", "./x", ".", "", "~", "~/x", "~/x/", "/~/x", "/x/.y",
         "/x/y.", "/x/...", "/ x/ y ", "/x/\u00e9t\u00e9", "x//y", "/x/y/./"]


@pytest.mark.parametrize("name", NAMES)
def test_a_path_name_is_pathlib_own(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`path_name` is `str(Path(name))` (with its `expanduser()`), the plain absolute names
    without importing pathlib (louise inspect's start, issue 25 item 5)."""
    monkeypatch.setenv("HOME", "/home/u")
    assert paths.path_name(name) == str(Path(name))
    assert paths.path_name(name, expand_user=True) == str(Path(name).expanduser())


@pytest.mark.parametrize("env", CASES)
def test_the_names_are_the_paths_own(env: dict[str, str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LOUISE_STATE_DIR", "LOUISE_CONFIG", "XDG_STATE_HOME", "XDG_CONFIG_HOME",
                 "HOME", "ANDROID_DATA"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    try:
        expected_state, expected_config = str(paths.state_dir()), str(paths.config_file())
    except RuntimeError:  # a newer platformdirs refuses a home it cannot resolve
        return
    assert paths.state_dir_name() == expected_state
    assert paths.config_file_name() == expected_config


@pytest.mark.parametrize("name", NAMES)
def test_the_overrides_are_named_as_pathlib_names_them(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if not name:
        return  # an empty override is no override
    monkeypatch.setenv("HOME", "/home/u")
    monkeypatch.setenv("LOUISE_STATE_DIR", name)
    monkeypatch.setenv("LOUISE_CONFIG", name)
    assert paths.state_dir_name() == str(Path(name).expanduser()) == str(paths.state_dir())
    assert paths.config_file_name() == str(Path(name).expanduser()) == str(paths.config_file())
