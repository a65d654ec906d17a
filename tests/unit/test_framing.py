from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from louise.acp.framing import HEAD_BYTES, LineDecoder, OversizedLine


def test_lines_split_across_chunks_are_joined() -> None:
    decoder = LineDecoder()
    assert decoder.feed(b'{"a":') == []
    assert decoder.feed(b'1}\n{"b"') == [b'{"a":1}']
    assert decoder.feed(b":2}\n") == [b'{"b":2}']


def test_carriage_returns_stripped_and_blank_lines_skipped() -> None:
    decoder = LineDecoder()
    assert decoder.feed(b"one\r\n\r\n   \n\ntwo\n") == [b"one", b"two"]


def test_oversized_line_is_dropped_and_reported_then_next_line_flows() -> None:
    decoder = LineDecoder(max_line_bytes=10)
    out = decoder.feed(b"0123456789ABCDEF")
    assert out == []
    out = decoder.feed(b"GHIJ\nok\n")
    assert out == [OversizedLine(20, b"0123456789ABCDEFGHIJ"), b"ok"]


def test_oversized_line_is_not_held_in_memory() -> None:
    decoder = LineDecoder(max_line_bytes=1024)
    for _ in range(1000):
        decoder.feed(b"x" * 10_000)
    assert len(decoder._buffer) == 0  # nothing of the 10 MB is retained
    assert decoder.feed(b"\n") == [OversizedLine(10_000_000, b"x" * HEAD_BYTES)]


def test_line_of_exactly_the_limit_passes() -> None:
    decoder = LineDecoder(max_line_bytes=5)
    assert decoder.feed(b"12345\n123456\n") == [b"12345", OversizedLine(6, b"123456")]


def test_finish_delivers_unterminated_tail() -> None:
    decoder = LineDecoder()
    decoder.feed(b'{"x":1}')
    assert decoder.finish() == [b'{"x":1}']
    assert decoder.finish() == []


@given(
    lines=st.lists(st.binary(min_size=1, max_size=40).map(lambda b: b.replace(b"\n", b"_")),
                   max_size=20),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=10),
)
def test_any_chunking_yields_the_same_lines(lines: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(line + b"\n" for line in lines)
    positions = sorted({c % (len(stream) + 1) for c in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *positions], [*positions, len(stream)], strict=True)]
    decoder = LineDecoder()
    got: list[bytes | OversizedLine] = []
    for chunk in chunks:
        got.extend(decoder.feed(chunk))
    got.extend(decoder.finish())
    expected = [line[:-1] if line.endswith(b"\r") else line for line in lines]
    assert got == [line for line in expected if line.strip()]
