"""The dataclass methods' compiled code kept between runs (louise/storage/code_cache.py):
the same classes from cached code, nothing compiled on the second start, and a file that
is not safe or not ours ignored."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from louise.storage import code_cache

ROOT = Path(__file__).resolve().parents[2]

# A program that makes dataclasses of every kind with the cache installed, and says what
# they do and what the cache did.
PROGRAM = r"""
import json, sys
from louise.storage import code_cache
methods = code_cache.install("test")
from dataclasses import dataclass, field

@dataclass(frozen=True, slots=True)
class Point:
    x: int
    y: int = 2
    tags: tuple[str, ...] = ()

@dataclass(order=True)
class Box:
    size: int
    items: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.items.append(self.size)

p, q = Point(1), Point(1, 2)
try:
    p.x = 5
    frozen = False
except Exception as exc:
    frozen = type(exc).__name__
out = {"repr": [repr(p), repr(Box(3))], "eq": p == q, "hash": hash(p) == hash(q),
       "frozen": frozen, "order": Box(1) < Box(2), "items": Box(4).items,
       "slots": hasattr(p, "__dict__"), "added": methods.added, "reused": methods.reused}
out["written"] = code_cache.finish("test")
print(json.dumps(out))
"""


def run(state: Path, program: str = PROGRAM) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(LOUISE_STATE_DIR=str(state), PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True,
                          text=True, timeout=120, check=True)
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_the_second_run_compiles_nothing_and_makes_the_same_classes(tmp_path: Path) -> None:
    first = run(tmp_path)
    second = run(tmp_path)
    assert first["added"] and first["written"] is True
    assert second["added"] == 0 and second["reused"] == first["added"]
    assert second["written"] is False  # nothing new: nothing written
    same = ("repr", "eq", "hash", "frozen", "order", "items", "slots")
    assert {k: second[k] for k in same} == {k: first[k] for k in same}
    assert first["repr"] == ["Point(x=1, y=2, tags=())", "Box(size=3, items=[3])"]
    assert first["frozen"] == "FrozenInstanceError" and first["slots"] is False
    written = tmp_path / code_cache.CACHE_DIR / code_cache.cache_file("test").name
    assert written.stat().st_mode & 0o777 == 0o600
    assert written.parent.stat().st_mode & 0o777 == 0o700


def test_the_engine_start_keeps_its_methods_and_reuses_them(tmp_path: Path) -> None:
    """`python -m louise.nvim` writes the engine's cache once its modules are imported
    (here Neovim is not there: the process ends at once); a start with that cache compiles
    none of the start's dataclass methods."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(LOUISE_STATE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    # No Neovim on its stdio: the cache is written once the modules are imported, whatever
    # pynvim's attach does; the process is stopped then.
    process = subprocess.Popen([sys.executable, "-m", "louise.nvim"], env=env,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)
    directory = tmp_path / code_cache.CACHE_DIR
    try:
        deadline = time.monotonic() + 120
        while not any(directory.glob("dataclasses.engine.*")) and process.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.05)  # polling a condition (a file appearing), not a fixed wait
    finally:
        process.kill()
        process.wait()
        assert process.stdin is not None and process.stdout is not None
        process.stdin.close()
        process.stdout.close()
    files = list(directory.glob("dataclasses.engine.*"))
    assert len(files) == 1
    kept, _ = code_cache.read(files[0])
    assert len(kept) > 500  # the start's ~900 methods
    again = run(tmp_path, "\n".join([
        "import json",
        "from louise.storage import code_cache",
        "from louise.nvim.process_start import load_engine",
        "load_engine()",  # the start's imports as the process makes them (pydantic: none)
        "m = code_cache.install('engine')",
        "print(json.dumps({'added': m.added, 'reused': m.reused}))"]))
    assert again["added"] == 0 and again["reused"] >= len(kept)  # some texts recur


def test_methods_made_from_cached_code_are_the_compiled_ones() -> None:
    methods = code_cache.CompiledMethods()
    namespace: dict[str, object] = {}
    methods.exec("def f(a):\n return a + 1\n", {}, namespace)
    methods.exec("def f(a):\n return a + 1\n", {}, namespace)
    assert methods.added == 1 and methods.reused == 1
    function = namespace["f"]
    assert callable(function) and function(1) == 2


def test_future_imports_of_louise_do_not_reach_the_generated_code() -> None:
    """dataclasses' text is compiled without the annotations future this module has."""
    methods = code_cache.CompiledMethods()
    namespace: dict[str, object] = {}
    methods.exec("def f(a: int) -> int:\n return a\n", {}, namespace)
    function = namespace["f"]
    assert function.__annotations__ == {"a": int, "return": int}


def test_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(code_cache, "MAX_ENTRIES", 2)
    methods = code_cache.CompiledMethods()
    for i in range(4):
        methods.exec(f"x{i} = {i}\n", {}, {})
    assert len(methods.index) == 2
    long_text = "x = 1\n" + "#" * code_cache.MAX_SOURCE_CHARS
    methods = code_cache.CompiledMethods()
    methods.exec(long_text, {}, {})
    assert methods.index == {} and not methods.store
    monkeypatch.setattr(code_cache, "MAX_STORE_BYTES", 1)
    methods = code_cache.CompiledMethods()
    methods.exec("y = 2\n", {}, {})
    assert methods.index == {} and not methods.store


def _write(path: Path, data: bytes, mode: int = 0o600) -> Path:
    path.write_bytes(data)
    path.chmod(mode)
    return path


def _file(header: object, blob: bytes) -> bytes:
    head = marshal.dumps(header)
    return len(head).to_bytes(code_cache.HEAD, "big") + head + blob


