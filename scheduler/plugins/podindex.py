"""The pods on each node during a session, counted per label selector: what topology spreading and inter-pod
affinity count, kept current by the session's allocate/deallocate events (:class:`PodIndex`).

Pods of one namespace with the same labels form a group a selector matches whole, so a selector is tried once per
group, not once per pod.  What one session's index seeded is carried to the next: each node's seed (its pods'
placement records), the groups' counts over them, and the totals of all seeds with the cache generation they were
made at, so a session that follows the cache's change log seeds anew only the nodes whose pods changed.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter, is_
from typing import Any

import numpy as np
import numpy.typing as npt

from common.objects import PodView
from common.selectors import LabelSelector
from common.slots import slot_maker
from scheduler.framework.api import TaskInfo, TaskStatus, on_node
from scheduler.framework.changes import ChangeLog
from scheduler.framework.memo import IdentityMemo
from scheduler.framework.session import EventHandler, Session

__all__ = ["Matcher", "GroupKey", "group_key", "matcher_matches", "Placed", "PodIndex", "port_number"]

IntArray = npt.NDArray[np.int64]
# a pod matches when, for every (namespaces, selector) pair, its namespace is in the set (None: any) and its
# labels match the selector
Matcher = tuple[tuple[frozenset[str] | None, LabelSelector], ...]


def matcher_matches(matcher: Matcher, pod: PodView) -> bool:
    return all((ns is None or pod.namespace in ns) and sel.matches(pod.labels) for ns, sel in matcher)


GroupKey = tuple[str, frozenset[tuple[str, str]]]
# a matcher's per-node counts (all pods, non-terminating pods) and the node rows whose non-terminating count moved
# since they were made, in order
_Counts = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], list[int]]


def group_key(pod: PodView) -> GroupKey:
    """What makes pods alike to every matcher: their namespace and labels."""
    return pod.namespace, frozenset(pod.labels.items())


@dataclass(frozen=True, slots=True)
class Placed:
    """A pod the index counts: on which node row, whether it is terminating, and its group key."""

    pod: PodView
    node: int
    terminating: bool
    group: GroupKey


# Placed(...) made slot by slot (common.slots): a record per pod placed
_make_placed = slot_maker(Placed)


class _NodeSeed:
    """What one node's tasks gave the index as a session opened — their placement records in order, the rows they
    count on, those with pod affinity or host ports — with the node's row and the tasks' pods (the very objects),
    in the node's order."""

    __slots__ = ("index", "pods", "placed", "rows", "with_affinity", "with_host_ports")

    def __init__(self, index: int | None, pods: list[PodView]) -> None:
        self.index, self.pods = index, pods
        self.placed: list[tuple[str, Placed]] = []
        self.rows: list[int] = []
        self.with_affinity: list[tuple[str, Placed]] = []
        self.with_host_ports: list[tuple[str, Placed]] = []

    def holds(self, index: int | None, pods: list[PodView]) -> bool:
        """Whether this seed was made at node row ``index`` from the very same pod objects, in the same order."""
        return self.index == index and len(self.pods) == len(pods) and all(map(is_, self.pods, pods))

    def extended(self, pods: list[PodView]) -> _NodeSeed:
        """A seed of the tasks of ``pods``, which are this seed's and more after them: this one's records, the
        others' to be added (:meth:`add`)."""
        out = _NodeSeed(self.index, pods)
        out.placed, out.rows = list(self.placed), list(self.rows)
        out.with_affinity, out.with_host_ports = list(self.with_affinity), list(self.with_host_ports)
        return out

    def add(self, uid: str, placed: Placed, affinity: bool, host_ports: bool) -> None:
        self.placed.append((uid, placed))
        if affinity:
            self.with_affinity.append((uid, placed))
        if host_ports:
            self.with_host_ports.append((uid, placed))


class _SameUid(Exception):
    """A task uid met twice while seeding (not from a real cluster): the index is seeded again task by task."""


