"""Soak: the headless registry under chaos for a while, then a health check.

    .venv/bin/python bench/soak.py [--seconds 300] [--seed 1] [--json]

Four agents: two demo agents (chat, streams, edits, terminals, slow turns), a scripted
fake whose turns start children that inherit its stdout (and sometimes hang), and a
scripted fake that floods permission requests. Two sessions per agent prompt in a loop;
a decider answers permissions at random (allow, reject, dismiss, sometimes slowly); a
chaos task SIGKILLs a random agent, preferably mid-turn, every few seconds. A seeded RNG
picks everything.

Afterwards it checks: no stuck session (every prompt ended within STUCK_AFTER seconds,
none is left in a turn, no permission left waiting), no orphan (every agent process and
every child an agent started is gone once the registry is closed), open fds and RSS flat
(the median of the last quarter of samples against the median of the quarter after the
warm-up; fds back to where they started once closed). Prints the figures; exits 1 when a
check fails.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
SCRIPT_AGENT = ROOT / "tests" / "fakes" / "script_agent.py"
SESSIONS_PER_AGENT = 2
STUCK_AFTER = 90.0  # a prompt that takes longer than this is stuck (the watchdog is 4 s)
IDLE_TIMEOUT = 4.0
SAMPLE_EVERY = 1.0
FD_GROWTH_LIMIT = 16  # open fds: last quarter's median over the early one's
FD_LEFT_LIMIT = 4  # open fds after the registry closed, over the count before it started
RSS_GROWTH_LIMIT_KIB = 32 * 1024
DEMO_PROMPTS = [
    "hello",
    "/scenario stream chunks=400 size=80 delay_ms=1",
    "/scenario edit path=soak_{n}.py",
    "/scenario multi_edit",
    "/scenario execute",
    "/scenario slow delay_ms=20 chunks=40",
    "/scenario plan delay_ms=5",
    "/scenario read path=README.md",
    "/scenario usage tokens=500",
]


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def proc_stat(pid: int) -> tuple[str, int, int] | None:
    """(state, ppid, pgid) of a live process, None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[1]), int(fields[2])


def living(pids: set[int]) -> list[int]:
    out = []
    for pid in sorted(pids):
        stat = proc_stat(pid)
        if stat is not None and stat[0] != "Z":
            out.append(pid)
    return out


def group_members(pgids: set[int]) -> list[int]:
    """Live processes in any of these process groups (an agent's group is its pid)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = proc_stat(int(entry.name))
            if stat is not None and stat[0] != "Z" and stat[2] in pgids:
                found.append(int(entry.name))
    return sorted(found)


class RandomDecider:
    """Answers permissions at random: allow once, reject once or dismiss, sometimes after
    a while (as a person would), never "always" (nothing is remembered)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.answered = 0

    async def decide(self, request: Any, queue: Any) -> str | None:
        roll = self.rng.random()
        if roll < 0.1:
            await anyio.sleep(self.rng.uniform(0.2, 1.5))
        elif roll < 0.5:
            await anyio.sleep(0)
        self.answered += 1
        pick = self.rng.random()
        if pick < 0.6:
            return request.option_of_kind("allow_once")  # type: ignore[no-any-return]
        if pick < 0.85:
            return request.refusal()  # type: ignore[no-any-return]
        return None


