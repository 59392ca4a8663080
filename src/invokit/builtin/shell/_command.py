"""Turn a model's command into an argv, refusing anything a shell would have interpreted.

No shell ever runs the command, so a string is only a convenience: it is split with
:func:`shlex.split`. If the string holds syntax a shell would act on (pipes, redirections,
substitutions, globs, several commands), splitting it would silently change its meaning, so it
is refused and the model is told to pass an argv list or to make separate calls.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from invokit.exceptions import RetryWithFeedback

__all__ = ["SHELL_METACHARACTERS", "parse_command"]

SHELL_METACHARACTERS = frozenset(";&|<>$`()[]{}*?\n\r")
"""Characters that mean something to a shell anywhere in a word (or between words).

Quoted or not, a string holding one is refused: a model that wrote them expected a shell.
"""

# "~" and "#" only mean something at the start of a word (home expansion, a comment), and
# both appear harmlessly inside words ("HEAD~1", "C#"), so only that position is refused.
_WORD_START_SYNTAX = re.compile(r"(?:^|\s)([~#])")

_MAX_ARGS = 4096


def parse_command(command: str | Sequence[str]) -> tuple[str, ...]:
    """The argv for ``command``.

    Args:
        command: an argv list, used as is, or a string split the way a POSIX shell splits
            words (quotes and backslashes), provided it holds no other shell syntax.

    Raises:
        RetryWithFeedback: the command is empty, holds a NUL byte, has unbalanced quotes, or
            (as a string) contains shell syntax; the message says what to do instead.
    """
    if isinstance(command, str):
        argv = _split(command)
    else:
        argv = tuple(command)
        if not all(isinstance(arg, str) for arg in argv):
            raise RetryWithFeedback("Every element of the command list must be a string.")
    if not argv or not argv[0]:
        raise RetryWithFeedback("The command is empty; give a program and its arguments.")
    if len(argv) > _MAX_ARGS:
        raise RetryWithFeedback(f"The command has more than {_MAX_ARGS} arguments.")
    if any("\0" in arg for arg in argv):
        raise RetryWithFeedback("The command contains a NUL byte, which no argument can hold.")
    return argv


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
        return tuple(shlex.split(command, comments=False, posix=True))
    except ValueError as error:
        raise RetryWithFeedback(
            f"The command string cannot be split into arguments ({error}); check the quotes, "
            "or pass the command as a list of arguments."
        ) from error
