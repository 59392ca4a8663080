"""Registries: sorted, mergeable, prefixable, filterable, renamable sets of tools."""

from invokit.registry._base import Conflicts, Registry, ToolRegistry
from invokit.registry._filtered import FilteredRegistry
from invokit.registry._merged import MergedRegistry
from invokit.registry._prefixed import PrefixedRegistry
from invokit.registry._renamed import AliasedRegistry, RenamedRegistry
from invokit.registry._unadvertised import UnadvertisedRegistry
from invokit.registry._view import RenamedTool
from invokit.registry._wrapper import WrapperRegistry

__all__ = [
    "AliasedRegistry",
    "Conflicts",
    "FilteredRegistry",
    "MergedRegistry",
    "PrefixedRegistry",
    "Registry",
    "RenamedRegistry",
    "RenamedTool",
    "ToolRegistry",
    "UnadvertisedRegistry",
    "WrapperRegistry",
]
