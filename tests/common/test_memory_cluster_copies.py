"""MemoryCluster's copy contract, now that objects are copied by one pickle per version, status patches are
copy-on-write and ``write_status`` takes a status over: nothing a caller gets back, and nothing an informer or a
watch delivers, can change the stored state or what another consumer sees."""

from __future__ import annotations

import copy
import enum
import pickle
import threading
from collections import OrderedDict
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from common.clock import FakeClock
from common.cluster import WatchEvent, merge_patch, pickle_plain
from common.cluster.memory import MemoryCluster


def _status(cpu: str, pods: int = 2) -> dict[str, Any]:
    return {
        "updateTime": "2024-01-01T00:00:00Z",
        "nodeMetric": {"nodeUsage": {"resources": {"cpu": cpu, "memory": "1Gi"}}, "aggregatedNodeUsages": []},
        "podsMetric": [{"namespace": "ns", "name": f"p{i}", "podUsage": {"resources": {"cpu": "1"}}} for i in range(pods)],
    }


def _cluster() -> tuple[MemoryCluster, list[WatchEvent], list[WatchEvent]]:
    c = MemoryCluster(clock=FakeClock())
    c.create("NodeMetric", {"metadata": {"name": "n1", "uid": "u1", "labels": {"a": "b"}}, "spec": {"x": [1, 2]}})
    first: list[WatchEvent] = []
    second: list[WatchEvent] = []
    for seen in (first, second):
        c.informer("NodeMetric", seen.append).start()
    return c, first, second


def _vandalise(obj: Any) -> None:
    """Change everything reachable in place."""
    if isinstance(obj, dict):
        for k in list(obj):
            _vandalise(obj[k])
        obj["vandal"] = True
    elif isinstance(obj, list):
        for x in obj:
            _vandalise(x)
        obj.append("vandal")


def test_returned_and_delivered_objects_are_independent_of_the_store_and_of_each_other() -> None:
    c, first, second = _cluster()
    out = c.patch_status("NodeMetric", "n1", {"status": _status("250m")})
    c.write_status("NodeMetric", "n1", _status("500m"))
    stored = c.get("NodeMetric", "n1")
    pristine = copy.deepcopy(stored)
    watched = list(c.watch("NodeMetric", resource_version="0", timeout_seconds=0))
    for obj in (out, stored, first[-1].object, first[-2].object, watched[-1].object, c.list("NodeMetric").items[0]):
        _vandalise(obj)
    assert c.get("NodeMetric", "n1") == pristine
    assert second[-1].object == pristine  # another informer's copy of the same event
    assert second[-2].object["status"]["nodeMetric"]["nodeUsage"]["resources"]["cpu"] == "250m"
    again = list(c.watch("NodeMetric", resource_version="0", timeout_seconds=0))
    assert again[-1].object == pristine and again[-2].object == second[-2].object


def test_a_status_patch_leaves_earlier_versions_and_results_as_they_were() -> None:
    c, first, _ = _cluster()
    out1 = c.patch_status("NodeMetric", "n1", {"status": _status("250m")})
    before = copy.deepcopy(out1)
    c.patch_status("NodeMetric", "n1", {"status": {"nodeMetric": {"nodeUsage": {"resources": {"cpu": None}}}}})
    c.patch("NodeMetric", "n1", {"metadata": {"labels": {"c": "d"}}})
    assert out1 == before and first[1].object == before
    now = c.get("NodeMetric", "n1")
    assert now["status"]["nodeMetric"]["nodeUsage"]["resources"] == {"memory": "1Gi"}  # RFC 7386: kept, removed
    assert now["metadata"]["labels"] == {"a": "b", "c": "d"} and now["spec"] == {"x": [1, 2]}
    events = list(c.watch("NodeMetric", resource_version="0", timeout_seconds=0))
    assert events[1].object == before


def test_write_status_stores_and_emits_what_patch_status_would() -> None:
    a, a_events, _ = _cluster()
    b, b_events, _ = _cluster()
    for cpu, pods in (("250m", 2), ("1", 0), ("3500m", 3)):
        a.patch_status("NodeMetric", "n1", {"status": _status(cpu, pods)})
        b.write_status("NodeMetric", "n1", _status(cpu, pods))
    assert a.get("NodeMetric", "n1") == b.get("NodeMetric", "n1")
    assert [e.object for e in a_events] == [e.object for e in b_events]
    # The stored version no longer shares anything with later reads or events.
    _vandalise(b_events[-1].object)
    assert b.get("NodeMetric", "n1") == a.get("NodeMetric", "n1")


