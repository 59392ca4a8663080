"""Tests for the public surface of ``invokit``: a sorted, complete ``__all__`` and value types."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from typing import Any

import pytest

import invokit
from invokit import (
    ErrorInfo,
    ImagePart,
    JsonPart,
    OutputLimit,
    Progress,
    ResourceLink,
    TextPart,
    ToolAnnotations,
    ToolCall,
    ToolResult,
    ToolSpec,
)

VALUE_TYPES = [
    ToolSpec,
    ToolAnnotations,
    OutputLimit,
    ToolCall,
    ToolResult,
    TextPart,
    JsonPart,
    ImagePart,
    ResourceLink,
    ErrorInfo,
    Progress,
]


def _defined_in_invokit(value: Any) -> bool:
    return (inspect.isclass(value) or inspect.isfunction(value)) and (
        getattr(value, "__module__", "") or ""
    ).startswith("invokit")


def test_all_is_sorted() -> None:
    """``invokit.__all__`` is in sorted order, without duplicates."""
    assert invokit.__all__ == sorted(set(invokit.__all__))


@pytest.mark.parametrize("name", invokit.__all__)
def test_every_exported_name_is_importable(name: str) -> None:
    """Each name in ``__all__`` can be imported from the package."""
    module = importlib.import_module("invokit")
    assert getattr(module, name) is not None


def test_all_holds_every_public_class_and_function() -> None:
    """Every public class or function of invokit in the package namespace is in ``__all__``."""
    public = {
        name
        for name, value in vars(invokit).items()
        if not name.startswith("_") and _defined_in_invokit(value)
    }
    assert public
    assert public - set(invokit.__all__) == set()


def test_star_import_gives_exactly_all() -> None:
    """``from invokit import *`` binds exactly the names of ``__all__``."""
    namespace: dict[str, Any] = {}
    exec("from invokit import *", namespace)
    namespace.pop("__builtins__")
    assert set(namespace) == set(invokit.__all__)


def test_the_documented_contract_names_are_exported() -> None:
    """The names the design promises at the top level are all there."""
    promised = {
        "tool",
        "Tool",
        "ToolContext",
        "ToolSpec",
        "ToolAnnotations",
        "OutputLimit",
        "ToolRegistry",
        "ToolCall",
        "ToolResult",
        "TextPart",
        "JsonPart",
        "ImagePart",
        "ResourceLink",
    }
    assert promised <= set(invokit.__all__)


def test_version_is_a_string() -> None:
    """The package exposes its version."""
    assert isinstance(invokit.__version__, str)


EXPORTED_DATACLASSES = sorted(
    (
        value
        for value in (getattr(invokit, name) for name in invokit.__all__)
        if inspect.isclass(value) and dataclasses.is_dataclass(value)
    ),
    key=lambda cls: cls.__name__,
)
# Outcomes are matched positionally (``case Completed(result):``), so their one field is not
# keyword-only; everything else is.
MATCHED_POSITIONALLY = {"Completed", "Failed", "Interrupted"}


def test_the_core_value_types_are_exported() -> None:
    """Every core value type is part of the public API (so the meta-test below covers it)."""
    assert set(VALUE_TYPES) <= set(EXPORTED_DATACLASSES)


@pytest.mark.parametrize("cls", EXPORTED_DATACLASSES, ids=lambda cls: cls.__name__)
def test_value_types_are_frozen_keyword_only_slotted_dataclasses(cls: type) -> None:
    """Public value types are frozen, keyword-only dataclasses with slots."""
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    assert params.frozen, f"{cls.__name__} is not frozen"
    assert "__slots__" in vars(cls), f"{cls.__name__} has no slots"
    positional = [f.name for f in dataclasses.fields(cls) if not f.kw_only and f.init]
    if cls.__name__ in MATCHED_POSITIONALLY:
        assert len(positional) == 1, f"{cls.__name__} should have one positional field"
    else:
        assert positional == [], f"{cls.__name__} has positional fields {positional}"
