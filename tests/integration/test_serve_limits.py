"""The session host keeps this machine's limits cache: what an agent sends about its
account reaches the cache also while no front end is attached (here: after the front end
that prompted left mid-turn), the host holds the figures while the agent runs and lets
go of them when it ends. The v1 extension (the demo agent) and an agent's own signals
(a codex-like fake) both."""

from __future__ import annotations

import sys
from pathlib import Path

from louise.limits import LimitsState
from louise.serve.hello import AgentCommand
from louise.storage.limits_cache import LimitsCache
from louise.storage.limits_cache_file import CacheView
from tests.integration.serve_clients import (
    Client,
    new_session,
    prompt,
    running_host,
    update_text,
    wait_for,
)

FAKES = Path(__file__).resolve().parent.parent / "fakes"
SLOW = "/scenario slow delay_ms=20 chunks=40"


def _cached(agent: str) -> LimitsState | None:
    return LimitsCache().load().states.get(agent)


def _bucket_ids(state: LimitsState | None) -> set[str]:
    if state is None or state.snapshot is None:
        return set()
    return {bucket.id for bucket in state.snapshot.buckets}


def _holders(view: CacheView, agent: str) -> set[int]:
    return {holder.pid for holder in view.holders.get(agent, ())}


def test_figures_sent_with_nobody_attached_reach_the_hosts_cache(tmp_path: Path) -> None:
    with running_host() as host:
        client = Client(host.socket, "nvim")
        session = new_session(client, tmp_path)
        prompt(client, session, SLOW)
        client.wait(lambda m: "tick 1 " in update_text(m), "the turn running")
        client.close()  # Neovim quit mid-turn: the agent's `updated` comes after its end
        assert not any(m.get("method", "").endswith("/account_limits/updated")
                       for m in client.seen)
        wait_for(lambda: _cached("demo") is not None, "the figures in the host's cache")
        state = _cached("demo")
        assert state is not None and state.status == "fresh", state
        assert state.snapshot is not None
        requests = next(b for b in state.snapshot.buckets if b.id == "requests")
        assert requests.windows[0].used_percent == 13  # after one prompt
        view = LimitsCache().load()
        assert host.proc.pid in _holders(view, "demo")  # the running agent vouches for them
        assert view.is_live("demo")
    view = LimitsCache().load()  # the host ended: it holds nothing any more
    assert host.proc.pid not in _holders(view, "demo")
    assert view.states["demo"].snapshot == state.snapshot


def test_an_agents_own_rate_limit_signals_reach_the_hosts_cache(tmp_path: Path) -> None:
    command = AgentCommand(sys.executable, ("-P", str(FAKES / "codex_limits_agent.py")))
    with running_host() as host:
        client = Client(host.socket, "nvim", agent="codex", command=command)
        session = new_session(client, tmp_path)
        prompt(client, session, "hello PUSH")
        client.wait(lambda m: bool(update_text(m)), "the agent's reply text")
        client.close()  # its `usage_update` with the rate limits comes after the reply
        # The push (`codex_other`) may reach the cache before the `usage_update`: wait for
        # the latter's limit.
        wait_for(lambda: "codex" in _bucket_ids(_cached("codex")),
                 "the usage_update's figures in the host's cache")
        state = _cached("codex")
        assert state is not None and state.status == "fresh", state
        assert state.snapshot is not None
        assert {bucket.id for bucket in state.snapshot.buckets} >= {"codex"}
