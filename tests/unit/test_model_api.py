"""The real-agent suite's model API (tests/real_agents/model_api/), its pure parts: what the
scenario decides, how each dialect reads a request shaped like the agents' own (seen in
their request logs), and that each dialect's stream adds up to the scenario's reply."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.real_agents.model_api import anthropic, openai_chat, openai_responses, scenario
from tests.real_agents.model_api.scenario import Conversation, Refusal, Reply, decide
from tests.real_agents.model_api.tools import (
    NEW_LINE,
    OLD_LINE,
    SHELL_COMMAND,
    TWO_HUNKS,
    ToolCall,
)
from tests.real_agents.model_api.wire import Event

CLAUDE_TOOLS = ("Agent", "Bash", "Edit", "Read", "Skill", "Write")
CODEX_TOOLS = ("exec_command", "write_stdin", "request_user_input", "apply_patch",
               "web_search")
VIBE_TOOLS = ("read_file", "write_file", "edit", "bash", "todo")
TARGET = "/project/notes.txt"


def reply(prompt: str, tools: tuple[str, ...], *results: str) -> Reply:
    move = decide(Conversation(prompt, results, tools))
    assert isinstance(move, Reply), move
    return move


# ------------------------------------------------------------------------------ scenario


def test_the_last_marker_of_the_prompt_counts() -> None:
    # Claude Code resends a failed prompt together with the next one.
    assert scenario.marker(f"MOCK-ERROR 500\n\nMOCK-EDIT {TARGET}.") == ("edit", TARGET)
    assert scenario.marker("MOCK-ASK which colour?") == ("ask", "which")
    assert scenario.marker("MOCK-NOTHING here, MOCK-slow") == ("text", "")
    assert scenario.marker(f"MOCK-EDIT2 {TARGET}") == ("edit2", TARGET)
    assert scenario.marker(f"MOCK-EDIT2 {TARGET}\n\nMOCK-EDIT {TARGET}") == ("edit", TARGET)


def test_a_plain_prompt_gets_the_reply_with_a_code_fence() -> None:
    text = "".join(reply("hello", CLAUDE_TOOLS).text)
    assert text.startswith("Here is a streamed reply from the **mock** model.\n")
    assert "```python\ndef hello():\n    return 'world'\n```" in text
    assert text.endswith("That was a code fence; this is the end.")


def test_a_request_without_tools_gets_a_short_side_reply() -> None:
    move = reply(f"MOCK-EDIT {TARGET}", ())
    assert (move.scenario, move.text, move.calls) == ("side", ("Mock title",), ())


@pytest.mark.parametrize(("tools", "calls"), [
    (CLAUDE_TOOLS, [ToolCall("Read", {"file_path": TARGET}),
                    ToolCall("Edit", {"file_path": TARGET, "old_string": OLD_LINE,
                                      "new_string": NEW_LINE})]),
    (VIBE_TOOLS, [ToolCall("read_file", {"path": TARGET}),
                  ToolCall("edit", {"file_path": TARGET, "old_string": OLD_LINE,
                                    "new_string": NEW_LINE})]),
    (CODEX_TOOLS, [ToolCall("apply_patch", f"*** Begin Patch\n*** Update File: {TARGET}\n"
                                           f"@@\n-{OLD_LINE}\n+{NEW_LINE}\n*** End Patch\n")]),
])
def test_an_edit_is_one_tool_call_per_request_then_a_closing_text(
        tools: tuple[str, ...], calls: list[ToolCall]) -> None:
    results: list[str] = []
    for step, call in enumerate(calls):
        move = reply(f"MOCK-EDIT {TARGET}", tools, *results)
        assert (move.step, move.calls) == (step, (call,))
        results.append(f"result {step}\nof the tool")
    closing = "".join(reply(f"MOCK-EDIT {TARGET}", tools, *results).text)
    assert closing.endswith(f"Last tool result: result {len(calls) - 1} of the tool")


(FIRST_OLD, FIRST_NEW), (SECOND_OLD, SECOND_NEW) = TWO_HUNKS


def edit_call(tool: str, old: str, new: str) -> ToolCall:
    return ToolCall(tool, {"file_path": TARGET, "old_string": old, "new_string": new})


@pytest.mark.parametrize(("tools", "calls"), [
    (CLAUDE_TOOLS, [ToolCall("Read", {"file_path": TARGET}),
                    edit_call("Edit", FIRST_OLD, FIRST_NEW),
                    edit_call("Edit", SECOND_OLD, SECOND_NEW)]),
    (VIBE_TOOLS, [ToolCall("read_file", {"path": TARGET}),
                  edit_call("edit", FIRST_OLD, FIRST_NEW),
                  edit_call("edit", SECOND_OLD, SECOND_NEW)]),
    (CODEX_TOOLS, [ToolCall("apply_patch", f"*** Begin Patch\n*** Update File: {TARGET}\n"
                                           f"@@\n-{FIRST_OLD}\n+{FIRST_NEW}\n"
                                           f"@@\n-{SECOND_OLD}\n+{SECOND_NEW}\n"
                                           "*** End Patch\n")]),
])
def test_a_two_hunk_edit_is_two_edit_calls_or_one_patch_of_two_hunks(
        tools: tuple[str, ...], calls: list[ToolCall]) -> None:
    results: list[str] = []
    for step, call in enumerate(calls):
        move = reply(f"MOCK-EDIT2 {TARGET}", tools, *results)
        assert (move.scenario, move.step, move.calls) == ("edit2", step, (call,))
        results.append(f"result {step}")
    move = reply(f"MOCK-EDIT2 {TARGET}", tools, *results)
    assert move.calls == () and "".join(move.text).startswith("Done with the edit2 scenario.")


def test_the_two_edits_are_two_hunks_of_a_file_with_lines_between_them() -> None:
    """What the real-agent tests prepare: the two lines far enough apart (more than twice
    the diff's context) for the turn's review to show two hunks, not one."""
    from louise.checkpoints.diffs import CONTEXT_LINES, hunks, split_lines

    between = "".join(f"between {n}\n" for n in range(2 * CONTEXT_LINES + 1))
    before = f"{FIRST_OLD}\n{between}{SECOND_OLD}\n"
    after = before
    for step in (1, 2):  # after the Read
        [call] = reply(f"MOCK-EDIT2 {TARGET}", CLAUDE_TOOLS, *["a result"] * step).calls
        assert isinstance(call.arguments, dict)
        assert after.count(call.arguments["old_string"]) == 1, "Edit's old_string is unique"
        after = after.replace(call.arguments["old_string"], call.arguments["new_string"])
    assert after == f"{FIRST_NEW}\n{between}{SECOND_NEW}\n"
    found = hunks(split_lines(before.encode()), split_lines(after.encode()))
    assert [(h.removed, h.added) for h in found] == [(1, 1), (1, 1)]


def test_each_agent_runs_the_shell_command_with_its_own_tool() -> None:
    assert reply("MOCK-SHELL", CLAUDE_TOOLS).calls[0].name == "Bash"
    assert reply("MOCK-SHELL", VIBE_TOOLS).calls[0] == ToolCall("bash",
                                                                {"command": SHELL_COMMAND})
    codex = reply("MOCK-SHELL", CODEX_TOOLS).calls[0]
    assert isinstance(codex.arguments, dict) and codex.name == "exec_command"
    assert codex.arguments["sandbox_permissions"] == "require_escalated"


def test_without_an_ask_tool_the_model_says_so() -> None:
    assert reply("MOCK-ASK which colour?", ("Bash", "Edit")).text == \
        ("No tool to ask you with.",)
    asked = reply("MOCK-ASK which colour?", CODEX_TOOLS).calls[0]
    assert asked.name == "request_user_input"


def test_slow_is_paced_and_error_refuses() -> None:
    slow = reply("MOCK-SLOW", VIBE_TOOLS)
    assert len(slow.text) == 60 and slow.pace == scenario.SLOW_PACE
    assert decide(Conversation("MOCK-ERROR 429", (), VIBE_TOOLS)) == \
        Refusal(429, scenario.REFUSALS[429])


# ------------------------------------------------------------------------------ dialects


def test_anthropic_skips_reminders_and_reads_tool_results() -> None:
    body = {"tools": [{"name": "Read"}, {"name": "Edit"}], "messages": [
        {"role": "user", "content": [{"type": "text", "text": "<system-reminder>\nmind\n"},
                                     {"type": "text", "text": f"MOCK-EDIT {TARGET}"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read",
                                           "input": {"file_path": TARGET}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": "1\tfirst", "is_error": True}]}]}
    assert anthropic.conversation(body) == Conversation(f"MOCK-EDIT {TARGET}",
                                                        ("ERROR: 1\tfirst",), ("Read", "Edit"))


def test_responses_skips_codex_context_and_reads_call_outputs() -> None:
    body = {"tools": [{"type": "custom", "name": "apply_patch"}, {"type": "web_search"}],
            "input": [
                {"type": "message", "role": "developer", "content": "You are Codex"},
                {"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": "MOCK-SHELL"}]},
                {"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": "<environment_context>\n<cwd>/w</cwd>"}]},
                {"type": "function_call_output", "call_id": "c1", "output": "exit 0"}]}
    assert openai_responses.conversation(body) == Conversation(
        "MOCK-SHELL", ("exit 0",), ("apply_patch", "web_search"))


def test_chat_reads_the_last_user_message_and_tool_messages() -> None:
    body = {"tools": [{"type": "function", "function": {"name": "bash"}}], "messages": [
        {"role": "system", "content": "You help"},
        {"role": "user", "content": "first"},
        {"role": "user", "content": [{"type": "text", "text": "MOCK-SHELL"}]},
        {"role": "tool", "content": '{"stdout": "hello"}', "tool_call_id": "c1"}]}
    assert openai_chat.conversation(body) == Conversation(
        "MOCK-SHELL", ('{"stdout": "hello"}',), ("bash",))


def datas(events: list[Event]) -> list[Any]:
    return [e.data for e in events]


def test_anthropic_stream_adds_up_to_the_reply() -> None:
    move = reply("MOCK-THINK", CLAUDE_TOOLS)
    move = Reply(move.scenario, 0, move.thinking, move.text, (ToolCall("Read", {"a": "b" * 90}),))
    events = list(anthropic.stream(move, {"model": "m"}))
    assert [e.name for e in events][:2] == ["message_start", "content_block_start"]
    assert [e.name for e in events][-2:] == ["message_delta", "message_stop"]
    assert all(isinstance(e.data, dict) and e.data["type"] == e.name for e in events)
    deltas = [d["delta"] for d in datas(events) if d["type"] == "content_block_delta"]
    assert "".join(d.get("thinking", "") for d in deltas) == "".join(move.thinking)
    assert "".join(d.get("text", "") for d in deltas) == "".join(move.text)
    assert json.loads("".join(d.get("partial_json", "") for d in deltas)) == {"a": "b" * 90}
    assert datas(events)[-2]["delta"]["stop_reason"] == "tool_use"


def test_responses_stream_sends_a_freeform_tool_its_raw_input() -> None:
    move = reply(f"MOCK-WRITE {TARGET}", CODEX_TOOLS)
    events = datas(list(openai_responses.stream(move, {"apply_patch"})))
    assert events[0]["type"] == "response.created"
    assert events[-1]["type"] == "response.completed"
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert done[0]["content"][0]["text"] == "".join(move.text)
    assert done[1]["type"] == "custom_tool_call" and done[1]["name"] == "apply_patch"
    assert f"*** Add File: {TARGET}\n+written by mock\n" in done[1]["input"]
    # Not declared freeform: the same call as a function with JSON arguments.
    events = datas(list(openai_responses.stream(move, set())))
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert done[1]["type"] == "function_call"
    assert json.loads(done[1]["arguments"]) == {"input": move.calls[0].arguments}


def test_chat_stream_adds_up_to_the_reply_and_ends_with_done() -> None:
    move = reply("MOCK-SHELL", VIBE_TOOLS)
    events = list(openai_chat.stream(move, {"model": "m"}))
    assert all(e.name is None for e in events) and events[-1].data == "[DONE]"
    chunks = [e.data for e in events[:-1] if isinstance(e.data, dict)]
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert deltas[0]["role"] == "assistant"
    assert "".join(d.get("content", "") for d in deltas) == "".join(move.text)
    calls = [c for d in deltas for c in d.get("tool_calls", [])]
    assert calls[0]["function"]["name"] == "bash"
    arguments = "".join(c["function"]["arguments"] for c in calls)
    assert json.loads(arguments) == {"command": SHELL_COMMAND}
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
