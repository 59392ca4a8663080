"""The ``invokit.integrations.pydantic_ai`` surface, and what happens without the extra."""

from __future__ import annotations

import subprocess
import sys

import invokit.integrations.pydantic_ai as module


def test_all_is_sorted_and_importable() -> None:
    """``__all__`` is sorted, holds the documented names, and every name exists."""
    assert list(module.__all__) == sorted(module.__all__)
    assert {"InvokitToolset", "approval_results", "from_pydantic_ai"} <= set(module.__all__)
    for name in module.__all__:
        assert hasattr(module, name), name


def test_without_the_extra_the_import_says_what_to_install() -> None:
    """With pydantic-ai missing, importing the module raises MissingExtra naming the extra."""
    script = (
        "import sys; sys.modules['pydantic_ai'] = None\n"
        "from invokit.exceptions import MissingExtra\n"
        "try:\n"
        "    import invokit.integrations.pydantic_ai\n"
        "except MissingExtra as exc:\n"
        "    print(exc.extra, exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.startswith("pydantic-ai ")
    assert 'pip install "invokit[pydantic-ai]"' in done.stdout


def test_import_invokit_does_not_load_the_framework() -> None:
    """``import invokit`` (and the integrations package) loads no framework."""
    script = (
        "import sys, invokit, invokit.integrations\n"
        "print(sorted(m for m in ('pydantic_ai', 'agents') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"
