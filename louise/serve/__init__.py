"""`louise serve`: the session host, an ACP multiplexing proxy.

One process per person per machine owns the agent processes and their sessions; front
ends attach to it over a Unix socket (or a command's stdio) and detach, and each sees
it as an ACP agent. `hello.py` is the one line a front end writes first (the attach
hello); `router.py` the routing between front ends and an agent (pure); `replay.py` a
session's bounded history for a front end that loads it again; `agent_link.py` one agent
process; `host.py` the socket server; `run.py` the entries.
"""
