"""Files and images attached to a prompt, read as the agent's prompt capabilities allow."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from louise.registry.attachments import MAX_EMBED_BYTES, image_type, load_attachments
from louise.registry.turns import prompt_blocks

pytestmark = pytest.mark.anyio
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
BOTH = {"embeddedContext": True, "image": True}


async def blocks(tmp_path: Path, chips: list[dict[str, object]],
                 caps: dict[str, object]) -> list[dict[str, object]]:
    loaded = await load_attachments(chips, caps)
    return prompt_blocks("look", loaded, caps)[1:]


async def test_a_small_text_file_is_embedded_where_the_agent_takes_it(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("print('hi')\n")
    chip = {"kind": "file", "path": str(tmp_path / "a.py")}
    assert await blocks(tmp_path, [chip], BOTH) == [
        {"type": "resource", "resource": {"uri": f"file://{tmp_path}/a.py",
                                          "text": "print('hi')\n", "mimeType": "text/plain"}}]
    assert await blocks(tmp_path, [chip], {}) == [
        {"type": "resource_link", "uri": f"file://{tmp_path}/a.py", "name": "a.py"}]


async def test_binary_big_or_odd_files_are_linked(tmp_path: Path) -> None:
    (tmp_path / "bin").write_bytes(b"\x00\x01\x02")
    (tmp_path / "big.txt").write_text("x" * (MAX_EMBED_BYTES + 1))
    (tmp_path / "latin1.txt").write_bytes("café".encode("latin-1"))
    os.mkfifo(tmp_path / "fifo")  # never opened for a blocking read
    for name in ("bin", "big.txt", "latin1.txt", "fifo", "missing"):
        chip = {"kind": "file", "path": str(tmp_path / name)}
        assert await blocks(tmp_path, [chip], BOTH) == [
            {"type": "resource_link", "uri": f"file://{tmp_path}/{name}", "name": name}]


async def test_images_by_their_bytes(tmp_path: Path) -> None:
    (tmp_path / "shot.png").write_bytes(PNG)
    (tmp_path / "fake.png").write_text("not an image")
    chip = {"kind": "image", "path": str(tmp_path / "shot.png")}
    assert await blocks(tmp_path, [chip], BOTH) == [
        {"type": "image", "data": base64.b64encode(PNG).decode(), "mimeType": "image/png",
         "uri": f"file://{tmp_path}/shot.png"}]
    clip = {"kind": "image", "path": str(tmp_path / "shot.png"), "clipboard": True}
    assert "uri" not in (await blocks(tmp_path, [clip], BOTH))[0]  # a temp file's path
    loaded = await load_attachments([{"kind": "image", "path": str(tmp_path / "fake.png")},
                                     chip], {"image": False})
    assert [c.get("problem") for c in loaded] == ["the agent does not take images"] * 2
    loaded = await load_attachments([{"kind": "image", "path": str(tmp_path / "fake.png")}],
                                    BOTH)
    assert loaded[0]["problem"] == "it is not a png, jpeg, gif or webp image"
    assert prompt_blocks("look", loaded, BOTH) == [{"type": "text", "text": "look"}]


def test_image_types() -> None:
    assert image_type(PNG) == "image/png"
    assert image_type(b"\xff\xd8\xff\xe0....") == "image/jpeg"
    assert image_type(b"GIF89a....") == "image/gif"
    assert image_type(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "image/webp"
    assert image_type(b"<svg>") is None
