"""`python -m tests.real_agents.model_api --log DIR [--port N] [--port-file FILE]`."""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path

from tests.real_agents import mock_ratelimits
from tests.real_agents.model_api.anthropic import Messages
from tests.real_agents.model_api.gemini import Gemini
from tests.real_agents.model_api.openai_chat import ChatCompletions
from tests.real_agents.model_api.openai_responses import Responses
from tests.real_agents.model_api.server import ModelApiServer, RequestLog
from tests.real_agents.model_api.wire import Dialect


def serve() -> None:
    options = argparse.ArgumentParser(prog="model_api", description=__doc__)
    options.add_argument("--log", type=Path, required=True,
                         help="directory of requests.jsonl")
    options.add_argument("--port", type=int, default=0, help="0: any free port")
    options.add_argument("--port-file", type=Path,
                         help="written with the port once the server listens")
    options.add_argument("--pace", type=float, default=0.03,
                         help="seconds between streamed events")
    options.add_argument("--verbose", action="store_true", help="log each request on stderr")
    args = options.parse_args()
    args.log.mkdir(parents=True, exist_ok=True)
    limits = mock_ratelimits.from_environment()
    dialects: list[Dialect] = [Messages(limits), Responses(limits), ChatCompletions(),
                               Gemini()]
    server = ModelApiServer(args.port, dialects, RequestLog(args.log / "requests.jsonl"),
                            args.pace, args.verbose)
    if args.port_file is not None:
        # Written whole, then renamed: whoever waits for the file never reads half of it.
        partial = args.port_file.with_name(args.port_file.name + ".partial")
        partial.write_text(str(server.port))
        os.replace(partial, args.port_file)
    print(f"model api on http://127.0.0.1:{server.port}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()


if __name__ == "__main__":
    serve()
