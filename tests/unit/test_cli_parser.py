"""The CLI builds the parser of the verb it runs alone (issue 14 item 8: `louise inspect`
no longer imports every verb's module); what each verb's parser says must not change."""

from __future__ import annotations

import contextlib
import io

import pytest

from louise.cli.main import VERBS, _verb_in, build_parser


def said(parser_verb: str | None, argv: list[str]) -> tuple[str, str, int]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            pytest.raises(SystemExit) as exited:
        build_parser(parser_verb).parse_args(argv)
    return out.getvalue(), err.getvalue(), int(exited.value.code or 0)


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_a_verbs_own_parser_says_what_the_whole_one_says(verb: str) -> None:
    for argv in ([verb, "--help"], [verb, "--no-such-option"]):
        assert said(verb, argv) == said(None, argv)


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_a_verbs_own_parser_parses_as_the_whole_one(verb: str) -> None:
    argv = {"export": ["export", "abc"], "limits": ["limits", "refresh", "x"],
            "chat": ["chat", "hi"], "proxy": ["proxy", "--", "agent"]}.get(verb, [verb])
    alone = vars(build_parser(verb).parse_args(argv))
    whole = vars(build_parser(None).parse_args(argv))
    assert alone == whole


def test_the_verb_is_the_first_word() -> None:
    """Anything before a verb (`-h inspect`, `--version inspect`) gets the whole parser."""
    assert _verb_in(["inspect", "--json"]) == "inspect"
    assert _verb_in(["-h", "inspect"]) is None
    assert _verb_in(["--version", "inspect"]) is None
    assert _verb_in(["nope", "inspect"]) is None
    assert _verb_in(["--", "inspect"]) is None
    assert _verb_in([]) is None


def test_help_before_a_verb_lists_every_verb() -> None:
    out, _, code = said(_verb_in(["-h", "inspect"]), ["-h", "inspect"])
    assert code == 0
    assert all(verb in out for verb in VERBS)


INSPECT_LINES = [
    [], ["a"], ["a", "b"], ["--json"], ["--json", "a"], ["a", "--json"], ["a", "b", "--detail"],
    ["--detail", "a", "b", "--refresh"], ["--json", "--json"], ["--refresh", "--json", ""],
    ["--", "a"], ["a", "--", "b"], ["--js"], ["-h"], ["--help"], ["a", "--json", "b"],
    ["-x"], ["--json=1"], ["a", "-b"], ["--detail", "a", "--json", "b"]]


@pytest.mark.parametrize("words", INSPECT_LINES)
def test_inspect_reads_its_plain_lines_as_its_parser_does(words: list[str]) -> None:
    """`louise inspect` reads its usual lines without argparse (issue 25 item 5): the same
    values as its parser, or None (then the parser reads the line and says what it says)."""
    from louise.cli.main import _inspect_words

    argv = ["inspect", *words]
    fast = _inspect_words(argv)
    try:
        with contextlib.redirect_stderr(io.StringIO()), \
                contextlib.redirect_stdout(io.StringIO()):
            parsed = vars(build_parser("inspect").parse_args(argv))
    except SystemExit:
        assert fast is None  # a usage error or --help: the parser's own words
        return
    if fast is not None:
        assert vars(fast) == parsed
    else:  # left to the parser: only lines beyond the plain ones
        assert any(word.startswith("-") and word not in ("--json", "--detail", "--refresh")
                   for word in words)
