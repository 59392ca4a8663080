"""The public surfaces of ``invokit.loop`` and ``invokit.testing``."""

from __future__ import annotations

import dataclasses
import importlib
import inspect

import pytest

from invokit.loop import (
    AssistantMessage,
    Credentials,
    ExternalResult,
    RunInterrupted,
    RunResult,
    RunState,
    SystemMessage,
    ToolResultsMessage,
    UserMessage,
)
from invokit.testing import ModelRequest


@pytest.mark.parametrize("name", ["invokit.loop", "invokit.testing"])
def test_all_is_sorted_and_complete(name: str) -> None:
    """``__all__`` is sorted and holds every public class and function of the package."""
    module = importlib.import_module(name)
    assert module.__all__ == sorted(set(module.__all__))
    public = {
        key
        for key, value in vars(module).items()
        if not key.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and getattr(value, "__module__", "").startswith("invokit")
    }
    assert public <= set(module.__all__)
    for exported in module.__all__:
        assert getattr(module, exported) is not None


@pytest.mark.parametrize(
    "cls",
    [
        AssistantMessage,
        Credentials,
        ExternalResult,
        ModelRequest,
        RunInterrupted,
        RunResult,
        RunState,
        SystemMessage,
        ToolResultsMessage,
        UserMessage,
    ],
)
def test_value_types_are_frozen_keyword_only_dataclasses(cls: type) -> None:
    """Values of the loop are frozen, keyword-only, slotted dataclasses."""
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    assert dataclasses.is_dataclass(cls)
    assert params.frozen
    assert all(f.kw_only for f in dataclasses.fields(cls))
    assert hasattr(cls, "__slots__")


def test_public_classes_say_they_live_in_the_package() -> None:
    """Reprs and tracebacks name ``invokit.loop.RunState``, not a private module."""
    assert RunState.__module__ == "invokit.loop"
    assert ModelRequest.__module__ == "invokit.testing"
