#!/usr/bin/env python3
"""A minimal MCP server over stdio (stdlib only), for the real-agent tests: it appends one
line per message it gets to the file named by MCP_PROBE_LOG (so a test sees that an agent
really started it and talked to it), and offers one tool, `louise_probe`."""

from __future__ import annotations

import json
import os
import sys

LOG = os.environ.get("MCP_PROBE_LOG", "")


def log(entry: str) -> None:
    if LOG:
        with open(LOG, "a", encoding="utf-8") as handle:
            handle.write(entry + "\n")


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> int:
    log(f"started {' '.join(sys.argv[1:])}")
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        method, ident = message.get("method"), message.get("id")
        log(str(method))
        if ident is None:
            continue
        if method == "initialize":
            version = (message.get("params") or {}).get("protocolVersion", "2025-06-18")
            result: object = {"protocolVersion": version, "capabilities": {"tools": {}},
                              "serverInfo": {"name": "louise-probe", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [{"name": "louise_probe", "description": "Says hello.",
                                 "inputSchema": {"type": "object", "properties": {}}}]}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": "hello from the probe"}]}
        elif method == "ping":
            result = {}
        else:
            send({"jsonrpc": "2.0", "id": ident,
                  "error": {"code": -32601, "message": "Method not found"}})
            continue
        send({"jsonrpc": "2.0", "id": ident, "result": result})
    return 0


if __name__ == "__main__":
    sys.exit(main())
