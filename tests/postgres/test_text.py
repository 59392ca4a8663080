"""Text kept in a PostgreSQL column: what the column cannot hold is escaped, str subclasses too."""

from __future__ import annotations

import enum

import pytest

from invokit.postgres._text import loaded, stored


class Reason(str, enum.Enum):  # noqa: UP042 - the older str enum form, whose str() is its name
    """A str enum a host may pass as a reason or a name."""

    NUL = "a\x00b"
    PLAIN = "plain"


class Text(str):
    """A plain subclass of str."""

    __slots__ = ()


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("a\x00b", id="str"),
        pytest.param(Text("a\x00b"), id="str-subclass"),
        pytest.param(Reason.NUL, id="str-enum"),
        pytest.param(Reason.PLAIN, id="str-enum-plain"),
        pytest.param("\ud800", id="lone-surrogate"),
    ],
)
def test_any_text_is_stored_without_nul_and_loaded_back(value: str) -> None:
    """A NUL (which a PostgreSQL text column refuses) is escaped for a str subclass as for a
    str, the column gets plain str, and loading gives the text back."""
    column = stored(value)
    assert type(column) is str and "\x00" not in column
    assert loaded(column) == str.__str__(value)
