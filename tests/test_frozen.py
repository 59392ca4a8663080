"""Frozen slotted dataclasses filled as a plain twin of their slots (``invokit._frozen``)."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from invokit._frozen import fill_class
from invokit.exceptions import ArgumentIssue
from invokit.schema._issues import _new_issue


@dataclasses.dataclass(frozen=True, slots=True)
class _Pair:
    left: int
    right: str


def test_a_filled_instance_is_an_instance_of_the_class_itself() -> None:
    """Filled and given its class, the instance is what the constructor makes: same type,
    equal, frozen, copied, pickled, no instance dict."""
    filled = object.__new__(fill_class(_Pair))
    filled.left = 1
    filled.right = "r"
    filled.__class__ = _Pair
    assert type(filled) is _Pair
    assert filled == _Pair(1, "r")
    with pytest.raises(dataclasses.FrozenInstanceError):
        filled.left = 2  # type: ignore[misc]
    assert not hasattr(filled, "__dict__")
    assert copy.copy(filled) == filled
    assert pickle.loads(pickle.dumps(filled)) == filled


def test_the_twin_has_the_slots_in_the_same_order() -> None:
    """The layout is what lets the class be assigned: the same slots, in order."""
    assert fill_class(_Pair).__slots__ == _Pair.__slots__


def test_a_class_without_slots_has_no_twin() -> None:
    """Only a slotted class can be filled this way: anything else fails when it is made, not
    when an instance is."""

    @dataclasses.dataclass(frozen=True)
    class Loose:
        value: int

    with pytest.raises(KeyError):
        fill_class(Loose)


def test_an_issue_built_on_the_hot_path_is_a_true_argument_issue() -> None:
    """The validator's issues are ArgumentIssues in every way."""
    issue = _new_issue("/a", "wrong", "integer", '"x"')
    assert type(issue) is ArgumentIssue
    assert issue == ArgumentIssue(path="/a", message="wrong", expected="integer", actual='"x"')
    with pytest.raises(dataclasses.FrozenInstanceError):
        issue.path = "/b"  # type: ignore[misc]
