"""Turning a model's command into an argv without ever guessing what a shell would have done."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from invokit.builtin.shell._command import SHELL_METACHARACTERS, parse_command
from invokit.exceptions import RetryWithFeedback


@pytest.mark.parametrize(
    ("command", "argv"),
    [
        pytest.param("ls", ("ls",), id="bare"),
        pytest.param("git diff --stat", ("git", "diff", "--stat"), id="words"),
        pytest.param("git commit -m 'two words'", ("git", "commit", "-m", "two words"), id="quote"),
        pytest.param('rg -n "a b"', ("rg", "-n", "a b"), id="double-quote"),
        pytest.param(r"rg a\ b", ("rg", "a b"), id="backslash"),
        pytest.param("git log HEAD~1", ("git", "log", "HEAD~1"), id="tilde-inside"),
        pytest.param("rg C#", ("rg", "C#"), id="hash-inside"),
        pytest.param("  ls   -l  ", ("ls", "-l"), id="spaces"),
    ],
)
def test_string_is_split_like_a_shell(command: str, argv: tuple[str, ...]) -> None:
    """A string without shell syntax splits into the words a POSIX shell would give."""
    assert parse_command(command) == argv


@pytest.mark.parametrize(
    "command",
    [
        pytest.param("ls; rm -rf /", id="semicolon"),
        pytest.param("make && make install", id="and"),
        pytest.param("sleep 1 &", id="background"),
        pytest.param("cat a | sh", id="pipe"),
        pytest.param("echo x > f", id="redirect-out"),
        pytest.param("sh < f", id="redirect-in"),
        pytest.param("echo $(id)", id="substitution"),
        pytest.param("echo `id`", id="backticks"),
        pytest.param("echo $HOME", id="variable"),
        pytest.param("echo $[1+1]", id="arithmetic"),
        pytest.param("ls *.py", id="glob-star"),
        pytest.param("ls ?.py", id="glob-question"),
        pytest.param("ls [ab].py", id="glob-class"),
        pytest.param("ls {a,b}", id="braces"),
        pytest.param("(ls)", id="subshell"),
        pytest.param("ls\nrm x", id="newline"),
        pytest.param("ls\rrm x", id="carriage-return"),
        pytest.param("ls ~", id="home"),
        pytest.param("ls ~root", id="home-of-user"),
        pytest.param("ls # comment", id="comment"),
        pytest.param("git commit -m 'a; b'", id="quoted-semicolon"),
    ],
)
def test_shell_syntax_is_refused(command: str) -> None:
    """A string holding syntax a shell would act on is refused, even inside quotes."""
    with pytest.raises(RetryWithFeedback) as caught:
        parse_command(command)
    assert caught.value.kind == "retry"


@pytest.mark.parametrize(
    "command",
    [
        pytest.param("", id="empty"),
        pytest.param("   ", id="blank"),
        pytest.param([], id="empty-list"),
        pytest.param([""], id="empty-program"),
        pytest.param("echo 'open", id="unbalanced-quote"),
        pytest.param(["echo", "a\0b"], id="nul"),
    ],
)
def test_unusable_commands_are_refused(command: str | list[str]) -> None:
    """Empty commands, unbalanced quotes and NUL bytes are refused with feedback."""
    with pytest.raises(RetryWithFeedback):
        parse_command(command)


def test_argv_list_is_used_verbatim() -> None:
    """An argv list keeps every character: nothing interprets it."""
    argv = ["rg", "-n", "a|b; $(x) *", "--", "~/x\nfoo"]
    assert parse_command(argv) == tuple(argv)


@given(
    prefix=st.text(max_size=20),
    metacharacter=st.sampled_from(sorted(SHELL_METACHARACTERS)),
    suffix=st.text(max_size=20),
)
def test_no_string_with_a_metacharacter_is_accepted(
    prefix: str, metacharacter: str, suffix: str
) -> None:
    """No command string containing a shell metacharacter is ever accepted."""
    with pytest.raises(RetryWithFeedback):
        parse_command(prefix + metacharacter + suffix)


@given(st.text(alphabet=st.characters(blacklist_characters="\0"), max_size=40))
def test_accepted_strings_hold_no_shell_syntax(command: str) -> None:
    """Whatever string is accepted has no metacharacter and splits to non-empty words."""
    try:
        argv = parse_command(command)
    except RetryWithFeedback:
        return
    assert not SHELL_METACHARACTERS.intersection(command)
    assert argv
    assert all(not word.startswith(("~", "#")) for word in command.split())