def _placement(memo: IdentityMemo[Any], pod: PodView, idx: int, status: TaskStatus) -> tuple[Placed, bool, bool]:
    """The pod's placement record at node row ``idx`` (the memo's, while it still says the same node and the same
    terminating state) and whether the pod has pod affinity and host ports (computed once per pod object)."""
    terminating = status is TaskStatus.RELEASING or pod.deleting
    got: list[Any] | None = memo.get(pod)
    if got is None:
        got = memo.put(pod, [_has_pod_affinity(pod), _has_host_ports(pod), None, group_key(pod)])
    placed = got[2]
    if placed is None or placed.node != idx or placed.terminating != terminating:
        placed = got[2] = Placed(pod, idx, terminating, got[3])
    return placed, got[0], got[1]


class _Prior:
    """The placement records a node's previous seed holds, by pod object, for seeding the node anew: a pod still
    there is seldom in the memo any more (its entry is dropped once two sessions did not read it)."""

    __slots__ = ("memo", "records", "affinity", "host_ports")

    def __init__(self, seed: _NodeSeed, memo: IdentityMemo[Any]) -> None:
        self.memo = memo
        # the seed holds these pods: their ids are not reused meanwhile
        self.records = {id(p.pod): p for _, p in seed.placed}
        self.affinity = {id(p.pod) for _, p in seed.with_affinity}
        self.host_ports = {id(p.pod) for _, p in seed.with_host_ports}

    def placement(self, pod: PodView, idx: int, status: TaskStatus) -> tuple[Placed, bool, bool]:
        """:func:`_placement`, the previous seed's record when it is the same pod's at the same node row and
        terminating state."""
        p = self.records.get(id(pod))
        if p is None or p.pod is not pod or p.node != idx or p.terminating != (
                status is TaskStatus.RELEASING or pod.deleting):
            return _placement(self.memo, pod, idx, status)
        key = id(pod)
        return p, key in self.affinity, key in self.host_ports


class _Group:
    """The placed pods of one namespace with the very same labels (a matcher matches all of them or none), counted
    per node row: all of them, and those not terminating; ``targets`` are the per-node counts of the matchers that
    match the group, which a pod of it entering or leaving a node moves (noting the node in the matcher's log of
    moved non-terminating counts)."""

    __slots__ = ("pod", "every", "live", "targets")

    def __init__(self, pod: PodView, targets: list[_Counts]) -> None:
        self.pod = pod
        self.every: dict[int, int] = {}
        self.live: dict[int, int] = {}
        self.targets = targets

    def add(self, p: Placed, delta: int) -> None:
        node = p.node
        self.every[node] = self.every.get(node, 0) + delta
        if not p.terminating:
            self.live[node] = self.live.get(node, 0) + delta
        for every, live, moved in self.targets:
            every[node] += delta
            if not p.terminating:
                live[node] += delta
                moved.append(node)


class _Tally:
    """One group's per-node counts (all its pods, those not terminating) as the sessions' seeds give them, without
    zero entries; ``pod`` is one of its pods (each has the group's namespace and labels)."""

    __slots__ = ("pod", "every", "live")

    def __init__(self, pod: PodView) -> None:
        self.pod = pod
        self.every: dict[int, int] = {}
        self.live: dict[int, int] = {}


def _bump(counts: dict[int, int], node: int, delta: int) -> None:
    n = counts.get(node, 0) + delta
    if n:
        counts[node] = n
    else:
        del counts[node]


