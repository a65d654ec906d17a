"""Short digests with Python's own sha256 (louise/storage/digests.py) are the digests
hashlib gave: the names of transcripts, checkpoint stores and remembered rules written
before stay the same (the values below were computed with hashlib's sha256)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from louise.checkpoints.store import store_dir
from louise.permissions.rules import RememberedRule
from louise.storage import transcript_files
from louise.storage.digests import sha256_hex


def test_sha256_hex_is_hashlibs() -> None:
    for data in (b"", b"abc", "sess-\u00e9".encode(), bytes(range(256)) * 300):
        assert sha256_hex(data) == hashlib.sha256(data).hexdigest()


def test_names_made_from_digests_are_unchanged() -> None:
    assert transcript_files.digest("claude", "sess-\u00e9\udcff") == "0bc912610c1c0dca"
    assert store_dir(Path("/r"), Path("/home/me/proj")) == Path("/r/4c3b4937ddaa21c332cba088")
    rule = RememberedRule(agent_key="claude", workspace="/home/me/proj", kind="edit",
                          target="src/x.py", decision="allow")
    assert rule.id == "4ffa9465f1ff2eb6"
