"""Tool calls in the session model: `tool_call` and `tool_call_update` → `ToolCall`
records within `SessionBounds`' byte budgets, and the terminals an agent runs itself,
reported in its tool calls' `_meta` (`ToolCall.terminals`, `TerminalReported`). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from louise.session.budget import clean_list, cut_text, fit_items, json_size, text_bytes
from louise.session.events import Event, TerminalReported, ToolCallChanged
from louise.session.records import AgentTerminal, ToolCall, ToolCallRef

if TYPE_CHECKING:
    from louise.session.entries import Entries


def _terminal_meta(value: Any) -> dict[str, Any] | None:
    """One `_meta.terminal_*` object with a usable `terminal_id`, or None."""
    if not isinstance(value, dict):
        return None
    terminal_id = value.get("terminal_id")
    if not isinstance(terminal_id, str) or not terminal_id or len(terminal_id) > 256:
        return None
    return value


def _command_of(record: ToolCall) -> str:
    """What a terminal of this tool call runs, as the person reads it."""
    raw = record.raw_input
    command = raw.get("command") if isinstance(raw, dict) else None
    if isinstance(command, list) and all(isinstance(part, str) for part in command):
        command = " ".join(command)
    text = command if isinstance(command, str) and command else record.title
    return text[:4096]


def apply(content: Entries, raw: Mapping[str, Any], *, create: bool) -> list[Event]:
    """One `tool_call` (`create`: creates or replaces) or `tool_call_update`."""
    tool_call_id: str = raw["toolCallId"]
    record = content.tool_calls.get(tool_call_id)
    created = record is None
    if record is None or create:
        # `tool_call` creates or replaces; an update for an unknown id creates too.
        cancelled = record.cancelled if record is not None else False
        if record is not None:
            content.grow(-record.size)
        record = ToolCall(tool_call_id, cancelled=cancelled)
        content.tool_calls[tool_call_id] = record
        content.tool_calls.move_to_end(tool_call_id)
        if created:
            content.push(ToolCallRef(tool_call_id))
            content.turn_tool_call_ids[tool_call_id] = None
            while len(content.tool_calls) > content.bounds.max_tool_calls:
                evicted_id, evicted = content.tool_calls.popitem(last=False)
                content.grow(-evicted.size)
                content.turn_tool_call_ids.pop(evicted_id, None)  # keep this bounded too
    changed: set[str] = set()
    # Only fields present change; `content` and `locations` replace. In v1 an
    # explicit null means unchanged (the schema salvages malformed fields to null).
    if isinstance(raw.get("title"), str):
        record.title = raw["title"][:4096]
        _field_size(content, record, "title", text_bytes(record.title))
        changed.add("title")
    if isinstance(raw.get("kind"), str):
        record.kind = raw["kind"][:64]
        changed.add("kind")
    elif create:
        record.kind = "other"
    if isinstance(raw.get("status"), str):
        record.status = raw["status"][:64]
        changed.add("status")
    if isinstance(raw.get("content"), list):
        record.content = _tool_content(content, record, raw["content"])
        changed.add("content")
    if isinstance(raw.get("locations"), list):
        locations, size, _ = fit_items(clean_list(raw["locations"]),
                                       content.bounds.max_raw_bytes, content.bounds.max_list_items)
        record.locations = locations
        _field_size(content, record, "locations", size)
        changed.add("locations")
    if raw.get("rawInput") is not None:
        record.raw_input = _raw(content, record, "raw_input", raw["rawInput"], "raw input")
        changed.add("raw_input")
    if raw.get("rawOutput") is not None:
        record.raw_output = _raw(content, record, "raw_output", raw["rawOutput"], "raw output")
        changed.add("raw_output")
    reported = _agent_terminals(content, record, raw.get("_meta"))
    if reported:
        changed.add("terminals")
    events: list[Event] = [ToolCallChanged(content.session_id, tool_call_id, created,
                                           frozenset(changed))]
    events.extend(reported)
    return events


def _agent_terminals(content: Entries, record: ToolCall, meta: Any) -> list[Event]:
    """Terminals the agent runs itself, reported in the update's `_meta` (codex's and
    claude's convention: `terminal_info`, `terminal_output_delta` or `terminal_output`
    (output appended), `terminal_exit`). Output is kept up to the byte bound; past it,
    one marker says so and nothing more is kept or passed on."""
    if not isinstance(meta, dict):
        return []
    info = _terminal_meta(meta.get("terminal_info"))
    output = _terminal_meta(meta.get("terminal_output_delta")) \
        or _terminal_meta(meta.get("terminal_output"))
    end = _terminal_meta(meta.get("terminal_exit"))
    reports: dict[str, TerminalReported] = {}
    for part in (info, output, end):
        if part is None:
            continue
        terminal_id = part["terminal_id"]
        terminal = record.terminals.get(terminal_id)
        if terminal is None:
            if len(record.terminals) >= content.bounds.max_agent_terminals:
                continue
            terminal = record.terminals[terminal_id] = AgentTerminal()
        if part is info:
            continue  # announced with its first output or its end (the command is
            # known by then: claude's first report has only the title "Terminal")
        report = reports.get(terminal_id)
        if report is None:
            command = None if terminal.announced else _command_of(record)
            terminal.announced = True
            report = reports[terminal_id] = TerminalReported(
                content.session_id, record.tool_call_id, terminal_id, "", command=command)
        if part is output:
            report.data += _terminal_output(content, record, terminal_id, terminal,
                                            part.get("data"))
        if part is end and not terminal.exited:
            code, signal = part.get("exit_code"), part.get("signal")
            terminal.exited = True
            terminal.exit_code = code if isinstance(code, int) \
                and not isinstance(code, bool) else None
            terminal.signal = signal[:64] if isinstance(signal, str) else None
            report.exited = True
            report.exit_code, report.signal = terminal.exit_code, terminal.signal
    return list(reports.values())


def _terminal_output(content: Entries, record: ToolCall, terminal_id: str,
                     terminal: AgentTerminal, data: Any) -> str:
    """What of `data` is kept and passed on (the marker once the bound is reached)."""
    if not isinstance(data, str) or not data or terminal.cut:
        return ""
    text: str = data
    limit = content.bounds.max_agent_terminal_bytes
    size = text_bytes(text)
    if terminal.output_bytes + size > limit:
        room = limit - terminal.output_bytes
        kept = text.encode("utf-8", "surrogatepass")[:max(room, 0)].decode(
            "utf-8", "ignore")
        text = kept + f"\n[… output cut: over the {limit}-byte limit]\n"
        terminal.cut = True
        record.truncated.add("terminals")
        size = text_bytes(text)
    terminal.output.append(text)
    terminal.output_bytes += size
    _field_size(content, record, f"terminal {terminal_id}", terminal.output_bytes)
    return text


def _field_size(content: Entries, record: ToolCall, name: str, size: int) -> None:
    content.grow(size - record.sizes.get(name, 0))
    record.sizes[name] = size


def _raw(content: Entries, record: ToolCall, name: str, value: Any, what: str) -> Any:
    limit = content.bounds.max_raw_bytes
    size = json_size(value, limit)
    if size > limit:
        value = cut_text(what, limit)
        size = len(value)
        record.truncated.add(name)
    else:
        record.truncated.discard(name)
    _field_size(content, record, name, size)
    return value


def _tool_content(content: Entries, record: ToolCall, value: Any) -> list[dict[str, Any]]:
    limit = content.bounds.max_content_bytes
    items = clean_list(value)
    kept, size, left_out = fit_items(items, limit, content.bounds.max_list_items)
    if left_out:
        marker = {"type": "content", "content": {"type": "text", "text": cut_text(
            f"{left_out} more content item{'' if left_out == 1 else 's'}", limit)}}
        kept.append(marker)
        size += json_size(marker, limit)
        record.truncated.add("content")
    else:
        record.truncated.discard("content")
    _field_size(content, record, "content", size)
    return kept
