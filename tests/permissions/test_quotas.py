"""Quotas as data: the ``[[quota]]`` table of a policy and the :class:`Quota` value."""

from __future__ import annotations

import pytest

from invokit import Quota, ToolSpec
from invokit.exceptions import PolicyError
from invokit.permissions import Policy


def test_toml_quotas_are_read_with_windows_in_units() -> None:
    """A ``[[policy.quota]]`` table gives a quota; ``"15m"`` is 900 seconds."""
    policy = Policy.from_toml_text(
        """
        [policy]
        allow = ["*"]
        [[policy.quota]]
        tool = "fs.*"
        calls = 5
        per = "turn"
        window = "15m"
        [[policy.quota]]
        tag = "network"
        calls = 100
        """
    )
    assert policy.quotas == (
        Quota(tool="fs.*", calls=5, per="turn", window=900.0),
        Quota(tag="network", calls=100),
    )
    assert Policy.from_dict(policy.to_dict()).quotas == policy.quotas


@pytest.mark.parametrize(
    ("table", "fragment"),
    [
        pytest.param("calls = 1", "exactly one", id="no-target"),
        pytest.param('tool = "x"\ntag = "y"\ncalls = 1', "exactly one", id="both-targets"),
        pytest.param('tool = "x"', "calls", id="no-calls"),
        pytest.param('tool = "x"\ncalls = -1', "whole number", id="negative"),
        pytest.param('tool = "x"\ncalls = 1\nwindow = "soon"', "window", id="bad-window"),
        pytest.param('tool = "x"\ncalls = 1\nper = "day"', "per", id="bad-scope"),
        pytest.param('tool = "x"\ncalls = 1\nevery = 2', "unknown quota key", id="unknown-key"),
    ],
)
def test_a_wrong_quota_is_a_policy_error(table: str, fragment: str) -> None:
    """Every mistake in a quota table refuses the whole policy with a message naming it."""
    with pytest.raises(PolicyError, match=fragment):
        Policy.from_toml_text("[[quota]]\n" + table)


def test_covers_by_glob_or_tag() -> None:
    """A tool glob matches names; a tag matches tools carrying it."""
    spec = ToolSpec(name="fs.write", tags=frozenset({"files"}))
    assert Quota(tool="fs.*", calls=1).covers(spec)
    assert not Quota(tool="shell", calls=1).covers(spec)
    assert Quota(tag="files", calls=1).covers(spec)
    assert Policy(quotas=[Quota(tag="net", calls=1)]).quotas_for(spec) == ()