def test_patches_are_copied_in_without_their_aliases() -> None:
    c, _, _ = _cluster()
    shared = {"cpu": "1"}
    patch = {"status": {"a": {"resources": shared}, "b": {"resources": shared}, "l": [shared, shared]}}
    out = c.patch_status("NodeMetric", "n1", patch)
    shared["cpu"] = "changed by the caller"
    got = c.get("NodeMetric", "n1")
    assert got["status"]["a"]["resources"] == {"cpu": "1"} and out["status"]["l"] == [{"cpu": "1"}, {"cpu": "1"}]
    got["status"]["a"]["resources"]["cpu"] = "x"
    got["status"]["l"][0]["cpu"] = "y"
    assert got["status"]["b"]["resources"] == {"cpu": "1"} and got["status"]["l"][1] == {"cpu": "1"}


class Colour(enum.Enum):
    RED = "red"


def test_data_that_is_not_plain_keeps_its_old_copy_semantics() -> None:
    assert pickle_plain({"a": [1, 2.5, "x", None, True, (1, 2), b"b"]}) is not None
    for odd in (np.float64(1.5), OrderedDict(a=1), Colour.RED, [np.int64(3)]):
        assert pickle_plain({"v": odd}) is None
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    assert pickle_plain(cyclic) is None
    c, first, _ = _cluster()
    out = c.patch_status("NodeMetric", "n1", {"status": {"f": np.float64(1.5), "o": OrderedDict(a=[1])}})
    assert type(out["status"]["f"]) is np.float64 and out["status"]["f"] == 1.5
    assert type(out["status"]["o"]) is dict and out["status"]["o"] == {"a": [1]}  # merge patches build dicts
    out["status"]["o"]["a"].append(2)
    first[-1].object["status"]["o"]["a"].append(3)
    assert c.get("NodeMetric", "n1")["status"]["o"] == {"a": [1]}


@pytest.mark.parametrize(
    "target,patch,want",
    [
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        (["a", "b"], ["c", "d"], ["c", "d"]),
        ({"a": "b"}, ["c"], ["c"]),
        ({"a": "foo"}, None, None),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ],
)
def test_merge_patch_follows_rfc_7386_with_or_without_a_copy(target: Any, patch: Any, want: Any) -> None:
    for copy_in in (True, False):
        before = copy.deepcopy((target, patch))
        assert merge_patch(target, copy.deepcopy(patch) if not copy_in else patch, copy=copy_in) == want
        assert (target, patch) == before


_KEYS = st.sampled_from(["a", "b", "c"])
_LEAF = st.one_of(st.none(), st.integers(-3, 3), st.text("xy", max_size=2), st.lists(st.integers(0, 2), max_size=2))
_JSON = st.recursive(_LEAF, lambda inner: st.dictionaries(_KEYS, inner, max_size=3), max_leaves=12)


@st.composite
def _reshaped(draw: st.DrawFn, target: Any) -> Any:
    """A patch with the target's keys in the target's order (what a writer sends every report), values redrawn."""
    if not isinstance(target, dict) or draw(st.integers(0, 5)) == 0:
        return draw(_JSON)
    return {k: draw(_reshaped(v)) for k, v in target.items()}


def _ordered(v: Any) -> Any:
    """The value with every dict's key order made visible."""
    if isinstance(v, dict):
        return [(k, _ordered(x)) for k, x in v.items()]
    if isinstance(v, list):
        return [_ordered(x) for x in v]
    return v


@pytest.mark.slow
@settings(max_examples=400)
@given(st.data())
def test_a_handed_over_patch_merges_to_what_a_copied_one_does(data: st.DataObject) -> None:
    target = data.draw(_JSON)
    patch = data.draw(st.one_of(_JSON, _reshaped(target)))
    before = copy.deepcopy(target)
    want = merge_patch(target, patch)
    got = merge_patch(target, copy.deepcopy(patch), copy=False)
    assert _ordered(got) == _ordered(want)
    assert _ordered(target) == _ordered(before)


def test_pickle_plain_reuses_nothing_from_a_dump_that_failed() -> None:
    """The per-thread pickler is not put back after a dump that stopped half-way: later pickles are whole."""
    good = {"a": [1, {"b": "c"}], "d": 2.5}
    want = pickle_plain(good)
    assert want is not None and pickle.loads(want) == good
    assert pickle_plain({"a": [1, {"b": np.float64(1.0)}]}) is None
    cyclic: list[Any] = [1]
    cyclic.append(cyclic)
    assert pickle_plain(cyclic) is None
    assert pickle_plain(good) == want
    shared = {"x": "y"}
    aliased = pickle_plain({"p": shared, "q": shared})
    assert aliased is not None
    copy_ = pickle.loads(aliased)
    assert copy_ == {"p": shared, "q": shared} and copy_["p"] is not copy_["q"]


def test_pickle_plain_from_several_threads() -> None:
    results: dict[int, list[bytes | None]] = {}

    def work(k: int) -> None:
        results[k] = [pickle_plain({"k": k, "i": i, "l": list(range(i))}) for i in range(200)]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, got in results.items():
        assert [pickle.loads(b) for b in got if b is not None] == [{"k": k, "i": i, "l": list(range(i))} for i in range(200)]
