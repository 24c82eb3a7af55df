"""PodTopologySpread filter/score over zones and hostnames."""

from __future__ import annotations

import numpy as np
import pytest

from common.objects import PodView
from scheduler.predicates.spread import (
    MISSING_LABEL_REASON,
    SKEW_REASON,
    parse_constraints,
    spread_filter,
    spread_score,
)


def _pod(name: str, app: str = "web") -> PodView:
    return PodView.parse({"metadata": {"name": name, "namespace": "default", "labels": {"app": app}},
                          "spec": {"containers": [{"name": "c"}]}, "status": {"phase": "Running"}})


LABELS = [{"zone": "a", "kubernetes.io/hostname": "n0"}, {"zone": "a", "kubernetes.io/hostname": "n1"},
          {"zone": "b", "kubernetes.io/hostname": "n2"}, {"kubernetes.io/hostname": "n3"}]
PODS = [[_pod("w1"), _pod("w2")], [_pod("w3"), _pod("other", "db")], [], []]
ALL = np.ones(4, dtype=np.bool_)


def test_zone_skew_filter() -> None:
    cs = parse_constraints([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                             "labelSelector": {"matchLabels": {"app": "web"}}}])
    ok, reasons = spread_filter(_pod("new"), cs, LABELS, PODS, ALL)
    # zone a has 3, zone b 0: a -> 3 + 1 - 0 = 4 > 1 fails; b -> 1 passes; n3 lacks the key
    assert ok.tolist() == [False, False, True, False]
    assert reasons == [SKEW_REASON, SKEW_REASON, "", MISSING_LABEL_REASON]
    relaxed = parse_constraints([{"maxSkew": 4, "topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "web"}}}])
    assert spread_filter(_pod("new"), relaxed, LABELS, PODS, ALL)[0].tolist() == [True, True, True, False]


def test_hostname_score_prefers_emptier_nodes() -> None:
    cs = parse_constraints([{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                             "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": "web"}}}])
    got = spread_score(_pod("new"), cs, LABELS, PODS, ALL)
    # counts 2,1,0,0 x log(6) = 3.58 -> 4, 1.79 -> 2, 0, 0; normalised 100*(4+0-s)//4
    assert got.tolist() == [0, 50, 100, 100]


def test_constraint_validation() -> None:
    with pytest.raises(ValueError, match=r"maxSkew"):
        parse_constraints([{"maxSkew": 0, "topologyKey": "zone"}])
    with pytest.raises(ValueError, match=r"topologyKey"):
        parse_constraints([{"maxSkew": 1}])
