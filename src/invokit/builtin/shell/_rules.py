"""Allow rules: which programs, with which leading arguments, the shell tool may run.

A rule is written like a command: ``"git status"`` allows exactly ``git status``; a final
``*`` allows any further arguments (``"git diff *"`` allows ``git diff`` and ``git diff --stat
a.py``); a ``*`` in the middle stands for exactly one argument (``"git log -n * --oneline"``).
The program of a rule and of a command are both resolved to a real path on disk and must be the
same file *and* have the same name, so neither a look-alike script in the workspace nor a
multi-call binary run under another name slips through.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from invokit.builtin.shell._command import excerpt, shown_argv
from invokit.exceptions import AccessDenied, InvalidToolDefinition

__all__ = ["AllowList", "AllowRule", "Resolved", "resolve_program"]

_ANY = "*"


@dataclass(frozen=True, kw_only=True, slots=True)
class AllowRule:
    """One allow rule, parsed from its text."""

    text: str
    """The rule as written."""
    program: str
    """The program: a name looked up on ``PATH``, or a path."""
    args: tuple[str, ...]
    """Leading arguments that must match; ``"*"`` stands for any one argument."""
    rest: bool
    """Whether further arguments are allowed (the rule ended with ``*``)."""

    @classmethod
    def parse(cls, text: str) -> AllowRule:
        """Parse ``text`` (split like a command line; quotes keep spaces inside arguments).

        Raises:
            InvalidToolDefinition: the rule is empty, unbalanced, or starts with ``*``.
        """
        try:
            tokens = shlex.split(text)
        except ValueError as error:
            raise InvalidToolDefinition(f"allow rule cannot be split: {error}", text) from error
        if not tokens:
            raise InvalidToolDefinition("allow rule is empty", text)
        if tokens[0] == _ANY:
            raise InvalidToolDefinition("allow rule must name its program, not '*'", text)
        rest = len(tokens) > 1 and tokens[-1] == _ANY
        args = tuple(tokens[1:-1] if rest else tokens[1:])
        return cls(text=text, program=tokens[0], args=args, rest=rest)

    def matches_args(self, args: Sequence[str]) -> bool:
        """Whether ``args`` (the command without its program) fit this rule."""
        if len(args) < len(self.args) or (len(args) > len(self.args) and not self.rest):
            return False
        return all(want in (_ANY, got) for want, got in zip(self.args, args, strict=False))


@dataclass(frozen=True, kw_only=True, slots=True)
class Resolved:
    """A command that an allow rule admits."""

    rule: AllowRule
    """The rule that matched."""
    executable: str
    """Absolute path to run (the lookup result, whose real path was checked)."""
    real_path: str
    """The executable's real path, symlinks resolved."""


def resolve_program(program: str, *, search_path: str, cwd: Path) -> tuple[str, str] | None:
    """Find ``program`` as the tool would run it.

    Args:
        program: a bare name (looked up on ``search_path``) or a path (relative to ``cwd``).
        search_path: the ``PATH`` the command runs with, not the host's.
        cwd: where a relative path starts.

    Returns:
        The absolute path to run and its real path, or ``None`` when there is no such
        executable file.
    """
    if "/" in program:
        candidate = Path(program) if os.path.isabs(program) else cwd / program
        found = str(candidate) if _is_executable_file(candidate) else None
    else:
        found = shutil.which(program, path=search_path)
    if found is None:
        return None
    absolute = os.path.abspath(found)
    return absolute, os.path.realpath(absolute)


def _is_executable_file(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


class AllowList:
    """The allow rules of one shell tool, checked against each command."""

    def __init__(self, rules: Iterable[str]) -> None:
        self.rules = tuple(AllowRule.parse(text) for text in rules)
        if not self.rules:
            raise InvalidToolDefinition("the shell tool needs at least one allow rule", ())
        # The file each rule's program named when first found: a rule keeps meaning that
        # file (a link in the workspace re-pointed later does not change what it allows).
        self._wanted: dict[tuple[str, str, Path], str] = {}

    def check(self, argv: Sequence[str], *, search_path: str, root: Path, cwd: Path) -> Resolved:
        """The rule and executable for ``argv``.

        Args:
            argv: the command.
            search_path: the ``PATH`` the command runs with.
            root: where relative program paths in rules start.
            cwd: where a relative program path in ``argv`` starts.

        Raises:
            AccessDenied: no rule admits the command (the message lists the rules), or the
                program cannot be found.
        """
        program, args = argv[0], argv[1:]
        found = resolve_program(program, search_path=search_path, cwd=cwd)
        name = os.path.basename(program)
        named = [rule for rule in self.rules if os.path.basename(rule.program) == name]
        if found is not None:
            executable, real_path = found
            for rule in named:
                if not rule.matches_args(args):
                    continue
                wanted = self._rule_program(rule, search_path=search_path, root=root)
                if wanted == real_path:
                    return Resolved(rule=rule, executable=executable, real_path=real_path)
        allowed = [rule.text for rule in self.rules]
        data = {"argv": shown_argv(argv), "allowed": allowed}
        if found is None and named:
            raise AccessDenied(
                f"{excerpt(program)!r} is not installed or not executable here", data=data
            )
        shown = excerpt(shlex.join(shown_argv(argv, most=16)))
        if named and not any(rule.matches_args(args) for rule in named):
            why = f"{name} is allowed only as: {', '.join(rule.text for rule in named)}"
        elif named:
            why = f"{excerpt(program)!r} is not the {name} program the allow rules name"
        else:
            why = f"{excerpt(name)} is not an allowed program; allowed: {', '.join(allowed)}"
        raise AccessDenied(f"Command {shown!r} is not allowed: {why}.", data=data)

    def _rule_program(self, rule: AllowRule, *, search_path: str, root: Path) -> str | None:
        key = (rule.program, search_path, root)
        known = self._wanted.get(key)
        if known is None:
            found = resolve_program(rule.program, search_path=search_path, cwd=root)
            if found is None:
                return None  # not installed (yet): looked up again next time
            known = self._wanted.setdefault(key, found[1])
        return known
