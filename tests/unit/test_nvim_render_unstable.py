"""The renderer's blocks for the unstable updates: plans by id and compactions, live and
in a whole render alike, with ids an agent reuses."""

from __future__ import annotations

from typing import Any

from louise.session.unstable import MAX_COMPACTIONS
from tests.unit.test_nvim_render import Harness, chunk


def compaction(cid: str, status: str, **fields: Any) -> dict[str, Any]:
    return {"sessionUpdate": "compaction_update", "compactionId": cid, "status": status,
            **fields}


def markdown_plan(plan_id: str, text: str) -> dict[str, Any]:
    return {"sessionUpdate": "plan_update",
            "plan": {"type": "markdown", "planId": plan_id, "content": text}}


def whole(h: Harness) -> list[str]:
    h.renderer.detach("demo:s1")
    h.renderer.attach("demo:s1")
    ((kind, lines, *_),) = h.batch()
    assert kind == "reset"
    return list(lines)


class Buffer:
    """The chat buffer as the renderer's ops build it (blocks replaced in place)."""

    def __init__(self) -> None:
        self.blocks: dict[str, list[str]] = {}

    def apply(self, ops: list[list[Any]]) -> None:
        for op in ops:
            if op[0] == "reset":
                self.blocks = {block_id: op[1][first:first + count]
                               for block_id, _, first, count in op[2]}
            elif op[0] == "block":
                self.blocks[op[1]] = list(op[3])
            elif op[0] == "replace":
                self.blocks[op[1]] = list(op[2])
            elif op[0] == "text":
                self.blocks[op[1]][-1] += op[2]

    @property
    def lines(self) -> list[str]:
        return [line for lines in self.blocks.values() for line in lines]


def test_live_and_whole_renders_agree() -> None:
    h = Harness()
    h.renderer.attach("demo:s1")
    buffer = Buffer()
    buffer.apply(h.batch())
    h.feed(chunk("before"), markdown_plan("p", "# One"), compaction("c", "in_progress"))
    buffer.apply(h.batch())
    assert buffer.lines[-1] == "⟲ compacting the context…"
    h.feed(markdown_plan("p", "# Two"), {"sessionUpdate": "compaction_summary_chunk",
                                         "compactionId": "c",
                                         "content": {"type": "text", "text": "kept"}})
    buffer.apply(h.batch())
    h.feed(compaction("c", "completed"),
           {"sessionUpdate": "notice", "severity": "info", "title": "FYI"})
    buffer.apply(h.batch())
    expected = ["", "▌ demo", "before", "", "▌ plan", "# Two", "",
                "⟲ context compacted", "  kept", "", "ℹ FYI"]
    assert buffer.lines == expected
    assert whole(h) == expected


def test_a_removed_plan_empties_its_block_and_a_reused_compaction_id_shows_once() -> None:
    h = Harness()
    h.renderer.attach("demo:s1")
    buffer = Buffer()
    buffer.apply(h.batch())
    h.feed(markdown_plan("p", "# Plan"))
    buffer.apply(h.batch())
    assert "▌ plan" in buffer.lines
    h.feed({"sessionUpdate": "plan_removed", "planId": "p"})
    buffer.apply(h.batch())
    assert "▌ plan" not in buffer.lines and "▌ plan" not in whole(h)
    # Enough compactions that the first record is dropped, then its id again.
    h.feed(*(compaction(f"k{n}", "completed") for n in range(MAX_COMPACTIONS + 1)))
    assert "k0" not in h.session.compactions
    h.feed(compaction("k0", "failed", error="again"))
    buffer.apply(h.batch())
    for lines in (buffer.lines, whole(h)):  # a new entry at the end, shown once
        assert lines.count("✗ context compaction failed: again") == 1
        assert lines[-1] == "✗ context compaction failed: again"
    assert whole(h).count("⟲ context compacted") == MAX_COMPACTIONS - 1  # k0's went
    assert h.session.sizes.keys() == set()  # no plan's name left behind
