"""A reversible mapping between invokit tool names and the names a provider allows.

invokit names may contain ``.`` (``fs.read``); OpenAI and Anthropic allow only letters, digits,
``_`` and ``-``. A name the provider accepts is sent unchanged, so most declarations look
exactly like the registry. Any other name has its forbidden characters replaced by ``_``; if
that collides with another name (``fs.read`` beside a real ``fs_read``) a short hash of the
original is appended, so two tools never share a provider name. The map is a table, not a
formula: reversing it is a lookup and cannot be fooled by a name the model invents.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from invokit.providers._report import Change


@dataclass(frozen=True, kw_only=True, slots=True)
class NameRule:
    """What names a provider accepts."""

    allowed: re.Pattern[str]
    """A pattern a whole name must match."""
    forbidden_char: re.Pattern[str]
    """Matches each character to replace."""
    max_length: int
    """The longest name accepted."""


OPENAI_NAMES = NameRule(
    allowed=re.compile(r"[A-Za-z0-9_-]{1,64}"),
    forbidden_char=re.compile(r"[^A-Za-z0-9_-]"),
    max_length=64,
)
ANTHROPIC_NAMES = NameRule(
    allowed=re.compile(r"[A-Za-z0-9_-]{1,64}"),
    forbidden_char=re.compile(r"[^A-Za-z0-9_-]"),
    max_length=64,
)
# Gemini also allows "." and ":" but wants a letter or "_" first.
GEMINI_NAMES = NameRule(
    allowed=re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}"),
    forbidden_char=re.compile(r"[^A-Za-z0-9_.:-]"),
    max_length=64,
)


@dataclass(frozen=True, kw_only=True, slots=True)
class NameMap:
    """Tool names both ways: invokit name ↔ the name sent to the provider."""

    to_provider: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """invokit name → provider name, for every declared tool."""
    to_invokit: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """provider name → invokit name, for every declared tool."""

    @classmethod
    def build(cls, names: Iterable[str], rule: NameRule) -> NameMap:
        """Map ``names`` under ``rule``; names the provider accepts map to themselves."""
        ordered = sorted(set(names))
        forward: dict[str, str] = {}
        taken: set[str] = set()
        # Accepted names claim themselves first, so a rename never steals a real name.
        for name in ordered:
            if rule.allowed.fullmatch(name):
                forward[name] = name
                taken.add(name)
        for name in ordered:
            if name in forward:
                continue
            candidate = _sanitize(name, rule)
            if candidate in taken or not rule.allowed.fullmatch(candidate):
                candidate = _with_digest(candidate, name, rule, taken)
            forward[name] = candidate
            taken.add(candidate)
        backward = {provider: name for name, provider in forward.items()}
        return cls(to_provider=MappingProxyType(forward), to_invokit=MappingProxyType(backward))

    def provider_name(self, name: str) -> str:
        """The name the provider sees for the tool ``name`` (unchanged if not declared)."""
        return self.to_provider.get(name, name)

    def invokit_name(self, provider_name: str) -> str:
        """The invokit name for a name the model used.

        A name that was never declared comes back unchanged, so the executor reports it as an
        unknown tool with the list of real ones.
        """
        return self.to_invokit.get(provider_name, provider_name)

    def changes(self) -> tuple[Change, ...]:
        """One ``renamed`` change for every name that is sent differently."""
        return tuple(
            Change(
                tool=name,
                path="",
                keyword="name",
                action="renamed",
                effect="none",
                detail=f"sent as {provider!r}; calls to {provider!r} are mapped back",
            )
            for name, provider in sorted(self.to_provider.items())
            if name != provider
        )


def _sanitize(name: str, rule: NameRule) -> str:
    cleaned = rule.forbidden_char.sub("_", name)[: rule.max_length]
    if not rule.allowed.fullmatch(cleaned):
        cleaned = ("_" + cleaned)[: rule.max_length]
    return cleaned


def _with_digest(base: str, name: str, rule: NameRule, taken: set[str]) -> str:
    digest = hashlib.sha256(name.encode()).hexdigest()
    # Longer digests only if a (vanishingly unlikely) collision repeats.
    for width in range(6, len(digest) + 1):
        suffix = "_" + digest[:width]
        candidate = base[: rule.max_length - len(suffix)] + suffix
        if candidate not in taken:
            return candidate
    raise AssertionError(f"no free provider name for {name!r}")  # pragma: no cover
