"""Where a program's modules were found, kept between runs (louise/storage/module_places.py):
the second start imports the same modules from the same files without searching, and
anything that could change what a search finds (a module added before it on the path, a
source edited, a file that is not safe) is found as always."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = r"""
import json, sys
from louise.storage import module_places
finder = module_places.install("test")
import top, kp.a, cmath
modules = [top, kp, kp.a, cmath]
out = {"answered": finder.answered, "values": [top.VALUE, kp.a.VALUE, cmath.sqrt(4).real],
       "loaders": [type(m.__spec__.loader).__name__ for m in modules],
       "files": [m.__file__ for m in modules],
       "cached": [getattr(m, "__cached__", None) for m in modules],
       "package": kp.__path__, "meta_path": finder in sys.meta_path}
out["written"] = module_places.finish("test")
out["removed"] = finder not in sys.meta_path
print(json.dumps(out))
"""


def layout(tmp_path: Path) -> tuple[Path, Path]:
    """Two directories on the path: `top` and the package `kp` in the second."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    (second / "kp").mkdir(parents=True)
    (second / "top.py").write_text("VALUE = 'second'\n")
    (second / "kp" / "__init__.py").write_text("")
    (second / "kp" / "a.py").write_text("VALUE = 1\n")
    return first, second


def run(tmp_path: Path, first: Path, second: Path, *,
        write_bytecode: bool = True) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if not write_bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(LOUISE_STATE_DIR=str(tmp_path / "state"),
               PYTHONPATH=os.pathsep.join([str(ROOT), str(first), str(second)]))
    done = subprocess.run([sys.executable, "-P", "-c", PROGRAM], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def kept_file(tmp_path: Path) -> Path:
    return tmp_path / "state" / "code-cache" / f"modules.test.{sys.implementation.cache_tag}"


def test_the_second_start_finds_its_modules_without_a_search(tmp_path: Path) -> None:
    first, second = layout(tmp_path)
    searched = run(tmp_path, first, second)
    assert searched["answered"] == 0 and searched["written"] is True
    assert searched["meta_path"] is True and searched["removed"] is True
    assert searched["loaders"] == ["SourceFileLoader"] * 3 + ["ExtensionFileLoader"]
    kept = run(tmp_path, first, second)
    assert kept["answered"] == 4
    assert kept["loaders"] == ["KeptLoader"] * 3 + ["ExtensionFileLoader"]
    # the same modules as the search finds: files, bytecode, package path, values
    for key in ("files", "cached", "package", "values"):
        assert kept[key] == searched[key], key
    assert kept["written"] is False  # nothing new: the file is left as it is
    assert run(tmp_path, first, second)["answered"] == 4


def test_a_module_added_before_a_kept_one_on_the_path_is_the_one_imported(
        tmp_path: Path) -> None:
    first, second = layout(tmp_path)
    run(tmp_path, first, second)
    (first / "top.py").write_text("VALUE = 'first'\n")
    shadowed = run(tmp_path, first, second)
    assert shadowed["values"] == ["first", 1, 2.0]
    # `top`, `kp` and `cmath` are searched for (a directory before theirs changed), `kp.a`
    # is not (its package's directory did not change)
    assert shadowed["answered"] == 1
    assert shadowed["written"] is True  # where `top` is now is kept
    assert run(tmp_path, first, second)["answered"] == 4


def test_an_edited_source_is_compiled_again(tmp_path: Path) -> None:
    first, second = layout(tmp_path)
    run(tmp_path, first, second)
    (second / "kp" / "a.py").write_text("VALUE = 22\n")  # same directory, new size
    edited = run(tmp_path, first, second)
    assert edited["answered"] == 4 and edited["values"] == ["second", 22, 2.0]
    assert run(tmp_path, first, second)["values"] == ["second", 22, 2.0]


def test_a_package_replacing_a_module_is_found(tmp_path: Path) -> None:
    """A name's file replaced by a package of that name: its directory changed."""
    first, second = layout(tmp_path)
    run(tmp_path, first, second)
    (second / "top.py").unlink()
    (second / "top").mkdir()
    (second / "top" / "__init__.py").write_text("VALUE = 'package'\n")
    assert run(tmp_path, first, second)["values"] == ["package", 1, 2.0]


def test_a_file_others_can_write_is_ignored(tmp_path: Path) -> None:
    first, second = layout(tmp_path)
    run(tmp_path, first, second)
    kept_file(tmp_path).chmod(0o666)
    ignored = run(tmp_path, first, second)
    assert ignored["answered"] == 0 and ignored["values"] == ["second", 1, 2.0]


def test_a_file_of_another_format_is_ignored(tmp_path: Path) -> None:
    first, second = layout(tmp_path)
    run(tmp_path, first, second)
    kept_file(tmp_path).write_bytes(b"\x00not marshal")
    assert run(tmp_path, first, second)["answered"] == 0


def test_nothing_is_written_when_python_writes_no_bytecode(tmp_path: Path) -> None:
    first, second = layout(tmp_path)
    assert run(tmp_path, first, second, write_bytecode=False)["written"] is False
    assert not kept_file(tmp_path).exists()


def test_finish_leaves_the_finder_list_an_import_may_be_going_through_whole(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`finish` runs on the main thread while the engine's thread may be importing: the list
    that import loops over keeps every finder (removing one from under the loop skipped
    the next, the path finder: "No module named …"); the finder is out of the new one."""
    from louise.storage import module_places

    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.setattr(module_places, "_installed", {})
    monkeypatch.setattr(module_places, "read", lambda path: None)
    finder = module_places.install("test-program")
    in_use = sys.meta_path  # what an import running now iterates
    seen = list(in_use)
    module_places.finish("test-program")
    assert in_use == seen
    assert finder not in sys.meta_path
    assert sys.meta_path == [entry for entry in seen if entry is not finder]
