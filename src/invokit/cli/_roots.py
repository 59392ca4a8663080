"""``invokit serve --root a --root b``: the filesystem tools over several roots.

The first ``--root`` is the project: its ``invokit.toml``, the policy's root, the shell tool and
the "approve always" scope, as with one root. Each further root gets its own filesystem tools,
named ``fs.<label>.read`` (``<label>`` from the folder's name: ``--root ../docs`` serves
``fs.docs.read``), each over its own jail and protected as the first is (invokit's state
directory, the configuration in use and the root's own ``invokit.toml`` cannot be written).
Their permission requests name paths absolute, so a policy rule, an approval or the audit log
never mistakes ``docs/README.md`` in one root for the same name in another.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from invokit._state import inside_any, state_dir
from invokit.cli._config import CONFIG_NAME
from invokit.cli._runtime import Setup

__all__ = ["ExtraRoot", "extra_roots", "with_extra_roots"]

_LABEL_CHARS = re.compile(r"[^A-Za-z0-9_-]+")


@dataclass(frozen=True, kw_only=True, slots=True)
class ExtraRoot:
    """A root served beside the first one."""

    path: Path
    """The directory, resolved."""
    namespace: str
    """Its tools' prefix: ``fs.<label>``."""


class RootsError(ValueError):
    """The roots given cannot be served together; the message says why and what to do."""


def extra_roots(primary: Path, given: list[Path]) -> list[ExtraRoot]:
    """The roots after the first, checked and named.

    Raises:
        RootsError: one is not a directory, is given twice, or holds invokit's state
            directory (a tool could then forge approvals).
    """
    seen = {primary.resolve()}
    taken = {"fs"}
    out: list[ExtraRoot] = []
    state = state_dir(create=False)
    for path in given:
        resolved = path.expanduser().resolve()
        if not resolved.is_dir():
            raise RootsError(f"--root {path} is not a directory")
        if resolved in seen:
            raise RootsError(f"--root {path} is given twice")
        seen.add(resolved)
        if inside_any(state, [resolved]) is not None:
            raise RootsError(
                f"--root {path} holds invokit's state directory ({state}), where approvals "
                "are kept: a tool could forge them. Set INVOKIT_STATE_DIR to a directory "
                "outside every root"
            )
        label = _LABEL_CHARS.sub("_", resolved.name)[:40].strip("_-") or "root"
        if not (label[0].isalpha() or label[0] == "_"):
            label = "r" + label
        unique, number = label, 2
        while f"fs.{unique}" in taken or unique in ("read", "list", "glob", "search", "stat"):
            unique, number = f"{label}-{number}", number + 1
        taken.add(f"fs.{unique}")
        out.append(ExtraRoot(path=resolved, namespace=f"fs.{unique}"))
    return out


def with_extra_roots(setup: Setup, roots: list[ExtraRoot]) -> Setup:
    """``setup`` with a filesystem toolset for each of ``roots``."""
    if not roots or not setup.config.filesystem:
        return setup
    from invokit.builtin.filesystem import filesystem

    registry = setup.registry
    for root in roots:
        registry = registry.merged(
            filesystem(
                root.path,
                writable=setup.config.writable,
                namespace=root.namespace,
                protected=(*setup.protected, root.path / CONFIG_NAME),
                absolute_requests=True,
            )
        )
    return replace(setup, registry=registry)
