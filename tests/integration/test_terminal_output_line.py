"""What louise sends an agent for `terminal/output` stays within the limits it enforces on
what it reads (issue 21 item 10): over real stdio, the scripted fake agent creates a
terminal whose command prints 16 MiB of NUL bytes (each one 6 bytes in JSON: `\\u0000`)
and reads its output back, as claude-agent-acp does (create, wait_for_exit, output,
release). The fake measures the line it received."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from louise.acp.peer_limits import PeerLimits
from louise.capabilities.terminal import MAX_OUTPUT_BYTE_LIMIT, MAX_OUTPUT_JSON_BYTES
from tests.integration.test_gate import answers, config, registry, run
from tests.integration.test_registry import ScriptedDecider

pytestmark = pytest.mark.anyio
MIB = 1024 * 1024


def read_back(command: list[str], limit: int) -> list[dict[str, Any]]:
    return [
        {"request": "terminal/create", "params": {"command": command[0], "args": command[1:],
                                                  "outputByteLimit": limit}},
        {"request": "terminal/wait_for_exit", "params": {"terminalId": "$terminalId"}},
        {"request": "terminal/output", "params": {"terminalId": "$terminalId"},
         "measure": True},
        {"request": "terminal/release", "params": {"terminalId": "$terminalId"}},
    ]


async def test_16_mib_of_nul_bytes_come_back_within_the_line_limit(tmp_path: Path) -> None:
    nuls = [sys.executable, "-c", "import sys; sys.stdout.buffer.write(bytes(16 * 2**20))"]
    async with registry(config(), ScriptedDecider("allow_once")) as reg:
        sid = await run(reg, tmp_path, read_back(nuls, MAX_OUTPUT_BYTE_LIMIT))
        got = dict(answers(reg, sid))
    assert got["terminal/wait_for_exit"] == {"exitCode": 0, "signal": None}
    measured = got["terminal/output"]
    assert measured["truncated"] is True
    assert measured["lineBytes"] <= PeerLimits().max_line_bytes, "louise's own inbound limit"
    assert measured["lineBytes"] <= MAX_OUTPUT_JSON_BYTES + 1024, \
        "the output counted as JSON encodes it"
    assert measured["outputChars"] >= (MAX_OUTPUT_JSON_BYTES - 1024) // 6, \
        "as much of the output as fits is sent"


async def test_plain_output_within_the_limit_comes_back_whole(tmp_path: Path) -> None:
    text = 'line "one"\ttab\\ é\n' * 100
    printer = [sys.executable, "-c", f"import sys; sys.stdout.write({text!r})"]
    async with registry(config(), ScriptedDecider("allow_once")) as reg:
        sid = await run(reg, tmp_path, read_back(printer, MIB))
        got = dict(answers(reg, sid))
    assert got["terminal/output"]["truncated"] is False
    assert got["terminal/output"]["outputChars"] == len(text)
    encoded = len(json.dumps(text, ensure_ascii=False).encode())
    assert got["terminal/output"]["lineBytes"] < encoded + 200
