"""LouiseLM compatibility: a LouiseLM `setup{}` works as it is. Its settings louise has no
use for are accepted and dropped, each named once in a warning saying why; its `provider`
shapes become the one provider name louise shows (:help louise-migrating); its
`options._meta` and `context.instructions_file` are louise's own settings too
(`agents.py`, `sections.py`). What validation does with them is in `schema/louiselm.py`.
"""

from __future__ import annotations

from collections.abc import Sequence

from louise.config.problems import ConfigProblem, format_path

# LouiseLM's per-Agent settings that louise has no use for: accepted (so a LouiseLM
# `setup{}` works as it is) and ignored with one warning per setting, saying why.
LOUISELM_AGENT_KEYS: dict[str, str] = {
    "skills": "louise has no skills policy; the agent's own slash commands pass through",
    "latest": ":checkhealth louise runs the command's --version itself",
    "version": ":checkhealth louise runs the command's --version itself",
    "upgrade": "louise shows no upgrade hints",
    "transcript_layout": "louise keeps its own transcripts (:LouiseExport, louise export)",
    "capabilities": "louise routes no work by capability",
    "auto": "louise has no automatic model routing; pick the model with :LouiseOptions",
}
# LouiseLM's top-level settings louise has no use for (same treatment).
LOUISELM_TOP_KEYS: dict[str, str] = {
    "skills": "louise has no skills discovery; the agent's own slash commands pass through",
    "attention": "louise has no attention inbox",
    "beads": "louise has no Beads integration",
    "capture": "louise has no capture service",
    "workflows": "louise has no workflow runs",
}
LOUISELM_CONTEXT = "louiselm_ignored"  # validation context key: where the warnings go


def ignored_warnings(ignored: list[tuple[tuple[str, ...], str]]) -> tuple[ConfigProblem, ...]:
    """One warning per ignored setting name, naming every place it was set."""
    by_key: dict[str, list[str]] = {}
    why: dict[str, str] = {}
    for loc, reason in ignored:
        key = ("agents.*." if loc[0] == "agents" else "") + loc[-1]
        by_key.setdefault(key, []).append(format_path(loc))
        why[key] = reason
    return tuple(ConfigProblem(", ".join(sorted(set(paths))),
                               "a LouiseLM setting louise does not use (ignored)", why[key])
                 for key, paths in by_key.items())


def warnings_message(warnings: Sequence[ConfigProblem], source: str) -> str:
    """The ignored settings in one message: what they are said once, then a line per
    setting (where it was set: why louise does without it)."""
    lines = [f"louise: {source} has LouiseLM settings louise does not use, ignored "
             "(:help louise-migrating):"]
    lines += [f"  {warning.path}: {warning.hint}" for warning in warnings]
    return "\n".join(lines)
