"""Turn a model's command into an argv, refusing anything a shell would have interpreted.

No shell ever runs the command, so a string is only a convenience: it is split the way
:func:`shlex.split` splits it (POSIX words, quotes and backslashes), in one linear pass. If the
string holds syntax a shell would act on (pipes, redirections, substitutions, globs, several
commands), splitting it would silently change its meaning, so it is refused and the model is told
to pass an argv list or to make separate calls.

The cost is bounded for any input: a string over :data:`MAX_STRING_CHARS` characters, a list
over :data:`MAX_ARGS` arguments or :data:`MAX_COMMAND_CHARS` characters in all, or an argument
over :data:`MAX_ARG_CHARS` is refused before any splitting (a string's words are counted while
it is split, which stops at the cap), and refusals quote at most a short excerpt of what was
sent.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from invokit.exceptions import RetryWithFeedback

__all__ = [
    "MAX_ARGS",
    "MAX_ARG_CHARS",
    "MAX_COMMAND_CHARS",
    "MAX_STRING_CHARS",
    "SHELL_METACHARACTERS",
    "excerpt",
    "parse_command",
    "shown_argv",
    "split_words",
]

SHELL_METACHARACTERS = frozenset(";&|<>$`()[]{}*?\n\r")
"""Characters that mean something to a shell anywhere in a word (or between words).

Quoted or not, a string holding one is refused: a model that wrote them expected a shell.
"""

MAX_ARGS = 4096
"""Most arguments a command may have (the program included)."""
MAX_ARG_CHARS = 131_071
"""Most characters in one argument (Linux refuses a longer one: ``MAX_ARG_STRLEN`` is 131,072
bytes with the final NUL)."""
MAX_COMMAND_CHARS = 262_144
"""Most characters of a command given as a list, its arguments added up."""
MAX_STRING_CHARS = 32_768
"""Most characters of a command given as one string (longer ones go as a list, unsplit)."""

_EXCERPT = 200

# "~" and "#" only mean something at the start of a word (home expansion, a comment), and
# both appear harmlessly inside words ("HEAD~1", "C#"), so only that position is refused.
_WORD_START_SYNTAX = re.compile(r"(?:^|\s)([~#])")
# One step of the splitter each: blanks between words; an unquoted run (plain characters and
# backslash escapes); the inside of a double-quoted part. The alternatives of each start with
# different characters, so no match can backtrack; escapes are then undone by one substitution.
_BLANKS = re.compile(r"[ \t\r\n]+")
_UNQUOTED = re.compile(r"(?:[^ \t\r\n'\"\\]+|\\[\s\S])+")
_DOUBLE_QUOTED = re.compile(r'(?:[^"\\]+|\\[\s\S])*')
# Undoing escapes: splitting at each escape keeps the escaped character (the group) between
# the runs around it, so joining the pieces gives the word (no Python per character).
_UNESCAPE = re.compile(r"\\([\s\S])")
_UNESCAPE_QUOTED = re.compile(r'\\(["\\])')
_BLANK = frozenset(" \t\r\n")
_QUOTING = re.compile(r"['\"\\]")


def parse_command(command: str | Sequence[str]) -> tuple[str, ...]:
    """The argv for ``command``.

    Args:
        command: an argv list, used as is, or a string split the way a POSIX shell splits
            words (quotes and backslashes), provided it holds no other shell syntax.

    Raises:
        RetryWithFeedback: the command is empty, too long or has too many arguments, holds a
            NUL byte, has unbalanced quotes, or (as a string) contains shell syntax; the
            message says what to do instead.
    """
    if isinstance(command, str):
        if len(command) > MAX_STRING_CHARS:
            raise _too_long(len(command), MAX_STRING_CHARS, " (a longer one goes as a list)")
        argv = _split(command)
    else:
        if len(command) > MAX_ARGS:
            raise _too_many()
        argv = tuple(command)
        if not all(isinstance(arg, str) for arg in argv):
            raise RetryWithFeedback("Every element of the command list must be a string.")
        total = sum(map(len, argv))
        if total > MAX_COMMAND_CHARS:
            raise _too_long(total, MAX_COMMAND_CHARS, "")
    if not argv or not argv[0]:
        raise RetryWithFeedback("The command is empty; give a program and its arguments.")
    longest = max(map(len, argv))
    if longest > MAX_ARG_CHARS // 4:
        # The kernel counts bytes: measure the arguments that could be too long in UTF-8.
        longest = max(len(arg.encode("utf-8", "surrogatepass")) for arg in argv)
    if longest > MAX_ARG_CHARS:
        raise RetryWithFeedback(
            f"One argument has {longest} bytes; at most {MAX_ARG_CHARS} fit in one argument. "
            "Put long content in a file and pass its name."
        )
    if "\0" in "".join(argv):  # (one pass in C over at most MAX_COMMAND_CHARS)
        raise RetryWithFeedback("The command contains a NUL byte, which no argument can hold.")
    return argv


def excerpt(text: str, limit: int = _EXCERPT) -> str:
    """``text`` as shown in a message: whole when short, else its start and a count."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters)"


