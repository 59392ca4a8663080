"""The package's public surface."""

from __future__ import annotations

import importlib
import subprocess
import sys

package = importlib.import_module("invokit.builtin.http")


def test_all_is_sorted_and_importable() -> None:
    """``__all__`` is sorted and every name in it exists."""
    assert list(package.__all__) == sorted(package.__all__)
    for name in package.__all__:
        assert hasattr(package, name), name


def test_importing_does_not_import_httpx() -> None:
    """httpx (the ``http`` extra) is loaded when the toolset is built, not on import."""
    code = (
        "import importlib, sys; h = importlib.import_module('invokit.builtin.http'); assert 'httpx' not in sys.modules; "
        "h.http(); assert 'httpx' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
