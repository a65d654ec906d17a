"""louise as a client of the ACP Quotas RFD (issue 26 items 1, 3, 4): a real agent process
speaking only the RFD (tests/fakes/rfd_quota_agent.py) drives the registry: the client
capability, `quota/read` without a session at the agent's start and with one on refresh,
`quota_update` pushes ordered by the agent's `updatedAt`, a malformed one refused with one
line, `quotaExceeded` read as "reached, resets …", a turn's quota cost, budgets, and a
refused turn parked until the reset and sent again once, the queue intact. Expected
figures come from the fake's own account file, never from the output under test."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from louise import limits as lim
from louise.config.loading import load_config_mapping
from louise.registry import SessionRegistry
from louise.registry.events import RegistryEvent, SessionParked, SessionUnparked
from louise.registry.governor import QuotaRefused
from louise.registry.records import PromptWithdrawn
from louise.session import NoticeAdded
from tests.integration.agents import FAKES, wait_until

pytestmark = pytest.mark.anyio


def rfd_agent(tmp_path: Path, **env: str) -> dict[str, Any]:
    logs = {"FAKE_ACCOUNT": str(tmp_path / "account.json"),
            "FAKE_CLIENT_LOG": str(tmp_path / "client.log"),
            "FAKE_READ_LOG": str(tmp_path / "reads.log"),
            "FAKE_PROMPT_LOG": str(tmp_path / "prompts.log")}
    return {"command": sys.executable, "args": ["-P", str(FAKES / "rfd_quota_agent.py")],
            "env": {**logs, **env}}


def lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def block_next(tmp_path: Path, seconds: float) -> None:
    """The account reaches its limit at its next prompt, for `seconds` from then."""
    (tmp_path / "account.json").write_text(json.dumps({"blockNext": seconds}))


def account(tmp_path: Path) -> dict[str, Any]:
    """The fake's account file, read under its lock (the fake rewrites it in place)."""
    import fcntl

    with (tmp_path / "account.json").open(encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_SH)
        data: dict[str, Any] = json.loads(handle.read())
    return data


@asynccontextmanager
async def registry(tmp_path: Path, events: list[RegistryEvent] | None = None,
                   limits: dict[str, Any] | None = None, park: bool = False,
                   **env: str) -> AsyncIterator[SessionRegistry]:
    config = load_config_mapping({"agents": {"rfd": rfd_agent(tmp_path, **env)},
                                  "limits": limits or {}})
    async with SessionRegistry(config, grace_seconds=0.5, park_on_quota=park) as reg:
        if events is not None:
            reg.subscribe(events.append)
        yield reg


def five_hour(state: lim.LimitsState) -> float | None:
    assert state.quota is not None
    return state.quota.pools[0].meters[0].used_percent


async def test_capability_and_a_read_without_a_session_at_start(tmp_path: Path) -> None:
    async with registry(tmp_path) as reg:
        await reg.connection("rfd")  # the agent starts: no session yet
        await wait_until(lambda: reg.inspect_limits("rfd").status == "fresh")
        [caps] = lines(tmp_path / "client.log")
        assert caps["session"]["quota"] == {}
        assert lines(tmp_path / "reads.log") == [{"session": None}]
        state = reg.inspect_limits("rfd")
        assert state.source == "quota/read"
        assert five_hour(state) == account(tmp_path)["used5h"]
        label = lim.render_label(state, reg.clock())
        assert label is not None and label.text.startswith("limits 76%/5h ↻2h 87%/7d")
        detail = lim.render_detail(state, reg.clock())
        assert "Source: quota/read" in detail
        assert "### Extra usage (extra_usage) · not enabled" in detail
        assert "### Plan usage (plan) · available" in detail


async def test_a_read_the_agent_answers_only_for_a_session(tmp_path: Path) -> None:
    async with registry(tmp_path, FAKE_READ_NEEDS_SESSION="1") as reg:
        await reg.connection("rfd")
        await wait_until(lambda: len(lines(tmp_path / "reads.log")) == 1)
        await reg.flush_transcripts()
        # Nothing failed and nothing is known: no red "unavailable".
        assert reg.inspect_limits("rfd").status in ("not_observed", "loading", "unsupported")
        session = await reg.new_session("rfd", str(tmp_path))
        state = await reg.refresh_limits("rfd")
        assert state.status == "fresh" and state.source == "quota/read"
        assert lines(tmp_path / "reads.log")[-1] == {"session": session.acp_id}


async def test_pushes_ordered_by_the_agents_time_and_the_turns_cost(tmp_path: Path) -> None:
    events: list[RegistryEvent] = []
    async with registry(tmp_path, events) as reg:
        session = await reg.new_session("rfd", str(tmp_path))
        await wait_until(lambda: reg.inspect_limits("rfd").status == "fresh")  # the read
        await reg.prompt(session.session_id, "hello")
        await wait_until(lambda: reg.inspect_limits("rfd").source == "quota_update")
        assert five_hour(reg.inspect_limits("rfd")) == account(tmp_path)["used5h"] == 29
        await reg.prompt(session.session_id, "STALE then on")  # an older push first
        state = reg.inspect_limits("rfd")
        assert five_hour(state) == 34  # the stale snapshot (99 %) was ignored
        ends = [e.notice.text for e in events
                if isinstance(e, NoticeAdded) and e.session_id == session.session_id
                and e.notice.kind == "usage"]
        assert ends == ["used 5% of the 5h window, 1% of the 7d window"] * 2, ends
        costs = reg.governor.cost_lines("rfd", session.session_id)
        assert any(line.startswith("Session ") and "(this chat)" in line and
                   "10% of the Plan usage 5h window" in line for line in costs), costs
        assert any(line.startswith(f"Workspace {tmp_path}") for line in costs), costs


