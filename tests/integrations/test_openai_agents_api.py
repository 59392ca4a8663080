"""The ``invokit.integrations.openai_agents`` surface, and what happens without the extra."""

from __future__ import annotations

import subprocess
import sys

import invokit.integrations.openai_agents as module


def test_all_is_sorted_and_importable() -> None:
    """``__all__`` is sorted, holds the documented names, and every name exists."""
    assert list(module.__all__) == sorted(module.__all__)
    assert {"InvokitTools", "from_openai_agents", "function_tools"} <= set(module.__all__)
    for name in module.__all__:
        assert hasattr(module, name), name


def test_without_the_extra_the_import_says_what_to_install() -> None:
    """With openai-agents missing, importing the module raises MissingExtra naming the extra."""
    script = (
        "import sys; sys.modules['agents'] = None\n"
        "from invokit.exceptions import MissingExtra\n"
        "try:\n"
        "    import invokit.integrations.openai_agents\n"
        "except MissingExtra as exc:\n"
        "    print(exc.extra, exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.startswith("openai-agents ")
    assert 'pip install "invokit[openai-agents]"' in done.stdout
