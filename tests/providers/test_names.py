"""Reversible provider names: identity where allowed, no collisions, a lookup back."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from invokit.providers import NameMap
from invokit.providers._names import ANTHROPIC_NAMES, GEMINI_NAMES, OPENAI_NAMES

TOOL_NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}", fullmatch=True)


def test_allowed_names_are_sent_unchanged() -> None:
    """Names the provider accepts map to themselves."""
    names = NameMap.build(["search", "fs-read", "_x"], OPENAI_NAMES)
    assert dict(names.to_provider) == {"search": "search", "fs-read": "fs-read", "_x": "_x"}
    assert names.changes() == ()


def test_dots_become_underscores_for_openai_and_anthropic() -> None:
    """A dotted name is sent with underscores and mapped back by lookup."""
    for rule in (OPENAI_NAMES, ANTHROPIC_NAMES):
        names = NameMap.build(["fs.read"], rule)
        assert names.provider_name("fs.read") == "fs_read"
        assert names.invokit_name("fs_read") == "fs.read"


def test_gemini_keeps_dots() -> None:
    """Gemini accepts dots, so dotted names are not renamed."""
    assert NameMap.build(["fs.read"], GEMINI_NAMES).provider_name("fs.read") == "fs.read"


def test_a_real_name_wins_over_a_renamed_one() -> None:
    """When fs.read would become an existing fs_read, fs_read keeps its name and fs.read moves."""
    names = NameMap.build(["fs_read", "fs.read"], OPENAI_NAMES)
    assert names.provider_name("fs_read") == "fs_read"
    moved = names.provider_name("fs.read")
    assert moved.startswith("fs_read_") and len(moved) == len("fs_read_") + 6
    assert names.invokit_name(moved) == "fs.read"
    assert [c.tool for c in names.changes()] == ["fs.read"]


def test_renamed_names_never_collide_with_each_other() -> None:
    """Names that sanitize alike (a.b, a:b beside a real a_b) still get distinct names."""
    names = NameMap.build(["a.b", "a_b", "a:b"], OPENAI_NAMES)
    assert len(set(names.to_provider.values())) == 3
    assert names.provider_name("a_b") == "a_b"


def test_long_names_stay_within_the_limit() -> None:
    """A 64-character dotted name that collides is shortened to fit with its digest."""
    long_dotted = "n." + "x" * 62
    long_plain = "n_" + "x" * 62
    names = NameMap.build([long_dotted, long_plain], OPENAI_NAMES)
    assert len(names.provider_name(long_dotted)) == 64
    assert OPENAI_NAMES.allowed.fullmatch(names.provider_name(long_dotted))


def test_unknown_names_pass_through() -> None:
    """A name the model invented is returned unchanged in both directions."""
    names = NameMap.build(["fs.read"], OPENAI_NAMES)
    assert names.invokit_name("nonexistent") == "nonexistent"
    assert names.provider_name("other.tool") == "other.tool"


@given(st.sets(TOOL_NAMES, max_size=12))
def test_mapping_is_valid_injective_and_reversible(tool_names: set[str]) -> None:
    """For any set of tool names, every provider name is allowed, distinct and maps back."""
    for rule in (OPENAI_NAMES, ANTHROPIC_NAMES, GEMINI_NAMES):
        names = NameMap.build(tool_names, rule)
        sent = [names.provider_name(n) for n in tool_names]
        assert len(set(sent)) == len(sent)
        assert all(rule.allowed.fullmatch(s) for s in sent)
        assert all(names.invokit_name(names.provider_name(n)) == n for n in tool_names)


@given(st.lists(TOOL_NAMES, min_size=1, max_size=8, unique=True).flatmap(st.permutations))
def test_mapping_does_not_depend_on_order(tool_names: list[str]) -> None:
    """The same names in any order give the same mapping (declarations stay byte-stable)."""
    assert NameMap.build(tool_names, OPENAI_NAMES) == NameMap.build(
        sorted(tool_names), OPENAI_NAMES
    )