def test_a_file_that_is_not_safe_or_not_ours_is_ignored(tmp_path: Path) -> None:
    blob = marshal.dumps(compile("x = 1\n", "<string>", "exec"))
    index = {code_cache.digest("x = 1\n"): (0, len(blob))}
    data = code_cache.encode(index, blob)
    empty: tuple[dict[bytes, tuple[int, int]], bytes] = ({}, b"")

    def read(name: str, data: bytes, mode: int = 0o600) -> tuple[object, bytes]:
        found, code = code_cache.read(_write(tmp_path / name, data, mode))
        return found, bytes(code)

    assert read("ok", data) == (index, blob)
    assert read("shared", data, 0o620) == empty
    assert read("other", data, 0o602) == empty
    assert read("build", _file((code_cache.FORMAT, "cpython-99 other", index), blob)) == empty
    assert read("shape", _file(["not", "a", "cache"], blob)) == empty
    assert read("long head", b"\xff" * 8 + data) == empty
    assert read("short", b"\x00\x00") == empty
    bad_index = {b"short": (0, 1), code_cache.digest("y"): "not a place",
                 code_cache.digest("z"): (0, len(blob) + 1), code_cache.digest("w"): (-1, 2)}
    assert read("entries", _file((code_cache.FORMAT, code_cache.BUILD, bad_index), blob)) \
        == ({}, blob)
    assert read("garbage", b"\x00" * 7 + b"\x05" + b"\xff\x00 not marshal") == empty
    (tmp_path / "link").symlink_to(tmp_path / "ok")
    assert code_cache.read(tmp_path / "link") == empty
    assert code_cache.read(tmp_path / "missing") == empty


def test_kept_code_that_is_not_a_generated_method_is_compiled_anew() -> None:
    text = "def f():\n return 1\n"
    for blob in (marshal.dumps(compile(text, "/somewhere.py", "exec")),
                 marshal.dumps(("not", "code")), b"\xff garbage"):
        methods = code_cache.CompiledMethods({code_cache.digest(text): (0, len(blob))}, blob)
        namespace: dict[str, object] = {}
        methods.exec(text, {}, namespace)
        function = namespace["f"]
        assert callable(function) and function() == 1
        assert function.__code__.co_filename == "<string>"
        assert (methods.added, methods.reused) == (1, 0)  # replaced: written at the end
        start, size = methods.index[code_cache.digest(text)]
        kept = marshal.loads(bytes(methods.store[start:start + size]))
        assert kept.co_filename == "<string>"


def test_nothing_is_written_when_python_writes_no_bytecode(tmp_path: Path) -> None:
    env = dict(os.environ, LOUISE_STATE_DIR=str(tmp_path), PYTHONPATH=str(ROOT),
               PYTHONDONTWRITEBYTECODE="1")
    subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True,
                   timeout=120, check=True)
    assert not (tmp_path / code_cache.CACHE_DIR).exists()


def test_a_writing_verb_keeps_its_methods_and_a_read_only_one_writes_nothing(
        tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(LOUISE_STATE_DIR=str(tmp_path), PYTHONPATH=str(ROOT),
               LOUISE_CONFIG=str(tmp_path / "config.toml"))
    for verb in ("inspect", "permissions"):
        subprocess.run([sys.executable, "-m", "louise.cli", verb], env=env,
                       capture_output=True, timeout=120, check=True)
    kept = sorted(p.name.split(".")[1] for p in (tmp_path / code_cache.CACHE_DIR).iterdir())
    assert kept == ["cli-permissions"]


def test_a_written_cache_holds_only_the_code_its_index_names(tmp_path: Path) -> None:
    text = "def f():\n return 1\n"
    stale = b"\xff stale code"
    methods = code_cache.CompiledMethods({code_cache.digest(text): (0, len(stale))}, stale)
    methods.exec(text, {}, {})
    methods.exec("def g():\n return 2\n", {}, {})
    code_cache.write(tmp_path / "d" / "cache", *methods.compacted())
    index, blob = code_cache.read(tmp_path / "d" / "cache")
    assert stale not in bytes(blob) and sum(size for _, size in index.values()) == len(blob)
    again = code_cache.CompiledMethods(index, blob)
    namespace: dict[str, object] = {}
    again.exec(text, {}, namespace)
    function = namespace["f"]
    assert callable(function) and function() == 1 and again.reused == 1


def test_a_module_imported_after_the_start_uses_and_fills_the_programs_cache(
        tmp_path: Path) -> None:
    """Issue 25 item 2: a module the engine imports on first use (the checkpoint store)
    gets its dataclasses' methods from the engine's cache, which its first use fills: the
    next process's first use compiles none of them."""
    program = "\n".join([
        "import json, sys",
        "compiled = []",
        "sys.addaudithook(lambda event, args: compiled.append(1) if event == 'compile'"
        " and '__create_fn__' in str(args[0]) else None)",  # a dataclass's method text
        "from louise.storage import code_cache",
        "code_cache.install('engine')",
        "import louise.checkpoints.service",
        "code_cache.finish('engine')",
        "before = len(compiled)",
        "module = code_cache.import_module('louise.checkpoints.workspace')",
        "print(json.dumps([before, len(compiled) - before, module.__name__,",
        "                  'exec' in vars(sys.modules['dataclasses'])]))"])
    first = run(tmp_path / "state", program)
    second = run(tmp_path / "state", program)
    assert first[0] > 100 and second[0] == 0  # the start's own methods, kept by the first
    assert first[1] > 20  # the store's, compiled on its first use and kept
    assert second[1:] == [0, "louise.checkpoints.workspace", False]
