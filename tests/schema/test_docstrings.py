"""Tests for reading descriptions out of docstrings (invokit.schema._docstrings)."""

from __future__ import annotations

import pytest

from invokit.schema._docstrings import ParsedDocstring, parse_docstring

GOOGLE = """Search the index.

    Returns the best matches first.

    Args:
        query (str): Words to look for,
            in any order.
        limit: How many results.
        **filters: Extra field filters.

    Returns:
        The matches.

    Raises:
        ValueError: never really.
    """

NUMPY = """Search the index.

    Returns the best matches first.

    Parameters
    ----------
    query : str
        Words to look for,
        in any order.
    limit : int, optional
        How many results.

    Returns
    -------
    list
        The matches.
    """

SPHINX = """Search the index.

    Returns the best matches first.

    :param query: Words to look for,
        in any order.
    :param int limit: How many results.
    :returns: The matches.
    :raises ValueError: never really.
    """

EXPECTED = ParsedDocstring(
    description="Search the index.\n\nReturns the best matches first.",
    params={"query": "Words to look for, in any order.", "limit": "How many results."},
)


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param(NUMPY, id="numpy"),
        pytest.param(SPHINX, id="sphinx"),
    ],
)
def test_numpy_and_sphinx_styles_give_description_and_params(doc: str) -> None:
    """NumPy and Sphinx docstrings yield the body as description and each parameter's text."""
    assert parse_docstring(doc) == EXPECTED


def test_google_style_gives_description_and_params() -> None:
    """A Google docstring yields the body, each Args entry joined across lines, and **kwargs."""
    parsed = parse_docstring(GOOGLE)
    assert parsed.description == EXPECTED.description
    assert parsed.params == {**EXPECTED.params, "filters": "Extra field filters."}


def test_sections_after_args_do_not_leak_into_params() -> None:
    """Returns and Raises sections are not read as parameters."""
    assert "ValueError" not in parse_docstring(GOOGLE).params
    assert "The matches." not in parse_docstring(GOOGLE).params.values()


@pytest.mark.parametrize(
    "doc",
    [pytest.param(None, id="none"), pytest.param("", id="empty")],
)
def test_missing_docstring_gives_nothing(doc: str | None) -> None:
    """No docstring means an empty description and no parameter texts."""
    assert parse_docstring(doc) == ParsedDocstring()


def test_plain_docstring_is_all_description() -> None:
    """A docstring without sections is the description, dedented and stripped."""
    assert parse_docstring("  Say hello.\n\n  To everyone.\n  ") == ParsedDocstring(
        description="Say hello.\n\nTo everyone."
    )


def test_google_entry_with_colon_in_text_keeps_the_rest() -> None:
    """A colon inside a parameter's description does not start a new parameter."""
    parsed = parse_docstring(
        """Fetch.

        Args:
            url: The address, e.g. http://example.test:8080/x.
        """
    )
    assert parsed.params == {"url": "The address, e.g. http://example.test:8080/x."}
