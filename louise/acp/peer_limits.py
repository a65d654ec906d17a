"""`PeerLimits`: every bound of the JSON-RPC peer (louise/acp/jsonrpc.py) in one place."""

from __future__ import annotations

from dataclasses import dataclass

from louise.acp.rpc_state import (
    DEFAULT_MAX_JSON_DEPTH,
    DEFAULT_MAX_JSON_VALUES,
    DEFAULT_MAX_LINE_BYTES,
)

MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class PeerLimits:
    """Every bound of the peer in one place; sizes in bytes where the agent picks them.

    `max_line_bytes`: the largest legitimate lines are base64 images and embedded
    resources and whole-file diffs or writes; 32 MiB holds a 20 MiB binary in base64 or
    a diff of a 15 MiB file, and decoding one costs about 3x its size (bytes, text,
    strings), ~100 MB at the limit. The structural budgets keep that factor: 500,000
    values (brackets and commas outside strings) decode to at most ~40 MB, and nesting
    stops at 128 levels, as in serde_json, far below Python's recursion limit.
    """

    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    max_json_values: int = DEFAULT_MAX_JSON_VALUES
    max_json_depth: int = DEFAULT_MAX_JSON_DEPTH
    max_outbound_bytes: int = 8 * MIB  # a longer single message still goes, alone
    max_inbound_bytes: int = 16 * MIB  # read but not yet handled (one more line may pass)
    max_concurrent_inbound_requests: int = 64
    protocol_error_log: int = 64  # lines kept in `protocol_errors`; as many are logged
    read_chunk: int = 256 * 1024
    write_chunk: int = 256 * 1024
    drain_on_close_seconds: float = 2.0
