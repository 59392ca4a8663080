"""Reading a function's docstring: its description and a description per parameter.

Google (``Args:``), NumPy (``Parameters`` with a dashed rule) and Sphinx (``:param x:``) styles.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

_GOOGLE_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments):\s*$"
)
_ANY_GOOGLE_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Returns|Return|Yields|"
    r"Raises|Examples?|Notes?|Attributes|See Also|Warnings?|References|Todo):\s*$"
)
_GOOGLE_PARAM = re.compile(r"^(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")
_NUMPY_RULE = re.compile(r"^-{3,}\s*$")
_SPHINX_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+):\s*(.*)$")
_SPHINX_FIELD = re.compile(r"^:\w+")


@dataclass(frozen=True, kw_only=True, slots=True)
class ParsedDocstring:
    """The parts of a docstring a tool schema uses."""

    description: str = ""
    """The text before the first section (summary and body)."""
    params: dict[str, str] = field(default_factory=dict)
    """Parameter name → its description."""


def parse_docstring(doc: str | None) -> ParsedDocstring:
    """Split ``doc`` into a description and per-parameter descriptions."""
    if not doc:
        return ParsedDocstring()
    lines = inspect.cleandoc(doc).splitlines()
    for index, line in enumerate(lines):
        stripped = line.strip()
        # Cheap tests first: most lines are prose and match none of the patterns.
        if (
            stripped.endswith(":")
            and not line.startswith(" ")
            and _ANY_GOOGLE_SECTION.match(stripped)
        ):
            return ParsedDocstring(description=_join(lines[:index]), params=_google(lines, index))
        if stripped.startswith("---") and _NUMPY_RULE.match(stripped) and index > 0:
            return ParsedDocstring(description=_join(lines[: index - 1]), params=_numpy(lines))
        if stripped.startswith(":") and _SPHINX_FIELD.match(stripped):
            return ParsedDocstring(description=_join(lines[:index]), params=_sphinx(lines[index:]))
    return ParsedDocstring(description=_join(lines))


def _join(lines: list[str]) -> str:
    return "\n".join(lines).strip()


def _google(lines: list[str], start: int) -> dict[str, str]:
    params: dict[str, str] = {}
    in_args = False
    current: str | None = None
    indent: int | None = None
    for line in lines[start:]:
        stripped = line.strip()
        if (
            not line.startswith(" ")
            and stripped.endswith(":")
            and _ANY_GOOGLE_SECTION.match(stripped)
        ):
            in_args = bool(_GOOGLE_SECTION.match(stripped))
            current, indent = None, None
            continue
        if not in_args or not stripped:
            continue
        width = len(line) - len(line.lstrip())
        match = _GOOGLE_PARAM.match(stripped)
        if match and (indent is None or width <= indent):
            indent = width
            current = match.group(1).lstrip("*")
            params[current] = match.group(3).strip()
        elif current is not None:
            params[current] = f"{params[current]} {stripped}".strip()
    return params


def _numpy(lines: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    in_params = False
    current: str | None = None
    for index, line in enumerate(lines):
        stripped = line.strip()
        following = lines[index + 1].strip() if index + 1 < len(lines) else ""
        if _NUMPY_RULE.match(following):
            in_params = stripped in ("Parameters", "Other Parameters", "Keyword Arguments")
            current = None
            continue
        if _NUMPY_RULE.match(stripped) or not in_params or not stripped:
            continue
        if not line.startswith(" "):
            current = stripped.split(":", 1)[0].strip().lstrip("*")
            params[current] = ""
        elif current is not None:
            params[current] = f"{params[current]} {stripped}".strip()
    return params


def _sphinx(lines: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        match = _SPHINX_PARAM.match(stripped)
        if match:
            current = match.group(1)
            params[current] = match.group(2).strip()
        elif _SPHINX_FIELD.match(stripped):
            current = None
        elif current is not None and stripped:
            params[current] = f"{params[current]} {stripped}".strip()
    return params
