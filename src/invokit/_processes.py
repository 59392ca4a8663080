"""Starting programs without letting the served folder choose what runs.

A model can write files into the root a person serves. Any program invokit starts must
therefore never be found there: a ``PATH`` lookup skips relative entries (the current folder,
whatever it is) and entries inside the root, an interpreter runs isolated (``python -I``: no
current folder on the import path, no ``PYTHON*`` variables, no user site), and a process that
does not need the person's folder starts in a neutral one.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = ["python_free_environment", "which_outside"]


def _inside(path: Path, roots: Iterable[Path]) -> bool:
    real = Path(os.path.realpath(path))
    for root in roots:
        top = Path(os.path.realpath(root))
        if real == top or top in real.parents:
            return True
    return False


def which_outside(
    name: str, roots: Iterable[Path | str] = (), *, path: str | None = None
) -> str | None:
    """The absolute path of the program ``name`` on ``PATH``, never a relative entry's and
    never one inside ``roots`` (``None`` when there is no other).

    Args:
        name: a bare program name (a name with a ``/`` is not looked up: ``None``).
        roots: folders a model may write, such as the served root.
        path: the search path; default ``$PATH``.
    """
    if os.sep in name or not name:
        return None
    unsafe = [Path(root) for root in roots]
    search = os.environ.get("PATH", os.defpath) if path is None else path
    for entry in search.split(os.pathsep):
        # An empty or relative entry is the current folder, or a folder below it.
        if not entry or not os.path.isabs(entry):
            continue
        candidate = Path(entry) / name
        if not (candidate.is_file() and os.access(candidate, os.X_OK)):
            continue
        if _inside(candidate, unsafe):
            continue
        return str(candidate)
    return None


def python_free_environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) without the variables that change what a Python
    interpreter imports or runs first (``PYTHONPATH``, ``PYTHONHOME``, ``PYTHONSTARTUP``,
    ``PYTHONUSERBASE`` and every other ``PYTHON*``)."""
    source = os.environ if env is None else env
    return {key: value for key, value in source.items() if not key.startswith("PYTHON")}
