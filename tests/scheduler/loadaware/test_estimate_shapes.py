"""The load-aware memo's estimates kept per pod shape (requests, limits, priority class, the custom factors when
allowed) equal the estimate of each pod computed alone, whichever pods came first."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from hypothesis import given, settings
from hypothesis import strategies as st

from common.objects import PodView
from scheduler.framework.memo import SessionMemo
from scheduler.loadaware.args import parse_loadaware_args
from scheduler.loadaware.estimator import SCALING_FACTORS_ANNOTATION, estimate_pod, estimate_vector
from scheduler.loadaware.memo import LoadAwareMemo

from .helpers import pod

CPUS = [None, "100m", "1", "2"]
LIMITS = [None, "500m", "3"]
PRIORITIES = [None, 9000, 5500]   # prod, batch by value ranges (common.qos)
FACTORS = [None, '{"cpu": 50}', '{"cpu": 200, "memory": 90}']


@settings(max_examples=150, deadline=None)
@given(pods=st.lists(st.tuples(st.sampled_from(CPUS), st.sampled_from(LIMITS), st.sampled_from(PRIORITIES),
                               st.sampled_from(FACTORS)), min_size=1, max_size=12),
       allow=st.booleans())
def test_estimates_kept_per_shape_equal_each_pods_own(pods: list[tuple[str | None, str | None, int | None,
                                                                         str | None]], allow: bool) -> None:
    args = parse_loadaware_args({"allowCustomizeEstimation": allow})
    memo = LoadAwareMemo.of(SessionMemo(), args)

    def compute(p: PodView) -> npt.NDArray[np.int64]:
        return estimate_vector(estimate_pod(p, args.estimated_scaling_factors, allow_customize=allow),
                               args.resource_names)
    for i, (cpu, limit, priority, factors) in enumerate(pods):
        view = pod(f"p{i}", requests={"cpu": cpu, "memory": "1Gi"} if cpu else None,
                   limits={"cpu": limit} if limit else None, priority=priority,
                   annotations={SCALING_FACTORS_ANNOTATION: factors} if factors else None)
        assert memo.estimate(view, compute).tolist() == compute(view).tolist()
