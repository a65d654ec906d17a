"""Where louise keeps its files: user config and state directories (platformdirs).

`LOUISE_CONFIG` points at a config file, `LOUISE_STATE_DIR` at a state directory;
both exist so that tests, a second Neovim and `louise inspect` can be isolated.
"""

from __future__ import annotations

import _thread
import os
import sys

# `durable` (with contextlib and fcntl) and threading are imported where the state directory
# is made: `louise inspect` only names it.
TYPE_CHECKING = False  # typing's, without importing typing (louise inspect's start)
if TYPE_CHECKING:
    from pathlib import Path

APP_NAME = "louise"

# What louise keeps in its state directory: files at the top (with their lock, backup
# and temporary siblings) and directories of files. Only these are made private on
# start: the directory may be shared with something else by mistake ($LOUISE_STATE_DIR).
STATE_FILES = ("limits.json", "permissions.json", "remembered.json", "config-cache.json")
TRANSCRIPTS_DIR = "transcripts"
STATE_SUBDIRS = (TRANSCRIPTS_DIR, "logs", "demo-agent")
MAX_FIXED_ENTRIES = 100_000  # bounds the fix-up of a huge directory

_made_private: set[Path] = set()
_made_private_lock = _thread.allocate_lock()  # threading.Lock, without threading


def state_dir() -> Path:
    """The user state directory (not created here)."""
    from pathlib import Path

    return Path(state_dir_name())


def state_dir_name() -> str:
    """`str(state_dir())`, without pathlib in the plain cases (`louise inspect`'s start:
    pathlib brings urllib.parse, ipaddress, fnmatch and ntpath, ~5 ms)."""
    override = os.environ.get("LOUISE_STATE_DIR")
    if override:
        return path_name(override, expand_user=True)
    fast = _xdg_dir("XDG_STATE_HOME", "~/.local/state")
    if fast is not None:
        return path_name(fast)
    import platformdirs

    return path_name(platformdirs.user_state_dir(APP_NAME))


def config_file() -> Path:
    """The config file path (it may not exist)."""
    from pathlib import Path

    return Path(config_file_name())


def config_file_name() -> str:
    """`str(config_file())`, without pathlib in the plain cases (see `state_dir_name`)."""
    override = os.environ.get("LOUISE_CONFIG")
    if override:
        return path_name(override, expand_user=True)
    fast = _xdg_dir("XDG_CONFIG_HOME", "~/.config")
    if fast is None:
        import platformdirs

        fast = platformdirs.user_config_dir(APP_NAME)
    return path_name(os.path.join(fast, "config.toml"))


def path_name(name: str, *, expand_user: bool = False) -> str:
    """`str(Path(name))` (`str(Path(name).expanduser())` with `expand_user`): `name`
    itself when it is already written as pathlib writes it (absolute, no empty or `.`
    part, no trailing separator), else pathlib's own answer."""
    if (os.sep == "/" and name.startswith("/") and not name.startswith("//")
            and "//" not in name and "/./" not in name and not name.endswith(("/", "/."))):
        return name
    from pathlib import Path

    path = Path(name)
    return str(path.expanduser() if expand_user else path)


def _xdg_dir(variable: str, default: str) -> str | None:
    """louise's directory under an XDG base directory, as platformdirs names it on Linux,
    in the plain cases (the variable an absolute path, or unset with an absolute HOME);
    None otherwise (platformdirs then decides). Importing platformdirs (and tempfile,
    shutil, random behind it) was a tenth of `louise inspect` (issue 25 item 5)."""
    if sys.platform != "linux" or "ANDROID_DATA" in os.environ:
        return None
    base = os.environ.get(variable, "")
    if not base:
        if not os.environ.get("HOME", "").startswith("/"):
            return None
        base = os.path.expanduser(default)
    elif not base.startswith("/"):
        return None
    return os.path.join(base, APP_NAME)


def private_state_dir(*parts: str) -> Path:
    """The state directory, or a directory under it (`private_state_dir("transcripts")`),
    created private (0700) when missing. The first call in a process for a state
    directory also makes private what louise wrote there before (0600 files, 0700
    directories: an older louise left them world-readable) and creates `transcripts/`.
    Raises `OSError` when the directory cannot be created."""
    from louise.storage import durable

    root = state_dir()
    durable.ensure_private_dir(root)
    with _made_private_lock:
        first = root not in _made_private
        _made_private.add(root)
    if first:
        _fix_existing(root)
        # Made here, private, before anything creates it with the usual modes.
        durable.ensure_private_dir(root / TRANSCRIPTS_DIR)
    directory = root
    for part in parts:
        directory = durable.ensure_private_dir(directory / part)
    return directory


def _fix_existing(root: Path) -> None:
    """Tighten louise's own files under `root` (see STATE_FILES, STATE_SUBDIRS)."""
    import contextlib
    from pathlib import Path

    from louise.storage import durable

    budget = MAX_FIXED_ENTRIES

    def entries(directory: Path) -> list[os.DirEntry[str]]:
        nonlocal budget
        found: list[os.DirEntry[str]] = []
        with contextlib.suppress(OSError), os.scandir(directory) as listing:
            for entry in listing:
                if budget <= 0:
                    break
                budget -= 1
                found.append(entry)
        return found

    for entry in entries(root):
        name = entry.name.lstrip(".")
        if entry.name in STATE_SUBDIRS:
            with contextlib.suppress(OSError):
                if not entry.is_dir(follow_symlinks=False):
                    continue
            durable.make_private(entry.path, directory=True)
            for inner in entries(Path(entry.path)):
                durable.make_private(inner.path, directory=False)
        elif any(name.startswith(known) for known in STATE_FILES):
            durable.make_private(entry.path, directory=False)
