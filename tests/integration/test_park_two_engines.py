"""Park and resume with two louise engines on one account (issue 26 item 4b): a registry in
this process (a chat with two prompts queued behind its parked one) and a
`louise chat --wait` process, each with its own agent process of one account
(tests/fakes/rfd_quota_agent.py, the account in a shared file), both refused at the limit.

The account's first reset time is wrong: at the announced reset it is still blocked, for
three more seconds. Exactly one parked prompt is sent again at the announced reset (and
refused: the other engine then waits for the new reset instead of being refused too), one
at the real reset, then the other; each parked prompt is answered once, and the queue
behind the parked one runs after it, in order."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from louise.config.loading import load_config_mapping
from louise.registry import SessionRegistry
from louise.registry.events import PromptQueueChanged, SessionParked
from tests.integration.agents import FAKES, wait_until
from tests.integration.cli_helpers import LOUISE, environment

pytestmark = pytest.mark.anyio

ANNOUNCED_IN = 8.0  # seconds: both engines are refused (and parked) before this
LASTS = 3.0  # the limit lasts this much longer than announced


def entries(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def test_one_resend_at_the_reset_across_two_engines(tmp_path: Path) -> None:
    account, log = tmp_path / "account.json", tmp_path / "prompts.log"
    announced = time.time() + ANNOUNCED_IN
    account.write_text(json.dumps({"blockedUntil": announced + LASTS, "announced": announced}))
    env = {"FAKE_ACCOUNT": str(account), "FAKE_PROMPT_LOG": str(log)}
    agent = {"command": sys.executable, "args": ["-P", str(FAKES / "rfd_quota_agent.py")],
             "env": env}
    config_file = tmp_path / "config.toml"
    config_file.write_text(
        "[agents.rfd]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = ['-P', {json.dumps(str(FAKES / 'rfd_quota_agent.py'))}]\n"
        "env = { " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items()) + " }\n")
    other = await anyio.open_process(
        [*LOUISE, "chat", "--agent", "rfd", "--wait", "parked in the CLI"],
        env=environment(config_file), cwd=tmp_path)
    parked: list[SessionParked] = []
    queued: list[int] = []
    results: list[str] = []
    config = load_config_mapping({"agents": {"rfd": agent}})
    try:
        async with SessionRegistry(config, grace_seconds=0.5, park_on_quota=True) as reg:
            def seen(event: object) -> None:
                if isinstance(event, SessionParked):
                    parked.append(event)
                elif isinstance(event, PromptQueueChanged):
                    queued.append(len(event.items))

            reg.subscribe(seen)
            session = await reg.new_session("rfd", str(tmp_path))

            async def send(text: str) -> None:
                results.append(await reg.prompt(session.session_id, text))

            async with anyio.create_task_group() as tg:
                tg.start_soon(send, "parked here")
                await wait_until(lambda: bool(parked))
                tg.start_soon(send, "queued 1")
                await wait_until(lambda: 1 in queued)
                tg.start_soon(send, "queued 2")
                await wait_until(lambda: len(results) == 3, timeout=60)
        with anyio.fail_after(60):
            status = await other.wait()
        assert status == 0
    finally:
        if other.returncode is None:
            other.kill()
            await other.wait()

    sent = [(e["text"], e["outcome"], e["at"]) for e in entries(log)]
    refused = [s for s in sent if s[1] == "refused"]
    answered = [s for s in sent if s[1] == "answered"]
    # Two refused when first sent, one refused at the announced reset: not two.
    assert len(refused) == 3, sent
    at_announced = [s for s in refused if s[2] >= announced]
    assert len(at_announced) == 1, sent  # the one resend at the (wrong) reset
    assert {s[0] for s in refused[:2]} == {"parked here", "parked in the CLI"}
    # At the real reset: each parked prompt answered once, the queue after its own.
    assert sorted(s[0] for s in answered) == sorted(
        ["parked here", "parked in the CLI", "queued 1", "queued 2"]), sent
    assert all(s[2] >= announced + LASTS for s in answered), sent
    mine = [s[0] for s in answered if s[0] != "parked in the CLI"]
    assert mine == ["parked here", "queued 1", "queued 2"]
    assert results == ["end_turn"] * 3
