"""An agent's elicitation in `louise chat`: on a terminal each field is asked, the answers
shown to send; a URL is shown whole and opened only on `y`; without a terminal louise does
not advertise elicitation at all (the demo agent then says so)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.cli_helpers import Terminal, environment, louise


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return environment(None, LOUISE_CONFIG=str(tmp_path / "none.toml"),
                       LOUISE_STATE_DIR=str(tmp_path / "state"),
                       LOUISE_DEMO_STATE_DIR=str(tmp_path / "demo"),
                       BROWSER="true")  # a "browser" that opens nothing


def test_a_form_on_the_terminal(env: dict[str, str], tmp_path: Path) -> None:
    term = Terminal("chat", "--agent", "demo", "/scenario ask", env=env, cwd=tmp_path)
    term.expect("demo asks: A few details about the release, please.")
    term.expect("Release name (required): ")
    term.send("v2\n")
    term.expect("choose [Green]: ")
    assert "  3. Blue" in term.text
    term.send("3\n")
    term.expect("How many (required): ")
    term.send("12\n")  # too many: asked again below
    term.expect("Notify the team [y/n] [no]: ")
    term.send("y\n")
    term.expect("choose (numbers, comma-separated): ")
    term.send("1,3\n")
    term.expect("send it? [s]end, [e]dit, [d]ecline, [c]ancel: ")
    term.send("s\n")
    term.expect("fix: How many: at most 10")
    term.expect("send it? [s]end, [e]dit, [d]ecline, [c]ancel: ", count=2)
    term.send("e\n")
    term.expect("Release name (required) [v2]: ")
    term.send("\n")
    term.expect("choose [Blue]: ")
    term.send("\n")
    term.expect("How many (required) [12]: ")
    term.send("4\n")
    term.expect("Notify the team [y/n] [yes]: ")
    term.send("\n")
    term.expect("choose (numbers, comma-separated) [docs, feature]: ")
    term.send("\n")
    term.expect("send it? [s]end, [e]dit, [d]ecline, [c]ancel: ", count=3)
    term.send("s\n")
    assert term.wait() == 0, term.text
    assert "Thanks: color='blue', count=4, name='v2', notify=True, tags=['docs', 'feature']." \
        in term.text


def test_a_url_on_the_terminal(env: dict[str, str], tmp_path: Path) -> None:
    term = Terminal("chat", "--agent", "demo", "/scenario visit", env=env, cwd=tmp_path)
    term.expect("Open it? [y/N] ")
    assert "demo asks you to visit example.com\n  Connect the demo account" in \
        term.text.replace("\r\n", "\n")
    assert "https://example.com/louise-demo/connect" in term.text
    term.send("y\n")
    assert term.wait() == 0, term.text
    assert "The page says you are connected." in term.text
    assert "the visit to example.com is finished" in term.text


def test_where_a_url_goes_comes_first_with_its_warnings(env: dict[str, str],
                                                        tmp_path: Path) -> None:
    term = Terminal("chat", "--agent", "demo", "/scenario visit url=http://2130706433/x",
                    env=env, cwd=tmp_path)
    term.expect("Open it? [y/N] ")
    assert ("demo asks you to visit 127.0.0.1\n"
            "  warning: the host is a bare IP address (127.0.0.1)\n"
            "  Connect the demo account in your browser.\n"
            "  http://2130706433/x") in term.text.replace("\r\n", "\n")
    term.send("n\n")
    assert term.wait() == 0, term.text


def test_a_disguised_url_is_not_offered_and_says_where_it_goes(env: dict[str, str],
                                                               tmp_path: Path) -> None:
    term = Terminal("chat", "--agent", "demo",
                    "/scenario visit url=https://accounts.google.com@evil.example/",
                    env=env, cwd=tmp_path)
    term.wait()  # the demo agent fails its turn with louise's reason
    assert "Open it?" not in term.text
    assert ("louise did not offer to open a page demo asked you to visit: it has a name "
            "before an @ in its address, which is not where it goes: a browser would open "
            "evil.example") in term.text.replace("\r\n", " ").replace("\n", " ")


def test_without_a_terminal_nothing_is_advertised(env: dict[str, str], tmp_path: Path) -> None:
    result = louise("chat", "--agent", "demo", "/scenario ask", env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Your client cannot answer forms (no `elicitation.form`)." in result.stdout
