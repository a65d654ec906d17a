"""A turn's token usage: read from prompt results shaped like claude-agent-acp's and
codex-acp's (captured), put on the turn's end line, kept in transcripts; the context
figure goes stale when the model changes."""

from __future__ import annotations

from typing import Any

from louise.acp.schema import parse_update
from louise.session import Notice, NoticeAdded, Session, TurnEnded, TurnUsage

CLAUDE = {"stopReason": "end_turn",
          "usage": {"inputTokens": 100, "outputTokens": 20, "cachedReadTokens": 0,
                    "cachedWriteTokens": 0, "totalTokens": 120},
          "_meta": {"quota": {"token_count": {"totalTokens": 120, "inputTokens": 100},
                              "model_usage": [{"model": "claude-opus-5-5",
                                               "token_count": {"totalTokens": 120}}]}}}
CODEX_CANCELLED = {"stopReason": "cancelled", "usage": None,
                   "_meta": {"quota": {"token_count": None, "model_usage": []}}}


def test_usage_in_the_result_wins_and_names_the_model() -> None:
    usage = TurnUsage.from_prompt_result(CLAUDE)
    assert usage == TurnUsage(total=120, input=100, output=20, cached_read=0, cached_write=0,
                              models=("claude-opus-5-5",))
    assert usage.text() == "120 tokens: 100 in · 20 out · claude-opus-5-5"


def test_the_meta_quota_counts_stand_in_when_usage_is_absent() -> None:
    result = {"stopReason": "end_turn", "_meta": {"quota": {"token_count": {
        "totalTokens": 2400, "inputTokens": 2000, "cachedInputTokens": 1500,
        "cacheWriteInputTokens": 10, "outputTokens": 400, "reasoningOutputTokens": 0}}}}
    usage = TurnUsage.from_prompt_result(result)
    assert usage is not None
    assert usage.text() == "2,400 tokens: 2,000 in · 400 out · 1,500 cache read · 10 cache write"


def test_nothing_reported_is_no_usage_and_garbage_is_not_a_count() -> None:
    assert TurnUsage.from_prompt_result(CODEX_CANCELLED) is None
    assert TurnUsage.from_prompt_result({"stopReason": "end_turn"}) is None
    odd: dict[str, Any] = {"usage": {"totalTokens": True, "inputTokens": -5,
                                     "outputTokens": "20", "thoughtTokens": 10**20}}
    assert TurnUsage.from_prompt_result(odd) is None
    partial = TurnUsage.from_prompt_result({"usage": {"inputTokens": 7, "outputTokens": 3.0}})
    assert partial is not None and partial.total == 10  # the sum when no total is given


def test_a_transcript_record_round_trips() -> None:
    usage = TurnUsage.from_prompt_result(CLAUDE)
    assert usage is not None
    assert TurnUsage.from_record(usage.to_record()) == usage
    assert TurnUsage.from_record("junk") is None


def _turn() -> Session:
    session = Session("s", "claude", "/ws")
    session.mark_ready()
    session.begin_turn([{"type": "text", "text": "hi"}])
    return session


def test_the_turns_end_line_shows_its_usage() -> None:
    session = _turn()
    usage = TurnUsage(total=120, input=100, output=20)
    events = session.end_turn("end_turn", usage=usage)
    notice = Notice("usage", "120 tokens: 100 in · 20 out")
    assert NoticeAdded("s", len(session.entries) - 1, notice) in events
    assert TurnEnded("s", "end_turn") in events
    assert session.last_turn_usage == usage


def test_a_stop_notice_carries_the_usage_on_the_same_line() -> None:
    session = _turn()
    session.end_turn("max_tokens", usage=TurnUsage(total=5, output=5))
    assert session.entries[-1] == Notice(
        "stop", "stopped: the model reached its token limit · 5 tokens: 5 out")


def test_a_turn_without_usage_adds_no_line() -> None:
    session = _turn()
    before = len(session.entries)
    session.end_turn("end_turn")
    assert len(session.entries) == before


def _options(model: str) -> dict[str, Any]:
    return {"sessionUpdate": "config_option_update", "configOptions": [
        {"id": "model", "name": "Model", "category": "model", "type": "select",
         "currentValue": model, "options": [{"value": "a", "name": "A"},
                                            {"value": "b", "name": "B"}]}]}


def test_the_context_is_stale_after_a_model_change_until_the_next_usage() -> None:
    session = Session("s", "claude", "/ws")
    session.apply(parse_update(_options("a")))
    assert session.context_stale is False  # no figure yet: nothing to be stale
    session.apply(parse_update({"sessionUpdate": "usage_update", "used": 50, "size": 100}))
    session.apply(parse_update(_options("a")))
    assert session.context_stale is False  # same model
    session.apply(parse_update(_options("b")))
    assert session.context_stale is True
    session.apply(parse_update({"sessionUpdate": "usage_update", "used": 10, "size": 100}))
    assert session.context_stale is False