def shown_argv(argv: Sequence[str], *, most: int = 64) -> list[str]:
    """``argv`` as a refusal's data holds it: at most ``most`` arguments, each excerpted, so
    that the error stays small whatever the command was."""
    shown = [excerpt(arg) for arg in argv[:most]]
    if len(argv) > most:
        shown.append(f"… ({len(argv) - most} more arguments)")
    return shown


def split_words(command: str) -> tuple[str, ...]:
    """Split ``command`` into words exactly as ``shlex.split(command)`` does, in linear time.

    ``shlex`` builds each word one character at a time (quadratic for a long word); this walks
    the string once, a run of characters at a time, and stops at :data:`MAX_ARGS` words.

    Raises:
        ValueError: unbalanced quotes or a trailing backslash (as ``shlex`` says).
        RetryWithFeedback: more than :data:`MAX_ARGS` words.
    """
    if not _QUOTING.search(command):
        # No quotes or backslashes: the words are what lies between blanks (split in C, at
        # most MAX_ARGS + 1 pieces).
        words = _BLANKS.split(command.strip(" \t\r\n"), maxsplit=MAX_ARGS)
        if len(words) > MAX_ARGS:
            raise _too_many()
        return tuple(words) if words != [""] else ()
    words = []
    parts: list[str] = []
    in_word = False
    index, size = 0, len(command)
    while index < size:
        char = command[index]
        if char in _BLANK:
            if in_word:
                if len(words) >= MAX_ARGS:
                    raise _too_many()
                words.append("".join(parts))
                parts, in_word = [], False
            index = _BLANKS.match(command, index).end()  # type: ignore[union-attr]
            continue
        in_word = True
        if char == "'":
            end = command.find("'", index + 1)
            if end < 0:
                raise ValueError("No closing quotation")
            parts.append(command[index + 1 : end])
            index = end + 1
        elif char == '"':
            end = _DOUBLE_QUOTED.match(command, index + 1).end()  # type: ignore[union-attr]
            if end >= size:
                # The quote is unclosed, or a backslash ends the string inside it.
                raise ValueError("No closing quotation")
            if command[end] != '"':
                raise ValueError("No escaped character")
            piece = command[index + 1 : end]
            parts.append(_unescape(_UNESCAPE_QUOTED, piece) if "\\" in piece else piece)
            index = end + 1
        else:
            run = _UNQUOTED.match(command, index)
            if run is None:  # a backslash that ends the string
                raise ValueError("No escaped character")
            end = run.end()
            piece = command[index:end]
            parts.append(_unescape(_UNESCAPE, piece) if "\\" in piece else piece)
            index = end
    if in_word:
        if len(words) >= MAX_ARGS:
            raise _too_many()
        words.append("".join(parts))
    return tuple(words)


def _unescape(pattern: re.Pattern[str], piece: str) -> str:
    return "".join(pattern.split(piece))


def _split(command: str) -> tuple[str, ...]:
    found = sorted(SHELL_METACHARACTERS.intersection(command))
    word_start = _WORD_START_SYNTAX.search(command)
    if word_start is not None:
        found.append(word_start.group(1))
    if found:
        shown = " ".join(repr(char) for char in found)
        raise RetryWithFeedback(
            f"The command string contains shell syntax ({shown}), but no shell runs it: "
            "there are no pipes, redirections, variables, substitutions, globs or command "
            "lists. Make one call per program, and pass the command as a list of arguments "
            '(["rg", "-n", "a|b"]) to give these characters to the program literally.',
            data={"characters": found},
        )
    try:
        return split_words(command)
    except ValueError as error:
        raise RetryWithFeedback(
            f"The command string cannot be split into arguments ({error}); check the quotes, "
            "or pass the command as a list of arguments."
        ) from error


def _too_long(size: int, limit: int, hint: str) -> RetryWithFeedback:
    return RetryWithFeedback(
        f"The command has {size} characters; at most {limit} are accepted{hint}. Put long "
        "content in a file and pass its name, or make several smaller calls.",
        data={"characters": size, "limit": limit},
    )


def _too_many() -> RetryWithFeedback:
    return RetryWithFeedback(
        f"The command has more than {MAX_ARGS} arguments; make several smaller calls.",
        data={"limit": MAX_ARGS},
    )
