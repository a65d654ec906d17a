"""louise-demo-agent: a deterministic scripted ACP agent over stdio (no model, no network).

The embedded default agent of the demo, the tests and the benchmarks. It speaks raw
NDJSON JSON-RPC 2.0 with the standard library only (no `acp` SDK: it starts fast), and
implements the account-limits extension v1. Send the prompt `/help` for its scenarios.

Modules: `wire` (framing and JSON-RPC), `agent` (ACP methods), `entry` (`main`), `sessions`
and `storage` (state, history, files that outlive the process), `turn` (what scenarios
are written in), `scenarios` (the table; `tool_scenarios`, `question_scenarios`) and
`failures` (the fail modes), `limits`, `catalog` (static data), `settings` (environment
and knobs).
"""

from __future__ import annotations

from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Console script `louise-demo-agent`; also `python -m louise.demo_agent`."""
    from louise.storage.first_use import import_asyncio_without_ssl

    import_asyncio_without_ssl(with_anyio=False)  # it speaks on stdio: ssl is ~4 MiB for nothing
    from .entry import main as agent_main  # imported here so `import louise.demo_agent` stays cheap

    return agent_main(argv)


__all__ = ["main"]
