"""`louise.storage.transcript`: replaying a recorded JSONL transcript into a `Session`, how
its turns end, and resolving a session reference to its file (the Markdown export:
test_transcript_export.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from louise.session import Notice
from louise.storage import transcript, transcript_files
from louise.storage.transcript import load, to_markdown
from louise.storage.transcript_files import (
    AmbiguousTranscript,
    TranscriptNotFound,
    find_transcripts,
    resolve,
)

CWD = "/projects/hello"


def jsonl(*records: dict[str, Any] | str) -> str:
    """Records as the registry writes them; a str is written as a raw (bad) line."""
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)


def session_line(session_id: str = "sess-42", agent: str = "demo", cwd: str = CWD
                 ) -> dict[str, Any]:
    return {"t": 1.0, "type": "session", "agent": agent, "cwd": cwd, "sessionId": session_id}


def prompt_line(text: str) -> dict[str, Any]:
    return {"t": 2.0, "type": "prompt", "prompt": [{"type": "text", "text": text}]}


def update_line(**update: Any) -> dict[str, Any]:
    return {"t": 2.1, "type": "update", "update": update}


def chunk(text: str, message_id: str | None = None, kind: str = "agent_message_chunk"
          ) -> dict[str, Any]:
    update: dict[str, Any] = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
    if message_id:
        update["messageId"] = message_id
    return {"t": 2.2, "type": "update", "update": update}


def turn_end(reason: str, error: str | None = None) -> dict[str, Any]:
    record: dict[str, Any] = {"t": 3.0, "type": "turn_end", "stopReason": reason}
    if error is not None:
        record["error"] = error
    return record


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / "transcripts" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


HELLO = jsonl(
    session_line(),
    update_line(sessionUpdate="available_commands_update",
                availableCommands=[{"name": "help", "description": "Show help", "input": None}]),
    prompt_line("Create hello.py"),
    chunk("The file does not exist yet.\n\nI will create it.", "th-1", "agent_thought_chunk"),
    update_line(sessionUpdate="plan", entries=[
        {"content": "Write hello.py", "priority": "high", "status": "completed"},
        {"content": "Run it", "priority": "low", "status": "in_progress"},
        {"content": "Tell the person", "priority": "low", "status": "pending"}]),
    chunk("I'll create ", "m-1"),
    chunk("`hello.py`.", "m-1"),
    update_line(sessionUpdate="tool_call", toolCallId="call-1", title="Edit hello.py",
                kind="edit", status="pending",
                content=[{"type": "diff", "path": f"{CWD}/hello.py", "oldText": None,
                          "newText": "print('hello')\n"}],
                locations=[{"path": f"{CWD}/hello.py"}]),
    {"t": 2.5, "type": "permission", "title": "Edit hello.py", "kind": "edit",
     "outcome": "selected:allow-once"},
    update_line(sessionUpdate="tool_call_update", toolCallId="call-1", status="completed"),
    update_line(sessionUpdate="tool_call", toolCallId="call-2", title="Run python hello.py",
                kind="execute", status="completed",
                content=[{"type": "content", "content": {"type": "text", "text": "hello\n"}}]),
    chunk("Done.", "m-2"),
    turn_end("end_turn"),
    prompt_line("Now greet the world"),
    update_line(sessionUpdate="tool_call", toolCallId="call-3", title="Edit hello.py",
                kind="edit", status="in_progress",
                content=[{"type": "diff", "path": f"{CWD}/hello.py",
                          "oldText": "import sys\nprint('hello')\n",
                          "newText": "import sys\nprint('hello, world')\n"}]),
    turn_end("max_tokens"),
    update_line(sessionUpdate="usage_update", used=1200, size=200000,
                cost={"amount": 0.25, "currency": "USD"}),
)

HELLO_MARKDOWN = """\
# demo session `sess-42`