async def test_the_rfd_wins_over_the_agents_own_shape(tmp_path: Path) -> None:
    async with registry(tmp_path, FAKE_ALSO_CLAUDE="1") as reg:
        session = await reg.new_session("rfd", str(tmp_path))
        await reg.prompt(session.session_id, "hello")
        await wait_until(lambda: reg.inspect_limits("rfd").source == "quota_update")
        await reg.prompt(session.session_id, "again")  # its claude shape came meanwhile
        state = reg.inspect_limits("rfd")
        assert state.source in ("quota_update", "quota/read")
        assert five_hour(state) == 34  # not claude's 99 %


async def test_a_malformed_push_is_refused_with_one_line(tmp_path: Path) -> None:
    async with registry(tmp_path) as reg:
        session = await reg.new_session("rfd", str(tmp_path))
        await reg.prompt(session.session_id, "hello")
        await wait_until(lambda: reg.inspect_limits("rfd").source == "quota_update")
        # The malformed push comes first, then the turn's own good one.
        notes: list[str | None] = []
        reg.subscribe(lambda e: notes.append(getattr(getattr(e, "state", None), "error",
                                                     None)))
        await reg.prompt(session.session_id, "MALFORMED")
        assert "quota snapshot: pools is not a list" in notes
        assert reg.inspect_limits("rfd").status == "fresh"  # the next good one replaced it


async def test_quota_exceeded_reads_reached_resets(tmp_path: Path) -> None:
    async with registry(tmp_path) as reg:
        session = await reg.new_session("rfd", str(tmp_path))
        with pytest.raises(QuotaRefused) as refused:
            await reg.prompt(session.session_id, "BLOCK 3600")
        until = int(account(tmp_path)["blockedUntil"])
        assert refused.value.block.resets_at == until
        state = reg.inspect_limits("rfd")
        assert state.refusal is not None and state.refusal.resets_at == until
        now = reg.clock()
        label = lim.render_label(state, now)
        assert label == lim.Label(f"limits reached ↻{lim.format_until(until, now)}", "error")
        assert any(line.startswith("Reached: 5-hour limit reached (plan/five_hour) · resets in")
                   for line in lim.render_detail(state, now))


async def test_a_budget_refuses_a_turn_before_it_is_sent(tmp_path: Path) -> None:
    async with registry(tmp_path, limits={"budgets": {str(tmp_path): {"5h": 8}}}) as reg:
        session = await reg.new_session("rfd", str(tmp_path))
        await reg.prompt(session.session_id, "one")  # 5 points of the 5h window
        await wait_until(lambda: bool(reg.limits_cache and reg.limits_cache.load().spent))
        with pytest.raises(Exception) as caught:  # 5 used + about 5 a turn > 8
            await reg.prompt(session.session_id, "two")
        assert str(caught.value).startswith(f"louise did not send this turn: the budget of "
                                            f"{tmp_path} is 8% of the 5h window and its "
                                            "turns used 5% of it this cycle")
        assert [p["text"] for p in lines(tmp_path / "prompts.log")] == ["one"]


async def test_a_refused_turn_is_parked_and_sent_again_once_at_the_reset(
        tmp_path: Path) -> None:
    events: list[RegistryEvent] = []
    async with registry(tmp_path, events, park=True) as reg:
        session = await reg.new_session("rfd", str(tmp_path))
        results: list[str] = []

        async def send(text: str) -> None:
            results.append(await reg.prompt(session.session_id, text))

        block_next(tmp_path, 2)
        async with anyio.create_task_group() as tg:
            tg.start_soon(send, "hello")
            await wait_until(lambda: any(isinstance(e, SessionParked) for e in events))
            parked = reg.governor.parked(session.session_id)
            until = account(tmp_path)["blockedUntil"]
            assert parked is not None and parked[1] is True  # the agent's reset time
            assert parked[0] == int(until)  # the quotaExceeded's resetsAt (whole seconds)
            tg.start_soon(send, "queued behind")
            await wait_until(lambda: len(results) == 2, timeout=30)
        assert results == ["end_turn", "end_turn"]
        prompts = [(p["text"], p["outcome"]) for p in lines(tmp_path / "prompts.log")]
        # The parked prompt once more at the reset (answered), then the queue: once each.
        assert prompts == [("hello", "refused"), ("hello", "answered"),
                           ("queued behind", "answered")], prompts
        answered = lines(tmp_path / "prompts.log")[1]
        assert answered["at"] >= until


async def test_unpark_and_cancel_end_a_park_without_a_resend(tmp_path: Path) -> None:
    events: list[RegistryEvent] = []
    async with registry(tmp_path, events, park=True) as reg:
        session = await reg.new_session("rfd", str(tmp_path))
        async with anyio.create_task_group() as tg:
            outcome: list[object] = []

            async def send() -> None:
                try:
                    outcome.append(await reg.prompt(session.session_id, "BLOCK 600"))
                except PromptWithdrawn as exc:
                    outcome.append(exc)

            tg.start_soon(send)
            await wait_until(lambda: reg.governor.parked(session.session_id) is not None)
            assert reg.unpark(session.session_id)
            await wait_until(lambda: bool(outcome))
        assert isinstance(outcome[0], PromptWithdrawn)
        assert [e.outcome for e in events if isinstance(e, SessionUnparked)] == ["unparked"]
        async with anyio.create_task_group() as tg:
            tg.start_soon(send)
            await wait_until(lambda: reg.governor.parked(session.session_id) is not None)
            await reg.cancel(session.session_id)
            await wait_until(lambda: len(outcome) == 2)
        assert outcome[1] == "cancelled"
        assert [p["text"] for p in lines(tmp_path / "prompts.log")] == ["BLOCK 600"] * 2
