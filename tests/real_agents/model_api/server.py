"""The HTTP side: one thread per connection on 127.0.0.1, each request handed to the first
dialect that takes it, its answer written as JSON or as server-sent events (paced, so a
turn streams as a model's would), and every exchange appended to the request log."""

from __future__ import annotations

import http.server
import json
import sys
import threading
import time
import zlib
from pathlib import Path

from tests.real_agents.model_api.wire import Answer, ApiRequest, Dialect, Json

MAX_BODY = 64 << 20  # bytes of a request body, also once decompressed
LOGGED_HEADERS = ("user-agent", "authorization", "x-api-key", "anthropic-version",
                  "anthropic-beta", "content-encoding")
# One model the catalogue endpoints (GET …/models) list, in the fields both APIs use.
CATALOGUE: Json = {
    "object": "list", "has_more": False, "first_id": "mock-model", "last_id": "mock-model",
    "data": [{"id": "mock-model", "object": "model", "type": "model", "owned_by": "mock",
              "display_name": "Mock Model", "created": 0,
              "created_at": "2025-01-01T00:00:00Z"}],
}


class RequestLog:
    """`requests.jsonl`: one JSON line per request, in the order they were answered."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def write(self, entry: Json) -> None:
        line = json.dumps({"t": round(time.time(), 3), **entry}, default=str) + "\n"
        with self._lock, self.path.open("a", encoding="utf-8") as out:
            out.write(line)


class ModelApiServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, dialects: list[Dialect], log: RequestLog,
                 pace: float, verbose: bool = False) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.dialects = dialects
        self.log = log
        self.pace = pace
        self.verbose = verbose

    @property
    def port(self) -> int:
        return int(self.server_address[1])


class BodyError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # JSON answers keep the connection; streams close it
    server: ModelApiServer

    def log_message(self, format: str, *args: object) -> None:
        if self.server.verbose:
            sys.stderr.write(f"model api: {format % args}\n")

    def respond(self) -> None:
        try:
            body = self.read_body() if self.command == "POST" else {}
        except BodyError as problem:
            self.server.log.write({"method": self.command, "path": self.path,
                                   "status": problem.status, "problem": str(problem)})
            self.send_json(problem.status, {"error": {"message": f"mock: {problem}"}})
            return
        self.route(body)

    do_GET = do_POST = respond  # the dialects tell requests apart by method and path

    def route(self, body: Json) -> None:
        path, _, query = self.path.partition("?")
        request = ApiRequest(self.command, path, query, body)
        entry: Json = {"method": self.command, "path": self.path, "headers": {
            k.lower(): v for k, v in self.headers.items() if k.lower() in LOGGED_HEADERS}}
        for dialect in self.server.dialects:
            answer = dialect.answer(request)
            if answer is not None:
                self.server.log.write({**entry, "dialect": dialect.name,
                                       "status": answer.status, **answer.log})
                self.send_answer(answer)
                return
        if self.command == "GET" and path.rstrip("/").endswith("/models"):
            self.server.log.write({**entry, "kind": "models"})
            self.send_json(200, CATALOGUE)
            return
        self.server.log.write({**entry, "kind": "unknown", "status": 404, "body": body})
        self.send_json(404, {"error": {"type": "not_found_error",
                                       "message": f"mock: nothing at {self.command} {path}"}})

    def read_body(self) -> Json:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raw = self.read_chunked()
        else:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                raise BodyError(413, f"a body of {length} bytes is too large")
            raw = self.rfile.read(length)
        encoding = self.headers.get("Content-Encoding", "identity").lower()
        if encoding in ("gzip", "deflate"):
            inflate = zlib.decompressobj(wbits=47)  # either header, detected
            raw = inflate.decompress(raw, MAX_BODY)
            if inflate.unconsumed_tail:
                raise BodyError(413, "the body is too large once decompressed")
        elif encoding != "identity":
            raise BodyError(415, f"cannot decode a {encoding} body")
        try:
            parsed = json.loads(raw or b"{}")
        except ValueError as bad:
            raise BodyError(400, f"the body is not JSON: {bad}") from None
        if not isinstance(parsed, dict):
            raise BodyError(400, "the body is not a JSON object")
        return parsed

    def read_chunked(self) -> bytes:
        raw = b""
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                self.rfile.readline()  # the blank line after the last chunk
                return raw
            if len(raw) + size > MAX_BODY:
                raise BodyError(413, "the chunked body is too large")
            raw += self.rfile.read(size)
            self.rfile.readline()

    def begin(self, status: int, headers: list[tuple[str, str]]) -> None:
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()

    def send_json(self, status: int, document: Json,
                  headers: list[tuple[str, str]] | None = None) -> None:
        payload = json.dumps(document).encode()
        self.begin(status, [("Content-Type", "application/json"),
                            ("Content-Length", str(len(payload))), *(headers or [])])
        self.wfile.write(payload)

    def send_answer(self, answer: Answer) -> None:
        if answer.document is not None:
            self.send_json(answer.status, answer.document, answer.headers)
            return
        # The stream ends when the connection closes: no length, no chunked framing.
        self.close_connection = True  # read by the handler once this request is answered
        self.begin(answer.status, [("Content-Type", "text/event-stream"),
                                   ("Cache-Control", "no-cache"), ("Connection", "close"),
                                   *answer.headers])
        pace = self.server.pace if answer.pace is None else answer.pace
        sent = 0
        try:
            for event in answer.events:
                if sent and pace:
                    time.sleep(pace)
                self.wfile.write(event.encode())  # unbuffered (wbufsize 0): sent at once
                sent += 1
        except (BrokenPipeError, ConnectionResetError) as gone:
            # The agent hung up mid-stream (a cancelled turn): say how far it got.
            self.server.log.write({"path": self.path, "kind": answer.log.get("kind"),
                                   "client_gone": type(gone).__name__, "events_sent": sent})