@dataclass
class Figures:
    seed: int
    seconds: float
    prompts: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    kills: int = 0
    kills_mid_turn: int = 0
    restarts: int = 0
    stuck: list[str] = field(default_factory=list)
    children_spawned: int = 0
    permissions_answered: int = 0
    samples: list[tuple[float, int, int]] = field(default_factory=list)  # (t, fds, rss)
    fds_before: int = 0
    fds_after: int = 0
    left_in_turn: list[str] = field(default_factory=list)
    permissions_left: int = 0
    orphans: list[int] = field(default_factory=list)

    def count(self, outcome: str) -> None:
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1

    def quarter_medians(self) -> tuple[tuple[float, float], tuple[float, float]]:
        """(fds, rss) medians of the quarter after the warm-up and of the last quarter."""
        samples = self.samples
        quarter = max(1, len(samples) // 4)
        early = samples[quarter:2 * quarter] or samples[:quarter]
        late = samples[-quarter:]
        return ((statistics.median(s[1] for s in early), statistics.median(s[2] for s in early)),
                (statistics.median(s[1] for s in late), statistics.median(s[2] for s in late)))

    def failures(self) -> list[str]:
        out = [f"stuck: {what}" for what in self.stuck]
        out += [f"left in a turn: {key}" for key in self.left_in_turn]
        if self.permissions_left:
            out.append(f"{self.permissions_left} permission requests left waiting")
        if self.orphans:
            out.append(f"orphan processes: {self.orphans}")
        if len(self.samples) >= 8:
            (fds0, rss0), (fds1, rss1) = self.quarter_medians()
            if fds1 - fds0 > FD_GROWTH_LIMIT:
                out.append(f"open fds grew: {fds0:.0f} -> {fds1:.0f}")
            if rss1 - rss0 > RSS_GROWTH_LIMIT_KIB:
                out.append(f"RSS grew: {rss0 / 1024:.1f} -> {rss1 / 1024:.1f} MiB")
        if self.fds_after - self.fds_before > FD_LEFT_LIMIT:
            out.append(f"open fds after close: {self.fds_after} (before start: "
                       f"{self.fds_before})")
        if self.kills == 0:
            out.append("the chaos task killed nothing (too short a run?)")
        return out

    def report(self) -> dict[str, Any]:
        (fds0, rss0), (fds1, rss1) = self.quarter_medians() if self.samples else ((0, 0), (0, 0))
        return {
            "seed": self.seed, "seconds": round(self.seconds, 1), "prompts": self.prompts,
            "outcomes": dict(sorted(self.outcomes.items())), "kills": self.kills,
            "kills_mid_turn": self.kills_mid_turn, "restarts": self.restarts,
            "children_spawned": self.children_spawned,
            "permissions_answered": self.permissions_answered,
            "fds": {"before": self.fds_before, "early_median": fds0, "late_median": fds1,
                    "max": max((s[1] for s in self.samples), default=0),
                    "after_close": self.fds_after},
            "rss_mib": {"early_median": round(rss0 / 1024, 1),
                        "late_median": round(rss1 / 1024, 1),
                        "max": round(max((s[2] for s in self.samples), default=0) / 1024, 1)},
            "stuck": self.stuck, "left_in_turn": self.left_in_turn,
            "permissions_left": self.permissions_left, "orphans": self.orphans,
            "failures": self.failures(),
        }


class Soak:
    def __init__(self, seconds: float, seed: int, workspace: Path) -> None:
        self.seconds = seconds
        self.rng = random.Random(seed)
        self.workspace = workspace
        self.figures = Figures(seed, seconds)
        self.agent_pids: set[int] = set()
        self.child_pids: set[int] = set()
        self.errors: list[str] = []
        self.deadline = 0.0

    def config(self) -> Any:
        from louise.config.loading import load_config_mapping

        demo = {"command": sys.executable, "args": ["-P", "-m", "louise.demo_agent"],
                "env": {"LOUISE_DEMO_STATE_DIR": "off"}}
        script = {"command": sys.executable, "args": [str(SCRIPT_AGENT)]}
        return load_config_mapping({
            "agents": {"demo-a": demo, "demo-b": demo, "kids": script, "flood": script},
            "prompt_idle_timeout": IDLE_TIMEOUT,
        })

    def prompt_for(self, agent: str, turn: int) -> str:
        rng = self.rng
        if agent.startswith("demo"):
            return rng.choice(DEMO_PROMPTS).format(n=turn % 7)
        if agent == "kids":
            steps: list[dict[str, Any]] = [{"spawn": ["sleep", "600"]},
                                           {"update": {"sessionUpdate": "agent_message_chunk",
                                                       "content": {"type": "text",
                                                                   "text": "working\n"}}}]
            roll = rng.random()
            if roll < 0.25:
                steps.append({"hang": True, "deaf": rng.random() < 0.5})  # watchdog or kill
            else:
                steps.append({"sleep": rng.uniform(0.1, 1.5)})
            return json.dumps(steps)
        count = rng.choice([5, 40, 120, 300])
        return json.dumps([{"flood": count, "kind": rng.choice(["edit", "execute", "read"])}])

    async def worker(self, registry: Any, agent: str, index: int) -> None:
        from louise.acp.errors import AcpError

        session_id: str | None = None
        turn = 0
        while time.monotonic() < self.deadline:
            turn += 1
            started = time.monotonic()
            try:
                if session_id is None:
                    with anyio.fail_after(STUCK_AFTER):
                        session = await registry.new_session(agent, str(self.workspace))
                    session_id = session.session_id
                text = self.prompt_for(agent, turn)
                self.figures.prompts += 1
                started = time.monotonic()
                with anyio.fail_after(STUCK_AFTER):
                    reason = await registry.prompt(session_id, text)
                self.figures.count(f"stop:{reason}")
            except TimeoutError:
                self.figures.stuck.append(f"{agent}#{index} turn {turn} "
                                          f"({time.monotonic() - started:.0f} s)")
                return
            except (AcpError, OSError) as exc:
                self.figures.count(type(exc).__name__)
                self.errors.append(str(exc).split("\n")[0][:160])
                if session_id is not None and registry.session(session_id).status == "error":
                    # An agent that cannot reattach it (the fakes have no session/load):
                    # close it and go on in a new one.
                    with anyio.fail_after(STUCK_AFTER):
                        await registry.close_session(session_id)
                    session_id = None
                await anyio.sleep(self.rng.uniform(0, 0.3))
            self.collect_children(registry, session_id)

    def collect_children(self, registry: Any, session_id: str | None) -> None:
        if session_id is None:
            return
        try:
            session = registry.session(session_id)
        except Exception:
            return
        for message in session.messages()[-6:]:
            if message.role == "agent":
                for line in message.text.splitlines():
                    if line.startswith("SPAWNED "):
                        pid = int(line.split()[1])
                        if pid not in self.child_pids:
                            self.child_pids.add(pid)
                            self.figures.children_spawned += 1

    def note_agents(self, registry: Any) -> None:
        for name in registry.agent_names():
            connection = registry.runtime(name).connection
            if connection is not None and connection.process.pid is not None:
                if connection.process.pid not in self.agent_pids:
                    self.agent_pids.add(connection.process.pid)

    async def chaos(self, registry: Any) -> None:
        while time.monotonic() < self.deadline - 2:
            await anyio.sleep(self.rng.uniform(1.0, 4.0))
            self.note_agents(registry)
            running = []
            for name in registry.agent_names():
                connection = registry.runtime(name).connection
                if connection is not None and connection.is_open and connection.process.pid:
                    busy = any(s.in_turn for s in registry.sessions(name))
                    running.append((busy, name, connection.process.pid))
            if not running:
                continue
            busy = [r for r in running if r[0]]
            _, name, pid = self.rng.choice(busy or running)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
            self.figures.kills += 1
            self.figures.kills_mid_turn += bool(busy)

    async def sample(self) -> None:
        start = time.monotonic()
        while time.monotonic() < self.deadline:
            self.figures.samples.append((round(time.monotonic() - start, 1), open_fds(),
                                         rss_kib()))
            await anyio.sleep(SAMPLE_EVERY)

    async def run(self) -> Figures:
        from louise.registry import SessionRegistry
        from louise.registry.events import AgentStatus
        from louise.session import TURN_STATUSES

        decider = RandomDecider(self.rng)
        self.figures.fds_before = open_fds()
        registry = SessionRegistry(self.config(), decider=decider, permission_memory=None,
                                   limits_cache=None, grace_seconds=0.5)

        def on_event(event: Any) -> None:
            if isinstance(event, AgentStatus) and event.state == "running":
                self.figures.restarts += 1

        started = time.monotonic()
        self.deadline = started + self.seconds
        async with registry:
            registry.subscribe(on_event)
            async with anyio.create_task_group() as tg:
                for name in registry.agent_names():
                    if name == "demo":
                        continue
                    for index in range(SESSIONS_PER_AGENT):
                        tg.start_soon(self.worker, registry, name, index)
                tg.start_soon(self.chaos, registry)
                tg.start_soon(self.sample)
            self.note_agents(registry)
            for session in registry.sessions():
                if session.status in TURN_STATUSES:
                    self.figures.left_in_turn.append(session.session_id)
            self.figures.permissions_left = len(registry.broker.pending())
        self.figures.permissions_answered = decider.answered
        self.figures.restarts = max(0, self.figures.restarts - 4)  # the first starts
        self.figures.seconds = time.monotonic() - started
        # Closed: every agent and every child they started must be gone (give the kernel
        # a moment to reap).
        with anyio.move_on_after(10):
            while living(self.agent_pids | self.child_pids) or group_members(self.agent_pids):
                await anyio.sleep(0.1)
        self.figures.orphans = sorted(set(living(self.agent_pids | self.child_pids))
                                      | set(group_members(self.agent_pids)))
        self.figures.fds_after = open_fds()
        return self.figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    # The chaos makes warnings by the hundred (agents exiting, turns cancelled for silence).
    logging.getLogger("louise").setLevel(logging.ERROR)
    state = tempfile.TemporaryDirectory(prefix="louise-soak-")
    os.environ["LOUISE_STATE_DIR"] = state.name
    workspace = Path(state.name) / "work"
    workspace.mkdir()
    (workspace / "README.md").write_text("# soak workspace\n")
    figures = anyio.run(Soak(args.seconds, args.seed, workspace).run)
    report = figures.report()
    state.cleanup()
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"soak: {report['seconds']} s, seed {report['seed']}: {report['prompts']} prompts, "
              f"{report['kills']} SIGKILLs ({report['kills_mid_turn']} mid-turn), "
              f"{report['restarts']} restarts, {report['children_spawned']} children with "
              f"the agent's stdout, {report['permissions_answered']} permissions answered")
        print(f"outcomes: {report['outcomes']}")
        fds, rss = report["fds"], report["rss_mib"]
        print(f"open fds: {fds['before']} before, median {fds['early_median']:.0f} early -> "
              f"{fds['late_median']:.0f} late (max {fds['max']}), {fds['after_close']} "
              "after close")
        print(f"RSS: median {rss['early_median']} MiB early -> {rss['late_median']} MiB late "
              f"(max {rss['max']} MiB)")
        print("failures: " + ("; ".join(report["failures"]) or "none"))
    return 1 if report["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
