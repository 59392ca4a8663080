"""Loading a policy from TOML or a mapping; every problem is a :class:`PolicyError` with a line.

A policy that cannot be loaded must never turn into "allow everything", so this module checks
every key, type and rule before the policy exists, and says where the problem is.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from invokit.exceptions import PolicyError
from invokit.permissions._deciders import parse_deciders
from invokit.permissions._policy import DEFAULT_MODES, Policy
from invokit.permissions._quotas import parse_quotas
from invokit.permissions._rules import RuleSyntaxError, parse_rule

RULE_KEYS = ("allow", "ask", "deny", "extra_allow")
KEYS = (*RULE_KEYS, "default", "root", "quota", "allow_surfaces", "approvers")

Locate = Callable[[str, str | None], int | None]

_TOML_LINE = re.compile(r"at line (\d+)")
_HEADER = re.compile(r"^\s*\[")
_KEY_LINE = re.compile(r"^\s*(?:\w+|\"[^\"]*\"|'[^']*')\s*=")
_POLICY_HEADER = re.compile(r"^\s*\[\s*policy\s*\]\s*(#.*)?$")


def _no_line(key: str, needle: str | None) -> int | None:
    return None


def _locator(text: str, *, in_table: bool) -> Locate:
    """Find the line of ``key`` (and of ``needle`` in its value) in the policy table's text."""
    lines = text.splitlines()

    def locate(key: str, needle: str | None) -> int | None:
        start = 0
        if in_table:
            headers = [i for i, line in enumerate(lines) if _POLICY_HEADER.match(line)]
            if not headers:
                return None
            start = headers[0] + 1
        key_form = re.compile(
            rf"^\s*(?:{re.escape(key)}|\"{re.escape(key)}\"|'{re.escape(key)}')\s*="
        )
        key_line: int | None = None
        for i in range(start, len(lines)):
            if _HEADER.match(lines[i]) and key_line is None and in_table:
                return None
            if key_line is None:
                if key_form.match(lines[i]):
                    key_line = i
                else:
                    continue
            if needle is None:
                return key_line + 1
            if i > key_line and (_HEADER.match(lines[i]) or _KEY_LINE.match(lines[i])):
                break
            forms = (needle, json.dumps(needle)[1:-1])
            if any(form in lines[i] for form in forms):
                return i + 1
        return None if key_line is None else key_line + 1

    return locate


def load_mapping(
    data: Mapping[str, Any],
    *,
    source: str,
    base_dir: Path | None = None,
    locate: Locate = _no_line,
) -> Policy:
    """Check a ``[policy]`` mapping completely, then build the policy."""
    if not isinstance(data, Mapping):
        raise PolicyError(f"a policy must be a table, not {type(data).__name__}", source=source)
    for key in data:
        if key not in KEYS:
            raise PolicyError(
                f"unknown policy key {key!r}; the keys are {', '.join(KEYS)}",
                source=source,
                line=locate(str(key), None),
            )
    rules: dict[str, list[str]] = {}
    for key in RULE_KEYS:
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise PolicyError(
                f"{key} must be a list of rule strings", source=source, line=locate(key, None)
            )
        for text in value:
            try:
                parse_rule(text, "allow")
            except RuleSyntaxError as exc:
                raise PolicyError(str(exc), source=source, line=locate(key, text)) from None
        rules[key] = value
    default = data.get("default", "annotations")
    if default not in DEFAULT_MODES:
        raise PolicyError(
            f"default must be one of {', '.join(DEFAULT_MODES)}, not {default!r}",
            source=source,
            line=locate("default", None),
        )
    root = data.get("root")
    if root is not None and not isinstance(root, str):
        raise PolicyError("root must be a string path", source=source, line=locate("root", None))
    if root is not None and base_dir is not None and not os.path.isabs(root):
        root = str(base_dir / root)
    quotas = parse_quotas(data.get("quota", []), source=source)
    approvers = parse_deciders(data.get("approvers", []), source=source, ask_rules=rules["ask"])
    surfaces = data.get("allow_surfaces", [])
    if not isinstance(surfaces, list) or not all(isinstance(v, str) for v in surfaces):
        raise PolicyError(
            "allow_surfaces must be a list of root-relative paths",
            source=source,
            line=locate("allow_surfaces", None),
        )
    try:
        return Policy(
            quotas=quotas,
            allow=rules["allow"],
            ask=rules["ask"],
            deny=rules["deny"],
            extra_allow=rules["extra_allow"],
            default=default,
            root=root,
            allow_surfaces=surfaces,
            approvers=approvers,
        )
    except PolicyError as exc:
        raise PolicyError(
            str(exc.args[0]), source=source, line=locate("allow_surfaces", None)
        ) from None


def load_text(text: str, *, source: str = "<string>", base_dir: Path | None = None) -> Policy:
    """Parse TOML text: its ``[policy]`` table, or, without one, its top-level keys."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = _TOML_LINE.search(str(exc))
        line = int(found.group(1)) if found else None
        if line is None and "end of document" in str(exc):
            line = max(1, len(text.splitlines()))
        raise PolicyError(f"not valid TOML: {exc}", source=source, line=line) from None
    if "policy" in document:
        table = document["policy"]
        if not isinstance(table, dict):
            raise PolicyError(
                "'policy' must be a table ([policy])",
                source=source,
                line=_locator(text, in_table=False)("policy", None),
            )
        return load_mapping(
            table, source=source, base_dir=base_dir, locate=_locator(text, in_table=True)
        )
    return load_mapping(
        document, source=source, base_dir=base_dir, locate=_locator(text, in_table=False)
    )


def load_file(path: str | os.PathLike[str]) -> Policy:
    """Read and parse a policy file; a missing or unreadable file is a :class:`PolicyError`."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(f"cannot read the policy file: {exc}", source=str(file)) from None
    return load_text(text, source=str(file), base_dir=file.resolve().parent)
