"""`louise inspect` reads the Agent names of a plain config.toml without tomllib (issue 25
item 5): the reader's answer, when it gives one, is tomllib's for every file."""

from __future__ import annotations

import tomllib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from louise.cli.commands.inspect_config import MAX_DEPTH, agent_tables


def tomllib_tables(text: str) -> dict[str, bool] | bool | None:
    """What tomllib has under `agents`, in the reader's terms; None for invalid TOML."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
    value = data.get("agents", {})
    if not isinstance(value, dict):
        return False
    return {name: isinstance(agent, dict) for name, agent in value.items()}


def agrees(text: str) -> bool:
    """The reader says nothing, or what tomllib says of a valid file."""
    found = agent_tables(text)
    if found is None:
        return True
    expected = tomllib_tables(text)
    assert expected is not None, f"the reader accepted invalid TOML: {text!r}"
    assert found == expected, text
    if isinstance(found, dict) and isinstance(expected, dict):
        assert list(found) == list(expected), text  # the order too
    return True


PLAIN = [
    "",
    "# nothing\n",
    '[agents.claude]\ncommand = "claude-agent-acp"\n\n'
    '[agents.gemini]\ncommand = "gemini"\nargs = ["--experimental-acp"]\n',
    '[host]\nmode = "auto"       # "off"\nidle_exit = 600\n# via = "ssh devbox"\n',
    '[limits]\nconfirm = true\npark = false\n[limits.budgets]\n"~/work/x" = { "5h" = 50 }\n',
    '[agents.claude]\ncommand = "louise"\nargs = ["proxy", "--", "claude-agent-acp"]\n',
    "[agents.b]\n[agents.a]\n[agents.'c d']\n[agents]\nx = { y = 1.5e3, z = [1, 'a', {}] }\n",
    '[agents.x.env]\nA = "1"\n[agents . "y" ]\nargs = [\n  "a", # one\n  "b",\n]\n',
    "a = -0.5\r\nb = +1_000\r\n[agents.q]\r\n",
    "agents = 3\n",
    "[agents]\nclaude = \"x\"\n",
    '[permissions]\ndefault = "ask"\n\n[[permissions.rules]]\nkind = ["read", "search"]\n'
    'inside_workspace = true\ndecision = "allow"\n[[permissions.rules]]\n[agents.a]\n',
    "[[a]]\n[a.b]\n[[a]]\n[a.b]\n[[a.c]]\n[a.c.d]\nx = 1\n[[agents]]\n",
    "[agents]\n[[agents.x]]\n[agents.y]\n",
]

INVALID = [
    "[agents.a]\n[agents.a]\n",
    "[agents]\n[agents]\n",
    "a = 1\na = 2\n",
    "a = 1\n[a]\n",
    "a = 1\n[a.b]\n",
    "a = {}\n[a]\n",
    "a = [1]\n[a.b]\n",
    "[a.b]\n[a]\nb = 1\n",
    "x = { a = 1, a = 2 }\n",
    "x = { a = 1, }\n",
    "x = [1 2]\n",
    "x = 01\n",
    "x = 1__0\n",
    "x = 1.\n",
    "x = \"a\nb\"\n",
    "x = 'a\x01'\n",
    "# \x7f\n",
    "x = 1 y = 2\n",
    "[a] b = 1\n",
    "x = truex\n",
    "x = \"\n",
    "x\r= 1\n",
    "\ufeff[agents.a]\n",
    "[[a]]\n[a]\n",
    "[a]\n[[a]]\n",
    "a = []\n[[a]]\n",
    "[[a]]\n[a.b]\n[a.b]\n",
    "[a.c]\n[[a.b]]\n[[a.b]]\n[a.c]\n",
    "[[a] ]\n",
    "[ [a]]\n",
    "agents = { x = {} }\n",  # valid, but its keys are tomllib's to read
    "x = [" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5) + "\n",
]


@pytest.mark.parametrize("text", PLAIN)
def test_a_plain_config_is_read_as_tomllib_reads_it(text: str) -> None:
    assert agent_tables(text) is not None  # read here, without tomllib
    assert agrees(text)


@pytest.mark.parametrize("text", INVALID)
def test_what_the_reader_does_not_know_is_left_to_tomllib(text: str) -> None:
    assert agent_tables(text) is None
    assert agrees(text)


PIECES = ["[agents.a]", "[agents.b]", "[agents]", "[a]", "[a.b]", "[agents.a.env]",
          "[[agents]]", "[agents.'a']", '["agents".a]', "agents = 1", "a = 1", "b = 'x'",
          'c = "y"', 'd = "\\n"', "e = true", "f = false", "g = [1, 2,]", "h = [\n1,\n2\n]",
          "i = {x = 1}", "j = { x = { y = [] } }", "k = 1.5", "l = -0", "m = 1e5", "n = +1_0",
          "o = 0x1F", "p = 1979-05-27", "q = 07:32:00", "r = inf", "s = '''x'''",
          '"t" = 1', "'u' = 2", "v.w = 3", "agents.c = {}", "# note", "", " ", "\t#\x01",
          "x = 1 # c", "[ agents . z ]", "[agents.a]  # c", "y = {}", "a = 2", "[[a]]",
          "[[a.b]]", "[a.b.c]", "[[ agents ]]", "[[agents.a]]", "[[agents.a.env]]", "[a.b]",
          "[[a.b.c]]", "[[ a . b ]]"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=8),
       st.sampled_from(["\n", "\r\n"]))
def test_the_reader_agrees_with_tomllib_on_any_arrangement(
        lines: list[str], newline: str) -> None:
    assert agrees(newline.join(lines))


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("[]{}.=,\"'#\n\r\t -_+0159aeEx:\\\x01é")),
               max_size=40))
def test_the_reader_agrees_with_tomllib_on_any_text(text: str) -> None:
    assert agrees(text)


def test_the_readmes_whole_config_is_read_without_tomllib() -> None:
    """The configuration README.md shows whole (every section) is in the plain subset."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    blocks = [block.split("```", 1)[0] for block in readme.split("```toml\n")[1:]]
    whole = max(blocks, key=len)
    assert "[[permissions.rules]]" in whole and "[agents." in whole
    assert agent_tables(whole) is not None
    assert agrees(whole)
