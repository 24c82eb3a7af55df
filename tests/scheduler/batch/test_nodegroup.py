from __future__ import annotations

import pytest

from common.resources import Resources as R
from scheduler.batch.nodegroup import (
    GroupAffinity,
    group_predicate,
    group_quota_exceeded,
    group_score,
    parse_group_affinity,
    parse_group_limits,
)

AFF = GroupAffinity(required=("a",), preferred=("b", "c"), anti_required=("x",), anti_preferred=("y",))


def test_parse_affinity() -> None:
    spec = {
        "nodeGroupAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ["a"],
                              "preferredDuringSchedulingIgnoredDuringExecution": ["b", "c"]},
        "nodeGroupAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ["x"],
                                  "preferredDuringSchedulingIgnoredDuringExecution": ["y"]},
    }
    assert parse_group_affinity("q", spec) == AFF
    assert parse_group_affinity("q", None).is_empty()
    with pytest.raises(ValueError, match="Queue q: spec.affinity.nodeGroupAffinity"):
        parse_group_affinity("q", {"nodeGroupAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": "a"}})


@pytest.mark.parametrize(
    ("group", "affinity", "strict", "passes"),
    [
        (None, GroupAffinity(), False, True),
        (None, GroupAffinity(), True, False),
        (None, AFF, False, False),
        ("a", GroupAffinity(), True, False),
        ("a", AFF, True, True),
        ("c", AFF, True, True),
        ("x", AFF, True, False),
        ("y", AFF, True, True),
        ("z", AFF, True, False),
    ],
)
def test_predicate(group: str | None, affinity: GroupAffinity, strict: bool, passes: bool) -> None:
    assert (group_predicate(group, affinity, strict=strict) is None) is passes


def test_score() -> None:
    assert group_score("a", AFF) == 100
    assert group_score("b", AFF) == 50
    assert group_score("c", AFF, preferred_order=True) == 25
    assert group_score("y", AFF) == -1
    assert group_score(None, AFF) == 0


def test_group_limits() -> None:
    limits = parse_group_limits("q", {"volcano.sh/nodegroup-resource-limits": '{"a": {"cpu": "2"}}'})
    assert limits == {"a": R(cpu=2000)}
    assert group_quota_exceeded(R(cpu=1500), R(cpu=1000, memory=5), limits["a"]) == ["cpu"]
    assert group_quota_exceeded(R(cpu=500), R(cpu=1000, memory=5), limits["a"]) == []
    assert group_quota_exceeded(R(cpu=500), R(cpu=1000), None) == []
    with pytest.raises(ValueError, match="not valid JSON"):
        parse_group_limits("q", {"volcano.sh/nodegroup-resource-limits": "{"})