class _Carried:
    """What one session's index hands the next: the seed of each node, and the groups' counts over every seed's
    pods (``tallies``), which the next session moves by the seeds that changed instead of counting every pod.
    Never changed once made (an index still opening may hold it): :meth:`moved` makes the next one, sharing the
    tallies no seed changed."""

    __slots__ = ("seeds", "tallies", "_fresh", "totals")

    def __init__(self, seeds: dict[str, _NodeSeed] | None = None, tallies: dict[GroupKey, _Tally] | None = None
                 ) -> None:
        self.seeds: dict[str, _NodeSeed] = seeds or {}
        self.tallies: dict[GroupKey, _Tally] = tallies or {}
        self._fresh: set[GroupKey] = set()  # while moving: the tallies already copied
        self.totals: _Totals | None = None

    def moved(self, seeds: dict[str, _NodeSeed], names: Iterable[str] | None = None,
              added: Iterable[Placed] = ()) -> _Carried:
        """The carried state of ``seeds``: the pods of a seed no longer kept leave the tallies, those of a new one
        enter them (``names``: the only nodes whose seed may differ, when known, besides those whose new seed is
        the old one's with the placements ``added`` after its own).  Each group's count on a node moves once, by
        the difference of the old and new seeds: a pod seeded again where it was moves nothing, and no count is
        deleted at zero to be added again (a map with deleted entries is copied entry by entry)."""
        out = _Carried(seeds, dict(self.tallies))
        before = self.seeds
        net: dict[tuple[GroupKey, int, bool], tuple[int, Placed]] = {}   # -> the move, and one such placement

        def move(placements: Iterable[Placed], delta: int) -> None:
            for p in placements:
                key = (p.group, p.node, p.terminating)
                got = net.get(key)
                net[key] = (delta, p) if got is None else (got[0] + delta, got[1])

        for name in before.keys() | seeds.keys() if names is None else names:
            old, new = before.get(name), seeds.get(name)
            if old is new:
                continue
            for seed, delta in ((old, -1), (new, 1)):
                if seed is not None:
                    move((p for _, p in seed.placed), delta)
        move(added, 1)
        for delta, p in net.values():
            if delta:
                out._add(p, delta)
        out._fresh = set()
        return out

    def _add(self, p: Placed, delta: int) -> None:
        key = p.group
        tally = self.tallies.get(key)
        if key not in self._fresh:  # shared with the state this one was moved from: changed on a copy
            self._fresh.add(key)
            copied = _Tally(tally.pod if tally is not None else p.pod)
            if tally is not None:
                copied.every, copied.live = dict(tally.every), dict(tally.live)
            tally = self.tallies[key] = copied
        assert tally is not None
        _bump(tally.every, p.node, delta)
        if not p.terminating:
            _bump(tally.live, p.node, delta)
        if not tally.every:
            del self.tallies[key]
            self._fresh.discard(key)


@dataclass(frozen=True, slots=True)
class _Totals:
    """The seeded nodes' pods as a whole (``unseeded``: the nodes without a seed), as of the cache generation the
    session saw and its nodes in order: the next session starts from them and seeds anew only the nodes the
    cache's change log names.  Never changed once made."""

    names: list[str]
    log: ChangeLog
    generation: int
    placed: dict[str, Placed]
    with_affinity: dict[str, Placed]
    with_host_ports: dict[str, Placed]
    pod_count: IntArray
    where: dict[str, str]   # pod key -> the node it is seeded on
    unseeded: frozenset[str]


# the kinds of change a session follows from the carried totals: Pods by the nodes the pods named were and are on,
# Nodes by the node names in order; the others cannot move what the index counts, which is, per node, the tasks
# of the pods bound there with their uid, node and status, each what its pod says while the task is untouched
# (PodGroups, Queues and PriorityClasses decide a task's job, queue and priority; NodeMetrics and
# WaterlinePolicies, load).  A kind not named here has the session seed every node.
_FOLLOWED = frozenset({"Pod", "Node", "NodeMetric", "PodGroup", "Queue", "PriorityClass", "WaterlinePolicy"})


def _moved_nodes(ssn: Session, totals: _Totals | None) -> set[str] | None:
    """The nodes whose tasks may differ from what ``totals`` holds: those without a seed and those the pods the
    change log names since were or are on; None when the session cannot start from ``totals`` (no log or another
    one, changes of other kinds, other nodes or node order, or tasks changed since the session build made them)."""
    snap = ssn.snapshot
    if totals is None or snap.changes is not totals.log or snap.pod_by_key is None:
        return None
    changes = snap.changes.between(totals.generation, snap.generation)
    if changes is None or not changes.keys() <= _FOLLOWED:
        return None
    if ssn.node_names != totals.names:
        return None
    if _tasks_touched(ssn):
        return None
    moved = set(totals.unseeded)
    where, by_key = totals.where, snap.pod_by_key
    for key in changes.get("Pod", ()):
        old = where.get(key)
        if old is not None:
            moved.add(old)
        pod = by_key.get(key)
        if pod is not None and pod.node_name:
            moved.add(pod.node_name)
    return moved


