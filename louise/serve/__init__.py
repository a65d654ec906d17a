"""`louise serve`: the session host, an ACP multiplexing proxy.

One process per person per machine owns the agent processes (one per agent command) and
their sessions; front ends attach to it over a Unix socket in louise's private state
directory (or a command's stdio) and detach, and each sees it as an ACP agent.

The wire, beside plain ACP (NDJSON JSON-RPC) both ways:
- the attach hello, the first line a front end writes (`hello.py`); a connection without
  it is served as the configured default agent;
- host -> front end, notification `_louise/permission_answered` `{sessionId,
  toolCallId, outcome, by, optionKind?, optionName?}`: a permission request this front
  end was asked was answered elsewhere (`by` words who: "Neovim (pid 123)", "louise chat
  (pid 9)", "louise serve (configured rules)"); it comes right after `$/cancel_request`
  for that request's id;
- host -> front end, notification `_louise/turn_ended` `{sessionId, stopReason}`: a
  turn this front end did not prompt ended (ACP tells only the prompt's sender);
- the `_louise/*` methods are the host's alone: one an agent sends is not passed on (a
  request gets method-not-found);
- `_meta.louise` `{askedAt: unix seconds, waitedSeconds}` on a permission request sent
  again to a front end that attached after it was asked;
- `_meta.louise` `{turnRunning, queuedPrompts}` on the answer to a `session/load` or
  `session/resume` of a session the host has live;
- `_meta.louise` `{replay: true}` on the `session/update`s of a session's history, sent
  once to a front end that loads a session the host has live.

Modules, bottom up: `hello.py` the hello; `routing.py` what the routing parts share;
`replay.py` a session's bounded history (and the updates before it exists);
`records.py` what the router holds; `request_ids.py` ids remapped both ways;
`questions.py` permission requests, first answer wins; `router.py` sessions, the one
prompt queue per session (pure);
`permissions.py` the configured rules' automatic answers; `host_answers.py` the host's
own `fs/*` and `terminal/*`; `agent_link.py` one agent process; `host.py` the server;
`run.py` the entries (`run_host`, `serve_stdio_connection`).
"""
