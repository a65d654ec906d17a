"""The agents' own tools, recognised by the names they offer the model.

Each agent brings its own tool set (seen in their requests): Claude Code `Read`, `Edit`,
`Write`, `Bash`, `AskUserQuestion`; codex `apply_patch` (a freeform tool taking a patch),
`exec_command`, `request_user_input` (Plan mode only); vibe `read_file`, `edit`,
`write_file`, `bash`, `ask_user_question`; gemini-cli `read_file`, `replace`, `write_file`,
`run_shell_command`, and qwen-code (its fork) the same with `edit` for `replace` and
`ask_user_question` (both take `file_path`, where vibe's reads take `path`); copilot
`view`, `edit`, `create`, `bash`. None offers a multi-edit tool (Claude Code's `Edit` and
vibe's `edit` replace one string). A script is the list of steps a scenario takes with
whichever of these the request offers: one tool call per model request, each with a few
words of text before it. None when the agent offers no tool for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

OLD_LINE = "old line"  # MOCK-EDIT replaces this line of the file ...
NEW_LINE = "new line by mock"  # ... with this one
# MOCK-EDIT2 changes two lines of one file, each (old, new): the test puts unchanged lines
# between them, so that the one edit is two hunks of the turn's diff.
TWO_HUNKS = (("first old", "first new by mock"), ("second old", "second new by mock"))
WRITTEN = "written by mock\n"  # MOCK-WRITE's new file
SHELL_COMMAND = "echo hello-from-shell | tee shell-out.txt"  # MOCK-SHELL, in the cwd
QUESTION = "Which colour should the button be?"
CHOICES = (("Red", "warm"), ("Blue", "cool"))

PURPOSES = {"edit": "edit files", "edit2": "edit files", "write": "write files",
            "shell": "run commands", "ask": "ask you"}


@dataclass(frozen=True)
class ToolCall:
    name: str
    # A JSON object, or the raw input of a freeform tool (codex's apply_patch).
    arguments: dict[str, Any] | str


Step = tuple[tuple[str, ...], ToolCall]


def script(scenario: str, path: str, offered: tuple[str, ...]) -> list[Step] | None:
    have = set(offered)
    if scenario == "edit":
        return edit_steps(path, have)
    if scenario == "edit2":
        return two_hunk_steps(path, have)
    if scenario == "write":
        return write_steps(path, have)
    if scenario == "shell":
        return shell_steps(have)
    if scenario == "ask":
        return ask_steps(have)
    return None


def edit_steps(path: str, have: set[str]) -> list[Step] | None:
    replace = {"old_string": OLD_LINE, "new_string": NEW_LINE}
    if {"Read", "Edit"} <= have:  # Claude Code edits only a file it has read
        return [(("Reading ", "the file."), ToolCall("Read", {"file_path": path})),
                (("Changing ", "one line."), ToolCall("Edit", {"file_path": path, **replace}))]
    if {"view", "edit"} <= have:  # copilot: it edits a file it has viewed
        return [(("Reading ", "the file."), ToolCall("view", {"path": path})),
                (("Changing ", "one line."), ToolCall("edit", {
                    "path": path, "old_str": OLD_LINE, "new_str": NEW_LINE}))]
    if {"read_file", "run_shell_command"} <= have and have & {"replace", "edit"}:
        # gemini-cli reads the file itself before a replace; qwen-code edits only a file
        # it has read.
        change = ToolCall("replace" if "replace" in have else "edit", {
            "file_path": path, **replace,
            **({"instruction": "Change one line."} if "replace" in have else {})})
        return [(("Reading ", "the file."), ToolCall("read_file", {"file_path": path})),
                (("Changing ", "one line."), change)]
    if {"read_file", "edit"} <= have:  # vibe
        return [(("Reading ", "the file."), ToolCall("read_file", {"path": path})),
                (("Changing ", "one line."), ToolCall("edit", {"file_path": path, **replace}))]
    return codex_patch(f"*** Update File: {path}\n@@\n-{OLD_LINE}\n+{NEW_LINE}\n", have)


def two_hunk_steps(path: str, have: set[str]) -> list[Step] | None:
    """Two separate lines of one file changed: Claude Code and vibe with two edit calls
    after the read, codex with one patch of two hunks."""
    if {"Read", "Edit"} <= have:
        read, edit, file_key = "Read", "Edit", "file_path"
    elif {"read_file", "edit"} <= have:
        read, edit, file_key = "read_file", "edit", "path"
    else:
        hunks = "".join(f"@@\n-{old}\n+{new}\n" for old, new in TWO_HUNKS)
        return codex_patch(f"*** Update File: {path}\n{hunks}", have)
    steps: list[Step] = [(("Reading ", "the file."), ToolCall(read, {file_key: path}))]
    for number, (old, new) in enumerate(TWO_HUNKS, 1):
        steps.append(((f"Changing line {number} ", "of two."), ToolCall(
            edit, {"file_path": path, "old_string": old, "new_string": new})))
    return steps


def write_steps(path: str, have: set[str]) -> list[Step] | None:
    if "Write" in have:
        return [(("Creating ", "the file."),
                 ToolCall("Write", {"file_path": path, "content": WRITTEN}))]
    if {"view", "create"} <= have:  # copilot
        return [(("Creating ", "the file."),
                 ToolCall("create", {"path": path, "file_text": WRITTEN}))]
    if {"write_file", "run_shell_command"} <= have:  # gemini-cli, qwen-code
        return [(("Creating ", "the file."),
                 ToolCall("write_file", {"file_path": path, "content": WRITTEN}))]
    if "write_file" in have:
        return [(("Creating ", "the file."),
                 ToolCall("write_file", {"path": path, "content": WRITTEN}))]
    added = "".join(f"+{line}\n" for line in WRITTEN.splitlines())
    return codex_patch(f"*** Add File: {path}\n{added}", have)


def codex_patch(change: str, have: set[str]) -> list[Step] | None:
    """codex changes files with a patch: its apply_patch tool, or (for a model it does not
    offer that tool to) the same patch through its shell."""
    patch = f"*** Begin Patch\n{change}*** End Patch\n"
    if "apply_patch" in have:
        return [(("Patching ", "the file."), ToolCall("apply_patch", patch))]
    if "exec_command" in have:
        command = f"apply_patch <<'PATCH'\n{patch}PATCH\n"
        return [(("Patching ", "through the shell."),
                 ToolCall("exec_command", {"cmd": command}))]
    return None


def shell_steps(have: set[str]) -> list[Step] | None:
    words = ("Running ", "a command.")
    if "Bash" in have:
        return [(words, ToolCall("Bash", {"command": SHELL_COMMAND,
                                          "description": "Write a word to a file"}))]
    if {"bash", "view"} <= have:  # copilot
        return [(words, ToolCall("bash", {"command": SHELL_COMMAND,
                                          "description": "Write a word to a file"}))]
    if "bash" in have:
        return [(words, ToolCall("bash", {"command": SHELL_COMMAND}))]
    if "run_shell_command" in have:  # gemini-cli, qwen-code
        return [(words, ToolCall("run_shell_command", {
            "command": SHELL_COMMAND, "description": "Write a word to a file"}))]
    if "exec_command" in have:
        # Escalation asks the client first: codex's read-only sandbox would refuse the write.
        return [(words, ToolCall("exec_command", {
            "cmd": SHELL_COMMAND, "sandbox_permissions": "require_escalated",
            "justification": "May I write shell-out.txt?"}))]
    if "shell_command" in have:
        return [(words, ToolCall("shell_command", {"command": SHELL_COMMAND}))]
    return None


def ask_steps(have: set[str]) -> list[Step] | None:
    choices = [{"label": label, "description": about} for label, about in CHOICES]
    question: dict[str, Any] = {"question": QUESTION, "header": "Colour", "options": choices}
    if "AskUserQuestion" in have:
        call = ToolCall("AskUserQuestion", {"questions": [{**question, "multiSelect": False}]})
    elif "request_user_input" in have:
        call = ToolCall("request_user_input", {"questions": [{"id": "colour", **question}]})
    elif {"ask_user_question", "run_shell_command"} <= have:  # qwen-code
        call = ToolCall("ask_user_question", {"questions": [{**question, "multiSelect": False}]})
    elif "ask_user_question" in have:
        call = ToolCall("ask_user_question", {"questions": [question]})
    else:
        return None
    return [(("A question ", "for you."), call)]