def _node_rows(ssn: Session) -> Mapping[str, int]:
    """Each node's row by name: the previous session's map while the node names are the same, in the same order
    (a list comparison in C, where making the map is a Python step per node).  Never changed once made."""
    names = ssn.node_names
    kept: tuple[list[str], Mapping[str, int]] | None = ssn.memo.value(_ROWS_KEY)
    if kept is not None and kept[0] == names:
        return kept[1]
    rows = {name: i for i, name in enumerate(names)}
    ssn.memo.set_value(_ROWS_KEY, (list(names), rows))
    return rows


def _tasks_touched(ssn: Session) -> bool:
    """Whether a task may have changed since the session build made it: one on the list of the objects touched
    since (a few, read without looking at every task), or, without that list, one whose flag says so."""
    watched = ssn.watched
    if watched is None:
        return any(map(getattr, ssn.tasks.values(), repeat("_touched"), repeat(True)))
    return any(isinstance(obj, TaskInfo) for obj in watched)


def _required_pairs(matcher: Matcher) -> list[tuple[str, str]] | None:
    """Label pairs one of which every pod the matcher matches carries: the values of its narrowest ``In``
    requirement (None when it has none, and then any pod may match)."""
    best: tuple[str, ...] | None = None
    key = ""
    for _, sel in matcher:
        for r in sel.requirements:
            if r.operator == "In" and (best is None or len(r.values) < len(best)):
                best, key = r.values, r.key
    return None if best is None else [(key, v) for v in best]


def _add_counts(target: IntArray, counts: Mapping[int, int]) -> None:
    if counts:
        np.add.at(target, np.fromiter(counts.keys(), np.int64, len(counts)),
                  np.fromiter(counts.values(), np.int64, len(counts)))


_NODES_KEY = "podindex.nodes"
_ROWS_KEY = "podindex.rows"
_POD = attrgetter("pod")
_INDEXES: weakref.WeakKeyDictionary[Session, PodIndex] = weakref.WeakKeyDictionary()
# statuses of the tasks the index counts on their node (on_node or pipelined)
_INDEXED = frozenset(s for s in TaskStatus if on_node(s) or s is TaskStatus.PIPELINED)


