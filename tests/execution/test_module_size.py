"""Every module of ``invokit.execution`` stays small enough to read at once."""

from __future__ import annotations

from pathlib import Path

import pytest

import invokit.execution

PACKAGE = Path(invokit.execution.__file__).parent
MOST = 450


@pytest.mark.parametrize("path", sorted(PACKAGE.glob("*.py")), ids=lambda p: p.stem)
def test_no_module_is_over_450_lines(path: Path) -> None:
    """No module of ``invokit.execution`` is over 450 lines (split it by job, not by count)."""
    assert len(path.read_text().splitlines()) <= MOST