- **Agent:** `demo`
- **Session:** `sess-42`
- **Working directory:** `/projects/hello`
- **Usage:** 1200 of 200000 tokens, 0.25 USD

## You

Create hello.py

## Agent

> 💭 The file does not exist yet.
>
> I will create it.

I'll create `hello.py`.

- ✏ **Edit hello.py** — completed

```diff
--- /dev/null
+++ b/hello.py
@@ -0,0 +1 @@
+print('hello')
```

*permission for Edit hello.py (edit): selected:allow-once*

- $ **Run python hello.py** — completed

```
hello
```

Done.

## You

Now greet the world

## Agent

- ✏ **Edit hello.py** — in progress

```diff
--- a/hello.py
+++ b/hello.py
@@ -1,2 +1,2 @@
 import sys
-print('hello')
+print('hello, world')
```

*stopped: the model reached its token limit*

## Plan

- [x] Write hello.py
- [ ] Run it *(in progress)*
- [ ] Tell the person
"""


# ----------------------------------------------------------------------------- replay


def test_a_transcript_replays_into_the_session_it_recorded(tmp_path: Path) -> None:
    result = load(write(tmp_path, "demo--sess-42.jsonl", HELLO))
    session = result.session

    assert result.skipped_lines == 0
    assert (session.session_id, session.agent, session.cwd) == ("sess-42", "demo", CWD)
    assert (session.status, session.turn, session.last_stop_reason) == \
        ("ready", 2, "max_tokens")
    assert [(m.role, m.text) for m in session.messages()] == [
        ("user", "Create hello.py"),
        ("thought", "The file does not exist yet.\n\nI will create it."),
        ("agent", "I'll create `hello.py`."),
        ("agent", "Done."),
        ("user", "Now greet the world")]
    assert {k: r.display_status for k, r in session.tool_calls.items()} == \
        {"call-1": "completed", "call-2": "completed", "call-3": "in_progress"}
    assert session.commands == [{"name": "help", "description": "Show help", "input": None}]
    assert (session.usage_used, session.cost) == (1200, {"amount": 0.25, "currency": "USD"})


def test_the_markdown_of_a_transcript(tmp_path: Path) -> None:
    session = load(write(tmp_path, "demo--sess-42.jsonl", HELLO)).session
    assert to_markdown(session) == HELLO_MARKDOWN


def test_malformed_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    text = jsonl(
        session_line(),
        "not json at all",
        "[1, 2, 3]",
        '{"type": "prompt", "prompt": "not a list"}',
        '{"type": "update", "update": "not an object"}',
        '{"type": "update"}',
        '{"type": "what_is_this"}',
        '{"no": "type"}',
        turn_end("end_turn"),  # no turn is open
        "",  # blank lines are not malformed
        prompt_line("Hi"),
        '{"type": "update", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type"',
        chunk("Hello!"),
        turn_end("end_turn"),
    )
    path = write(tmp_path, "demo--sess-42.jsonl", text)
    with open(path, "ab") as handle:
        handle.write(b'{"type": "session", "cwd": "\xff\xfe"}\n')  # not UTF-8
    result = load(path)

    assert result.skipped_lines == 10
    assert [(m.role, m.text) for m in result.session.messages()] == \
        [("user", "Hi"), ("agent", "Hello!")]
    assert result.session.status == "ready"


def test_lines_over_the_bound_are_skipped_unread(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    fits = chunk("y" * 50)
    one_byte_over = chunk("x" * 51)
    monkeypatch.setattr(transcript, "MAX_LINE_BYTES", len(json.dumps(fits)))
    text = jsonl(session_line(), prompt_line("Hi"), one_byte_over, fits,
                 chunk("z" * 5000), turn_end("end_turn"))
    result = load(write(tmp_path, "demo--sess-42.jsonl", text))

    assert result.skipped_lines == 2
    assert [m.text for m in result.session.messages()] == ["Hi", "y" * 50]
    assert result.session.last_stop_reason == "end_turn"  # the line after a skipped one is read
    skipped = f"a line over {len(json.dumps(fits))} bytes was skipped unread here"
    assert [e.text for e in result.session.entries if isinstance(e, Notice)] == [skipped] * 2
    assert to_markdown(result.session).count(f"*{skipped}*") == 2, "the export says so"


def test_a_last_line_without_newline_is_read(tmp_path: Path) -> None:
    text = jsonl(session_line(), prompt_line("Hi")) + json.dumps(chunk("tail"))
    result = load(write(tmp_path, "demo--sess-42.jsonl", text))
    assert ([m.text for m in result.session.messages()], result.skipped_lines) == \
        (["Hi", "tail"], 0)


def test_without_a_session_line_the_file_name_names_the_session(tmp_path: Path) -> None:
    session = load(write(tmp_path, "codex--0199-abc.jsonl",
                         jsonl(prompt_line("Hi"), turn_end("end_turn")))).session
    assert (session.agent, session.session_id, session.cwd) == ("codex", "0199-abc", "")
    assert to_markdown(session).startswith(
        "# codex session `0199-abc`\n\n- **Agent:** `codex`\n- **Session:** `0199-abc`\n"
        "- **Working directory:** (none)\n\n## You\n\nHi\n")


def test_an_empty_file_is_an_empty_session(tmp_path: Path) -> None:
    result = load(write(tmp_path, "demo--empty.jsonl", ""))
    assert (result.session.session_id, list(result.session.entries), result.skipped_lines) == \
        ("empty", [], 0)


def test_a_missing_file_raises_oserror(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "nope.jsonl")


# ----------------------------------------------------------------------------- turn endings


def _markdown_of(tmp_path: Path, *records: dict[str, Any] | str) -> str:
    return to_markdown(load(write(tmp_path, "demo--sess-42.jsonl",
                                  jsonl(session_line(), *records))).session)


def _body(markdown: str) -> str:
    return markdown.split("\n\n## You\n\n", 1)[1]


def test_a_cancelled_turn_is_quiet_even_with_the_error_the_registry_records(tmp_path: Path
                                                                            ) -> None:
    markdown = _markdown_of(
        tmp_path, prompt_line("Go"),
        update_line(sessionUpdate="tool_call", toolCallId="c1", title="Run `make`",
                    kind="execute", status="in_progress"),
        turn_end("cancelled", "claude: Internal error"))
    assert _body(markdown) == "Go\n\n## Agent\n\n- $ **Run \\`make\\`** — cancelled\n\n" \
        "*cancelled*\n"


@pytest.mark.parametrize(("reason", "line"), [
    ("refusal", "*the agent refused; this prompt and what followed are not in its context*"),
    ("max_turn_requests", "*stopped: the turn reached its request limit*"),
])
def test_stop_notices_are_in_italics(tmp_path: Path, reason: str, line: str) -> None:
    markdown = _markdown_of(tmp_path, prompt_line("Go"), chunk("Partial"), turn_end(reason))
    assert _body(markdown) == f"Go\n\n## Agent\n\nPartial\n\n{line}\n"


def test_an_error_turn_shows_the_error(tmp_path: Path) -> None:
    markdown = _markdown_of(
        tmp_path, prompt_line("Go"),
        turn_end("error", "claude needs authentication (Authentication required).\nSign in"))
    assert _body(markdown) == \
        "Go\n\n*error: claude needs authentication (Authentication required). Sign in*\n"


def test_a_turn_without_a_reply_is_closed_by_the_next_prompt_or_noted_at_the_end(
        tmp_path: Path) -> None:
    markdown = _markdown_of(tmp_path, prompt_line("One"), chunk("Working"),
                            prompt_line("Two"))
    assert _body(markdown) == (
        "One\n\n## Agent\n\nWorking\n\n*error: the transcript has no reply for this turn*\n\n"
        "## You\n\nTwo\n\n*the transcript ends before the agent's reply*\n")


def test_a_reopened_session_shows_the_agents_replay_as_replayed(tmp_path: Path) -> None:
    markdown = _markdown_of(
        tmp_path, prompt_line("Hi"), chunk("Hello"), turn_end("end_turn"),
        session_line(cwd="/projects/other"),
        chunk("Hi", kind="user_message_chunk"), chunk("Hello"),
        prompt_line("Again"), chunk("Sure"), turn_end("end_turn"))
    assert _body(markdown) == (
        "Hi\n\n## Agent\n\nHello\n\n## You (replayed)\n\nHi\n\n## Agent (replayed)\n\nHello\n\n"
        "## You\n\nAgain\n\n## Agent\n\nSure\n")
    assert "- **Working directory:** `/projects/other`" in markdown


def test_a_reload_replaces_what_came_before_as_on_screen(tmp_path: Path) -> None:
    reload = {**session_line(), "attach": "load"}
    markdown = _markdown_of(
        tmp_path, prompt_line("Hi"), chunk("Hel", "m1"), chunk("lo", "m1"), turn_end("end_turn"),
        reload, chunk("Hi", "u1", kind="user_message_chunk"), chunk("Hello", "m1"),
        prompt_line("Again"), chunk("Sure", "m2"), turn_end("end_turn"))
    assert markdown.endswith(
        "\n\n## You (replayed)\n\nHi\n\n## Agent (replayed)\n\nHello\n\n"
        "## You\n\nAgain\n\n## Agent\n\nSure\n")
    assert markdown.count("Hello") == 1 and markdown.count("Hi\n") == 1


def test_an_older_reopen_does_not_double_a_message_it_already_holds(tmp_path: Path) -> None:
    markdown = _markdown_of(
        tmp_path, prompt_line("Hi"), chunk("Hello", "m1"), turn_end("end_turn"),
        session_line(), chunk("Hello", "m1"), prompt_line("Again"), turn_end("end_turn"))
    assert markdown.count("Hello") == 1


def test_rename_dropped_and_omitted_records_show(tmp_path: Path) -> None:
    markdown = _markdown_of(
        tmp_path, {"t": 1.5, "type": "rename", "name": "greeting fix"}, prompt_line("Go"),
        {"t": 2.0, "type": "dropped", "count": 12},
        {"t": 2.1, "type": "omitted", "record": "update", "bytes": 99_000_000},
        turn_end("end_turn"))
    assert "- **Name:** greeting fix" in markdown
    assert "*12 records missing here: the transcript writer fell behind the agent*" in markdown
    assert "*a update record of 99000000 bytes is missing here: it was too large to keep*" \
        in markdown


def test_a_truncated_transcript_says_so(tmp_path: Path) -> None:
    markdown = _markdown_of(tmp_path, prompt_line("Go"), chunk("Lots"),
                            {"type": "truncated", "limit": 67108864})
    assert _body(markdown) == (
        "Go\n\n## Agent\n\nLots\n\n"
        "*the transcript stops here: it reached its size limit (67108864 bytes)*\n\n"
        "*the transcript ends before the agent's reply*\n")


# ----------------------------------------------------------------------------- finding


def test_find_transcripts_lists_jsonl_files_sorted(tmp_path: Path) -> None:
    assert find_transcripts(tmp_path) == []
    write(tmp_path, "demo--b.jsonl", "")
    write(tmp_path, "codex--a.jsonl", "")
    write(tmp_path, "notes.txt", "")
    (tmp_path / "transcripts" / "dir.jsonl").mkdir()
    assert [p.name for p in find_transcripts(tmp_path)] == ["codex--a.jsonl", "demo--b.jsonl"]


@pytest.fixture
def state(tmp_path: Path) -> Path:
    for name in ("demo--4f2a9c01-aaaa.jsonl", "demo--4f2b0000-bbbb.jsonl",
                 "demo--abc.jsonl", "demo--abcd.jsonl", "codex--shared-id.jsonl",
                 "demo--shared-id.jsonl", "demo--a_b.jsonl"):
        write(tmp_path, name, "")
    return tmp_path


@pytest.mark.parametrize(("ref", "name"), [
    ("4f2a9c01-aaaa", "demo--4f2a9c01-aaaa.jsonl"),  # a full id
    ("4f2a", "demo--4f2a9c01-aaaa.jsonl"),  # a unique prefix
    ("  4f2b ", "demo--4f2b0000-bbbb.jsonl"),
    ("abc", "demo--abc.jsonl"),  # an exact id wins over a longer id it prefixes
    ("codex--shared-id", "codex--shared-id.jsonl"),  # AGENT--SESSION
    ("codex--sh", "codex--shared-id.jsonl"),
    ("codex:shared-id", "codex--shared-id.jsonl"),  # the registry's session key
    ("demo:sh", "demo--shared-id.jsonl"),
    ("a/b", "demo--a_b.jsonl"),  # spelled as the registry spells file names
])
def test_resolve_finds_one_transcript(state: Path, ref: str, name: str) -> None:
    assert resolve(ref, state) == state / "transcripts" / name


def test_file_names_of_lookalike_ids_differ_and_resolve_exactly(tmp_path: Path) -> None:
    pairs = [("demo", "s/1"), ("demo", "s_1"), ("a", "-x"), ("a-", "x")]
    names = [transcript_files.file_name(agent, session) for agent, session in pairs]
    assert len(set(names)) == 4
    assert names[0].startswith("demo@s_1@") and names[0].endswith(".jsonl")
    for name in names:
        write(tmp_path, name, "")
    for (agent, session), name in zip(pairs, names, strict=True):
        assert resolve(f"{agent}:{session}", tmp_path).name == name
    assert resolve("s/1", tmp_path).name == names[0], "an exact id needs no agent"
    with pytest.raises(AmbiguousTranscript):
        resolve("s_", tmp_path)  # a prefix of both


def test_resolve_takes_a_file_path(state: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "copy.jsonl"
    elsewhere.write_text("")
    assert resolve(str(elsewhere), state) == elsewhere


@pytest.mark.parametrize(("ref", "message"), [
    ("4f2", "session '4f2' is ambiguous: it matches 2 transcripts "
            "(demo--4f2a9c01-aaaa, demo--4f2b0000-bbbb); give more of the id, or AGENT:SESSION"),
    ("shared-id", "session 'shared-id' is ambiguous: it matches 2 transcripts "
                  "(codex--shared-id, demo--shared-id); give more of the id, or AGENT:SESSION"),
])
def test_resolve_refuses_an_ambiguous_reference(state: Path, ref: str, message: str) -> None:
    with pytest.raises(AmbiguousTranscript) as caught:
        resolve(ref, state)
    assert str(caught.value) == message


def test_resolve_refuses_a_missing_reference(state: Path, tmp_path: Path) -> None:
    where = state / "transcripts"
    with pytest.raises(TranscriptNotFound) as caught:
        resolve("zzz", state)
    assert str(caught.value) == f"no session 'zzz' in {where} (7 transcripts there)"

    with pytest.raises(TranscriptNotFound) as caught:
        resolve("zzz", tmp_path / "empty-state")
    assert str(caught.value) == \
        f"no session 'zzz' in {tmp_path / 'empty-state' / 'transcripts'} (no transcripts there)"

    with pytest.raises(TranscriptNotFound, match=r"^no session given$"):
        resolve("  ", state)

    missing = str(tmp_path / "gone.jsonl")
    with pytest.raises(TranscriptNotFound) as caught:
        resolve(missing, state)
    assert str(caught.value) == f"no transcript file {missing!r} and no session {missing!r}" \
        f" in {where}"