class PodIndex:
    """The pods on each node during one session — bound, running, releasing, and those this session allocated or
    pipelined (Volcano adds both to its node infos) — with per-node counts of the pods matching a
    :data:`Matcher`, built once per distinct matcher and kept current from the session's events.  One index per
    session, shared by every plugin that needs it (:meth:`of`)."""

    def __init__(self, ssn: Session) -> None:
        self.n = len(ssn.nodes)
        self._index = _node_rows(ssn)
        self._placed: dict[str, Placed] = {}
        self.pod_count = np.zeros(self.n, dtype=np.int64)
        self._counts: dict[Matcher, _Counts] = {}
        self.with_affinity: dict[str, Placed] = {}
        self.with_host_ports: dict[str, Placed] = {}
        # the placed pods by namespace and labels, made when the first matcher is counted (pods of a few workloads
        # make a few groups, so a matcher is tried once per group, not once per pod); the key per pod object is kept;
        # the groups by label pair, so a matcher is tried only on the groups carrying one of its required pairs
        self._groups: dict[GroupKey, _Group] | None = None
        self._by_pair: dict[tuple[str, str], list[_Group]] = {}
        # until the groups are made, what they start from: the carried tallies of the seeds, the placed pods of
        # the nodes without a seed, and every change synced since
        self._tallies: dict[GroupKey, _Tally] = {}
        self._loose: list[Placed] = []
        self._journal: list[tuple[Placed, int]] = []
        self._group_keys = ssn.memo.table("podindex.group")
        self._seed(ssn)
        ssn.add_event_handler(EventHandler(self.sync, self.sync))

    def _seed(self, ssn: Session) -> None:
        """``sync`` of every task on a node as the session opens (no matcher is counted yet): from the carried
        totals and the nodes the cache's change log names when it can (:func:`_moved_nodes`), else node by node.
        Per pod object, the session memo keeps its affinity/host-port flags and its last placement record, reused
        when it still says the same node and the same terminating state."""
        memo = ssn.memo.table("podindex.pod")
        carried: _Carried = ssn.memo.value(_NODES_KEY) or _Carried()
        moved = _moved_nodes(ssn, carried.totals)
        try:
            if moved is None or not self._seed_moved(ssn, carried, moved, memo):
                self._seed_all(ssn, carried, memo)
        except _SameUid:
            # a uid seen twice (not from a real cluster): seed it all task by task, and sync decides
            self._reseed(ssn)

    def _seed_all(self, ssn: Session, carried: _Carried, memo: IdentityMemo[Any]) -> None:
        """Every node: what its tasks gave the previous session is taken again as a whole while they are tasks of
        the same pods, in the same order, at the same node row, and nothing changed them since the session build
        made them (:func:`~scheduler.framework.api.is_untouched`: then their uid, node and status are what the pod
        says); the other nodes are seeded task by task."""
        kept = carried.seeds
        seeds: dict[str, _NodeSeed] = {}
        rows: list[int] = []
        for nd in ssn.nodes:
            tasks = list(nd.tasks.values())
            pods = list(map(_POD, tasks))
            here = self._index.get(nd.name)
            untouched = not any(map(getattr, tasks, repeat("_touched"), repeat(True)))
            hit = kept.get(nd.name)
            if untouched and hit is not None and hit.holds(here, pods):
                self._take_seed(hit, rows)
                seeds[nd.name] = hit
                continue
            # kept for the next session only if every task was as made and counts on this node's row
            seed = self._seed_node(tasks, here, memo, rows, _NodeSeed(here, pods) if untouched else None)
            if seed is not None:
                seeds[nd.name] = seed
        carried = carried.moved(seeds)
        carried.totals = self._totals(ssn, seeds)
        self._tallies = carried.tallies
        ssn.memo.set_value(_NODES_KEY, carried)
        self._count(rows)

    def _totals(self, ssn: Session, seeds: dict[str, _NodeSeed]) -> _Totals | None:
        """The totals of ``seeds`` for the next session (None without a change log to follow)."""
        snap = ssn.snapshot
        if snap.changes is None or snap.pod_by_key is None:
            return None
        placed: dict[str, Placed] = {}
        affinity: dict[str, Placed] = {}
        host_ports: dict[str, Placed] = {}
        where: dict[str, str] = {}
        count = np.zeros(self.n, dtype=np.int64)
        for name, seed in seeds.items():
            placed.update(seed.placed)
            affinity.update(seed.with_affinity)
            host_ports.update(seed.with_host_ports)
            where.update((p.pod.key, name) for _, p in seed.placed)
            if seed.rows:
                count[seed.rows[0]] += len(seed.rows)
        names = list(ssn.node_names)
        return _Totals(names, snap.changes, snap.generation, placed, affinity, host_ports, count, where,
                       frozenset(names) - seeds.keys())

    def _seed_moved(self, ssn: Session, carried: _Carried, moved: set[str], memo: IdentityMemo[Any]) -> bool:
        """The carried totals with the ``moved`` nodes' seeds made anew; False, with nothing placed, when one of
        them cannot keep a seed (a task counting on another node's row).

        A pod seeded again keeps its key in the maps, its value replaced: only those of the pods no node holds
        any more are deleted.  A map with deleted entries is copied entry by entry, one without them in one
        block, and the next session copies these (11,000 pods at steady state: milliseconds against tenths)."""
        totals = carried.totals
        assert totals is not None
        self._placed = dict(totals.placed)
        self.with_affinity = dict(totals.with_affinity)
        self.with_host_ports = dict(totals.with_host_ports)
        count = totals.pod_count.copy()
        seeds = dict(carried.seeds)
        where = dict(totals.where)
        stale: dict[str, str] = {}   # uid -> pod key, of the old seeds' pods not seeded again (yet)
        gained = self._gained(ssn, carried.seeds, moved)
        for name in moved:
            old = seeds.get(name)
            if old is not None and name not in gained:
                self._forget(old, stale)
                if old.rows:
                    count[old.rows[0]] -= len(old.rows)
        rows: list[int] = []
        keys: set[str] = set()   # the pod keys the new seeds hold
        added: list[Placed] = []   # the placements of the tasks that joined a kept seed
        for name in moved:
            nd = ssn.node_by_name.get(name)
            if nd is None:
                seeds.pop(name, None)
                continue
            here = self._index.get(name)
            old = carried.seeds.get(name)
            joined = gained.get(name)
            if old is not None and joined is not None:
                tasks, pods = joined
                seed = self._seed_node(tasks[len(old.pods):], here, memo, rows, old.extended(pods), stale)
                fresh = seed.placed[len(old.placed):] if seed is not None else []
                added += (p for _, p in fresh)
            else:
                tasks = list(nd.tasks.values())
                prior = _Prior(old, memo) if old is not None else memo
                seed = self._seed_node(tasks, here, prior, rows, _NodeSeed(here, list(map(_POD, tasks))), stale)
                fresh = seed.placed if seed is not None else []
            if seed is None:
                self._clear()
                return False
            seeds[name] = seed
            mine = [p.pod.key for _, p in fresh]
            keys.update(mine)
            where.update(zip(mine, repeat(name)))
        for uid, key in stale.items():
            del self._placed[uid]
            if key not in keys:
                where.pop(key, None)
        if rows:
            count += np.bincount(np.asarray(rows, dtype=np.int64), minlength=self.n)
        out = carried.moved(seeds, moved - gained.keys(), added)
        out.totals = _Totals(totals.names, totals.log, ssn.snapshot.generation, dict(self._placed),
                             dict(self.with_affinity), dict(self.with_host_ports), count, where, frozenset())
        self._tallies = out.tallies
        ssn.memo.set_value(_NODES_KEY, out)
        self.pod_count = count.copy()
        return True

    def _gained(self, ssn: Session, kept: Mapping[str, _NodeSeed], moved: set[str]
                ) -> dict[str, tuple[list[TaskInfo], list[PodView]]]:
        """The ``moved`` nodes whose tasks are their kept seed's, the same pod objects in the same order, with
        tasks after them that count on the node's own row or on none (a bound pod joins its node's tasks at the
        end), by name with their tasks and pods.  Such a node's seed is the kept one with the joining tasks'
        records after its own, its pods' records left as they are (the tasks are untouched: their uid, node and
        status are what the same pods said)."""
        out: dict[str, tuple[list[TaskInfo], list[PodView]]] = {}
        index = self._index
        for name in moved:
            old, nd = kept.get(name), ssn.node_by_name.get(name)
            if old is None or nd is None or old.index != index.get(name) or len(nd.tasks) <= len(old.pods):
                continue
            tasks = list(nd.tasks.values())
            pods = list(map(_POD, tasks))
            if all(map(is_, old.pods, pods)) and all(
                    index.get(t.node_name) in (old.index, None) for t in tasks[len(old.pods):] if t.node_name):
                out[name] = (tasks, pods)
        return out

    def _forget(self, seed: _NodeSeed, stale: dict[str, str]) -> None:
        """Takes a carried seed's pods out of what the index starts from: noted in ``stale`` (by uid, with their
        key), deleted from the placed pods unless seeded again."""
        for uid, p in seed.placed:
            stale[uid] = p.pod.key
        for uid, _ in seed.with_affinity:
            del self.with_affinity[uid]
        for uid, _ in seed.with_host_ports:
            del self.with_host_ports[uid]

    def _clear(self) -> None:
        """Nothing placed, as before seeding."""
        self._placed, self.with_affinity, self.with_host_ports = {}, {}, {}
        self._loose = []
        self.pod_count = np.zeros(self.n, dtype=np.int64)

    def _take_seed(self, seed: _NodeSeed, rows: list[int]) -> None:
        """Adds what a node's tasks gave the previous session, as a whole; :class:`_SameUid` when one of its uids
        is already placed."""
        placed_by_uid = self._placed
        before = len(placed_by_uid)
        placed_by_uid.update(seed.placed)
        if len(placed_by_uid) - before != len(seed.placed):
            raise _SameUid
        rows += seed.rows
        self.with_affinity.update(seed.with_affinity)
        self.with_host_ports.update(seed.with_host_ports)

    def _seed_node(self, tasks: list[TaskInfo], here: int | None, memo: IdentityMemo[Any] | _Prior,
                   rows: list[int], seed: _NodeSeed | None, stale: dict[str, str] | None = None) -> _NodeSeed | None:
        """Places a node's tasks one by one, recording them in ``seed`` when given; returns the seed to keep
        (None once a task counts on another row than the node's); :class:`_SameUid` on a uid already placed,
        unless it is in ``stale`` (a forgotten seed's pod, placed again once)."""
        index, placed_by_uid = self._index, self._placed
        mine: list[Placed] = []
        for task in tasks:
            idx = index.get(task.node_name) if task.node_name else None
            status = task.status
            if idx is None or status not in _INDEXED:
                continue
            if task.uid in placed_by_uid and (stale is None or stale.pop(task.uid, None) is None):
                raise _SameUid
            placed, affinity, host_ports = (memo.placement(task.pod, idx, status) if isinstance(memo, _Prior)
                                            else _placement(memo, task.pod, idx, status))
            placed_by_uid[task.uid] = placed
            mine.append(placed)
            rows.append(idx)
            if affinity:
                self.with_affinity[task.uid] = placed
            if host_ports:
                self.with_host_ports[task.uid] = placed
            if seed is not None:
                if idx != here:
                    seed = None
                    continue
                seed.add(task.uid, placed, affinity, host_ports)
        if seed is not None:
            seed.rows = [here] * len(seed.placed) if here is not None else []
        else:
            self._loose += mine  # counted into the groups one by one
        return seed

    def _reseed(self, ssn: Session) -> None:
        """``sync`` of every task on a node in turn, from an empty index (and nothing kept for the next session)."""
        ssn.memo.set_value(_NODES_KEY, None)
        self._groups = None
        self._by_pair.clear()
        self._tallies = {}
        self._loose.clear()
        self._journal.clear()
        self._placed.clear()
        self.with_affinity.clear()
        self.with_host_ports.clear()
        self.pod_count[:] = 0
        for nd in ssn.nodes:
            for task in nd.tasks.values():
                self.sync(task)

    def _count(self, rows: list[int]) -> None:
        if rows:
            self.pod_count += np.bincount(np.asarray(rows, dtype=np.int64), minlength=self.n)

    @classmethod
    def of(cls, ssn: Session) -> PodIndex:
        index = _INDEXES.get(ssn)
        if index is None:
            index = cls(ssn)
            _INDEXES[ssn] = index
        return index

    def sync(self, task: TaskInfo) -> None:
        """Bring the index in line with where the task is now (called on every allocate/deallocate event)."""
        idx = self._index.get(task.node_name) if task.node_name else None
        if idx is not None and not (on_node(task.status) or task.status is TaskStatus.PIPELINED):
            idx = None
        prev = self._placed.get(task.uid)
        terminating = task.status is TaskStatus.RELEASING or task.pod.deleting
        if prev is not None and idx == prev.node and terminating == prev.terminating:
            return
        if prev is not None:
            self._apply(task.uid, prev, -1)
            del self._placed[task.uid]
        if idx is not None:
            key: GroupKey | None = self._group_keys.get(task.pod)
            if key is None:
                key = self._group_keys.put(task.pod, group_key(task.pod))
            placed: Placed = _make_placed(task.pod, idx, terminating, key)
            self._placed[task.uid] = placed
            self._apply(task.uid, placed, 1)

    def _group(self, p: Placed) -> _Group:
        assert self._groups is not None
        group = self._groups.get(p.group)
        if group is None:
            targets = [hit for matcher, hit in self._counts.items() if matcher_matches(matcher, p.pod)]
            group = self._groups[p.group] = _Group(p.pod, targets)
            for pair in p.group[1]:
                self._by_pair.setdefault(pair, []).append(group)
        return group

    def _apply(self, uid: str, p: Placed, delta: int) -> None:
        self.pod_count[p.node] += delta
        if self._groups is not None:
            self._group(p).add(p, delta)
        else:
            self._journal.append((p, delta))
        if _has_pod_affinity(p.pod):
            if delta > 0:
                self.with_affinity[uid] = p
            else:
                self.with_affinity.pop(uid, None)
        if _has_host_ports(p.pod):
            if delta > 0:
                self.with_host_ports[uid] = p
            else:
                self.with_host_ports.pop(uid, None)

    def counts(self, matcher: Matcher, *, include_terminating: bool) -> IntArray:
        """Per node, the number of pods matching ``matcher`` (terminating ones too when asked); the index keeps
        the array current in place."""
        every, live, _ = self._matched(matcher)
        return every if include_terminating else live

    def moved(self, matcher: Matcher) -> list[int]:
        """The node rows whose count of non-terminating pods matching ``matcher`` moved since the counts were made,
        in order and with repeats (appended to in place: a reader keeps how far it has read)."""
        return self._matched(matcher)[2]

    def _matched(self, matcher: Matcher) -> _Counts:
        hit = self._counts.get(matcher)
        if hit is None:
            if self._groups is None:
                self._make_groups()
            hit = (np.zeros(self.n, dtype=np.int64), np.zeros(self.n, dtype=np.int64), [])
            for group in self._candidates(matcher):
                if matcher_matches(matcher, group.pod):
                    _add_counts(hit[0], group.every)
                    _add_counts(hit[1], group.live)
                    group.targets.append(hit)
            self._counts[matcher] = hit
        return hit

    def _make_groups(self) -> None:
        """The groups of the placed pods: a copy of the carried tallies (the seeded nodes' pods), then the pods of
        the other nodes and the changes synced since the session opened, one by one."""
        groups: dict[GroupKey, _Group] = {}
        self._groups = groups
        by_pair = self._by_pair
        for key, tally in self._tallies.items():
            group = groups[key] = _Group(tally.pod, [])
            group.every, group.live = dict(tally.every), dict(tally.live)
            for pair in key[1]:
                by_pair.setdefault(pair, []).append(group)
        for p in self._loose:
            self._group(p).add(p, 1)
        for p, delta in self._journal:
            self._group(p).add(p, delta)
        self._tallies, self._loose, self._journal = {}, [], []

    def _candidates(self, matcher: Matcher) -> list[_Group]:
        """The groups ``matcher`` may match: those carrying one of its required label pairs, or every group."""
        assert self._groups is not None
        pairs = _required_pairs(matcher)
        if pairs is None:
            return list(self._groups.values())
        if len(pairs) == 1:
            return self._by_pair.get(pairs[0], [])
        return list({id(g): g for pair in pairs for g in self._by_pair.get(pair, [])}.values())


def port_number(raw: Any) -> int:
    """A container port field as an int (0 when absent or not a number: the API server would have refused it)."""
    try:
        return int(raw or 0)
    except (TypeError, ValueError):
        return 0


def _has_pod_affinity(pod: PodView) -> bool:
    return bool(pod.affinity.get("podAffinity") or pod.affinity.get("podAntiAffinity"))


def _has_host_ports(pod: PodView) -> bool:
    """Whether a container of the pod asks for a host port (loops, not a generator: asked for every pod placed)."""
    spec = pod.raw.get("spec") or {}
    for c in spec.get("containers") or ():
        for port in c.get("ports") or ():
            if port_number(port.get("hostPort")) > 0:
                return True
    return False
