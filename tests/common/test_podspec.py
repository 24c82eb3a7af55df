import pytest

from common.podspec import DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST, pod_limits, pod_requests
from common.qos import PriorityClass, QoSClass, pod_priority_class, qos_class
from common.resources import Resources

G = 10**9


def c(cpu: str | None = None, mem: str | None = None, *, lim: dict[str, str] | None = None, **kw: object) -> dict:
    req = {}
    if cpu is not None:
        req["cpu"] = cpu
    if mem is not None:
        req["memory"] = mem
    res: dict = {"requests": req}
    if lim:
        res["limits"] = lim
    return {"name": "c", "resources": res, **kw}


def pod(containers: list, init: list | None = None, **spec: object) -> dict:
    return {"metadata": {"name": "p"}, "spec": {"containers": containers, "initContainers": init or [], **spec}}


def test_upstream_init_example() -> None:
    # docs/design/kube-scoring.md §2: IC1 2/1G, IC2 2/3G, C1 2/1G, C2 1/1G -> 3 cpu / 3G
    p = pod([c("2", "1G"), c("1", "1G")], [c("2", "1G"), c("2", "3G")])
    assert pod_requests(p) == Resources(cpu=3000, memory=3 * G)


def test_sidecars_count_in_sum_and_in_later_init_footprints() -> None:
    side = c("1", "1G", restartPolicy="Always")
    # init after the sidecar: footprint 3 + 1 = 4 cpu; app sum 1 + sidecar 1 = 2
    p = pod([c("1", "1G")], [side, c("3", "1G")])
    assert pod_requests(p)["cpu"] == 4000
    # init before the sidecar: footprint 3 only; app sum = 2
    p = pod([c("1", "1G")], [c("3", "1G"), side])
    assert pod_requests(p)["cpu"] == 3000
    assert pod_requests(p)["memory"] == 2 * G


def test_overhead_added_after_max() -> None:
    p = pod([c("1", "1G")], [c("2", "1G")], overhead={"cpu": "250m", "memory": "100M"})
    assert pod_requests(p) == Resources(cpu=2250, memory=G + 100 * 10**6)


def test_non_zero_defaults_fill_missing_keys_only() -> None:
    p = pod([c(), c("0"), c(mem="1Gi")])
    r = pod_requests(p, non_zero=True)
    # c(): both defaults; c("0"): explicit 0 cpu stays, memory default; c(mem=1Gi): cpu default
    assert r["cpu"] == 2 * DEFAULT_MILLI_CPU_REQUEST
    assert r["memory"] == 2 * DEFAULT_MEMORY_REQUEST + 2**30
    assert pod_requests(p) == Resources(memory=2**30)


def test_defaults_never_for_extended_resources() -> None:
    p = pod([c(lim={"nvidia.com/gpu": "1"})])
    r = pod_requests(p, non_zero=True)
    assert r["nvidia.com/gpu"] == 1  # limits default requests for extended resources too
    assert r["cpu"] == DEFAULT_MILLI_CPU_REQUEST


def test_limits_only_containers_with_limit() -> None:
    p = pod([c("1", lim={"cpu": "2"}), c("1")])
    assert pod_limits(p) == Resources(cpu=2000)


def test_pod_level_resources_replace_cpu_memory() -> None:
    p = pod([c("1", "1G", lim={"example.com/foo": "2"})], resources={"requests": {"cpu": "3"}})
    r = pod_requests(p)
    assert r["cpu"] == 3000
    assert r["memory"] == G
    assert r["example.com/foo"] == 2


@pytest.mark.parametrize(
    "containers,expected",
    [
        ([c()], QoSClass.BEST_EFFORT),
        ([c("1", "1G")], QoSClass.BURSTABLE),
        ([c(lim={"cpu": "1", "memory": "1G"})], QoSClass.GUARANTEED),
        ([c("1", "1G", lim={"cpu": "1", "memory": "1G"})], QoSClass.GUARANTEED),
        ([c("500m", "1G", lim={"cpu": "1", "memory": "1G"})], QoSClass.BURSTABLE),
        ([c(lim={"cpu": "1", "memory": "1G"}), c()], QoSClass.BURSTABLE),
    ],
)
def test_qos_class(containers: list, expected: QoSClass) -> None:
    assert qos_class(pod(containers)) == expected


def test_priority_class_defaulting() -> None:
    assert pod_priority_class(pod([c("1")])) == PriorityClass.PROD
    assert pod_priority_class(pod([c()])) == PriorityClass.BATCH
    assert pod_priority_class(pod([c()], priority=9500)) == PriorityClass.PROD
    assert pod_priority_class(pod([c("1")], priority=5500)) == PriorityClass.BATCH
    assert pod_priority_class(pod([c("1")], priority=7001)) == PriorityClass.MID
    assert pod_priority_class(pod([c("1")], priority=3000)) == PriorityClass.FREE
    labelled = pod([c("1")], priority=9500)
    labelled["metadata"]["labels"] = {"koordinator.sh/priority-class": "koord-batch"}
    assert pod_priority_class(labelled) == PriorityClass.BATCH


def test_qos_class_compares_exactly_and_rejects_bad_quantities_every_time() -> None:
    from common.quantity import QuantityError

    # 1000.0001m and 1 differ by a tenth of a micro-core: exact comparison says Burstable, as kube's Cmp does
    assert qos_class(pod([c("1000.0001m", "1G", lim={"cpu": "1", "memory": "1G"})])) == QoSClass.BURSTABLE
    assert qos_class(pod([c("1.0", "1e9", lim={"cpu": 1, "memory": "1G"})])) == QoSClass.GUARANTEED
    for _ in range(2):  # the memoised string path must not turn an error into a cached value
        with pytest.raises(QuantityError):
            qos_class(pod([c("one", "1G")]))
    with pytest.raises(QuantityError):
        qos_class(pod([c(True, "1G")]))
