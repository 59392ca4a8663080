"""Glob patterns as regular expressions that cannot backtrack catastrophically.

A glob translated naively (``*`` as ``[^/]*``, ``**/`` as ``(?:[^/]+/)*``) makes a backtracking
engine try every way of spreading the text over the stars: ``*a*a*a*a*a*a*b`` against a long name,
or ``**/**/**/**/z`` against a deep path, takes seconds to minutes. The classic wildcard argument
avoids it: between two stars sits a *fixed-width* piece (literals, ``?``, classes), and placing
each piece at its earliest possible position never loses a match, so only the last star ever needs
to be retried. Here every star but the last is followed by its piece inside an atomic group
(``(?>.*?piece)``): the engine finds the earliest placement and never comes back to it. Path globs
apply the same argument twice: inside a segment for ``*``, and over whole segments for ``**/``
(each segment matched by an atomic component that ends at a ``/``). Matching is then
O(len(text) x len(pattern)) at worst, and patterns are capped by their callers.

This module only assembles the pieces; the glob dialects (policy text and path globs, the
filesystem tools' globs) parse their syntax and call :func:`chain`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ANY", "DIRS", "OPT_DIRS", "SEGMENT", "Star", "chain"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Star:
    """A wildcard that matches a run of text: its lazy and greedy regular expressions."""

    name: str
    lazy: str
    greedy: str


SEGMENT = Star(name="segment", lazy="[^/]*?", greedy="[^/]*")
"""``*`` in a path: any run inside one segment."""
ANY = Star(name="any", lazy=".*?", greedy=".*")
"""``*`` in a text glob: any run of characters, ``/`` included."""
OPT_DIRS = Star(name="opt_dirs", lazy="(?:.*?/)??", greedy="(?:.*/)?")
"""``**/`` in a text glob: nothing, or anything ending with ``/``."""
DIRS = Star(name="dirs", lazy="(?:[^/]++/)*?", greedy="(?:[^/]++/)*")
"""``**/`` in a path: any number of whole segments."""

Item = str | Star
"""A fixed-width regular expression piece, or a star."""


def chain(items: list[Item], *, merge: dict[frozenset[str], Star] | None = None) -> str:
    """The regular expression for ``items`` (pieces and stars, in order).

    Consecutive stars are merged first: a run of equal stars is one star; a mixed run is looked
    up in ``merge`` (by the names of its stars). Every star but the last is emitted as an atomic
    group with the piece that follows it, so the engine never backtracks into it.

    Raises:
        ValueError: a mixed run of stars has no entry in ``merge``.
    """
    pieces: list[str] = []  # fixed pieces between stars: pieces[0] before the first star
    stars: list[Star] = []
    current: list[str] = []
    run: list[Star] = []
    for item in items:
        if isinstance(item, Star):
            run.append(item)
            continue
        if run:
            pieces.append("".join(current))
            stars.append(_merged(run, merge))
            current, run = [], []
        current.append(item)
    if run:
        pieces.append("".join(current))
        stars.append(_merged(run, merge))
        current = []
    pieces.append("".join(current))
    out = [pieces[0]]
    for index, star in enumerate(stars):
        following = pieces[index + 1]
        if index == len(stars) - 1:
            out.append(star.greedy + following)
        else:
            out.append(f"(?>{star.lazy}{following})")
    return "".join(out)


def _merged(run: list[Star], merge: dict[frozenset[str], Star] | None) -> Star:
    names = frozenset(star.name for star in run)
    if len(names) == 1:
        return run[0]
    found = (merge or {}).get(names)
    if found is None:
        raise ValueError(f"stars {sorted(names)} cannot follow each other here")
    return found
