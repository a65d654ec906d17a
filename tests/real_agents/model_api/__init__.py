"""louise's offline model API for the real-agent suite (stdlib only).

Real ACP agents pointed at it run whole turns with no network and no account:

    python -m tests.real_agents.model_api --log DIR [--port 0] [--port-file FILE]

run from the repository's root. It serves, on 127.0.0.1, one module per API dialect:
`anthropic.py` (Anthropic Messages: claude-agent-acp), `openai_responses.py` (OpenAI
Responses: codex-acp), `openai_chat.py` (OpenAI Chat Completions: vibe-acp, qwen-code) and
`gemini.py` (the Gemini API: gemini-cli).
Another API is one more module with a `Dialect` (wire.py), listed in `__main__.py`.

What the "model" does is the same through every dialect (`scenario.py`), chosen by the last
marker in the latest user prompt, with the agent's own tools (`tools.py`):

- no marker: a reply in several pieces, with a fenced code block;
- `MOCK-EDIT <abs path>`: edit the file (line `old line` becomes `new line by mock`);
- `MOCK-EDIT2 <abs path>`: edit two separate lines of the file (`first old` and `second
  old` become `first new by mock` and `second new by mock`): two hunks in one turn;
- `MOCK-WRITE <abs path>`: create the file (`written by mock`);
- `MOCK-SHELL`: run `echo hello-from-shell | tee shell-out.txt`;
- `MOCK-ASK`: ask the person a question (Red or Blue) with the agent's ask tool;
- `MOCK-THINK`: think first (thought pieces), then reply;
- `MOCK-SLOW`: 60 pieces 0.25 s apart, to cancel midway;
- `MOCK-ERROR <status>`: answer that HTTP error (400, 401, 403, 429, 500) instead.

After its tool calls a scenario ends with a text quoting the last tool result. A request
offering no tools (a title, a summary) gets a short reply. Every request is one line of
`DIR/requests.jsonl` (path, dialect, scenario as `kind`, step, prompt, tools, the whole
body); the port, once listening, is written to the port file. The rate-limit headers come
from `tests/real_agents/mock_ratelimits.py`.
"""
