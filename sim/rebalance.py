"""The production rebalancer in the simulator, and what its moves cost.

The policy ``loadaware-rebalance`` runs the real :class:`rebalancer.daemon.RebalancerDaemon` on the simulated
cluster every ``intervalSeconds`` (at least once per tick): it reads the same NodeMetrics the scheduler reads,
proves destinations with the policy's scheduler conf, reserves on the destination and evicts through the embedded
cluster's Eviction API.  The simulator re-creates each evicted pod as its controller would (``sim.run``), and this
module keeps the rebalancer's own tally:

* **evictions** by the rebalancer, apart from the waterline's and the scheduler's;
* **lost work**: a batch pod restarts from the beginning, so the time it had run is lost (pod-hours); a service
  replica only loses the time until its replacement runs, which the wait measures already count;
* **moved twice within an hour**: workload pods the rebalancer evicted again less than an hour after the last time;
* **unproven**: evictions without a proven destination (the design allows none);
* where the replacements landed: on the expected destination, back on the source, elsewhere;
* why candidates stayed, by kind (the limit or cool-down that held them, ``too small``, ``no destination``): what
  keeps a case from moving more.
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from common.clock import Clock
from common.cluster.memory import MemoryCluster
from rebalancer.args import RebalanceArgs
from rebalancer.daemon import RebalancerDaemon
from rebalancer.plan import Move, Rebalancer
from scheduler.cache import SchedulerCache
from scheduler.conf import SchedulerConf
from scheduler.framework.snapshot import Snapshot

__all__ = ["RebalanceTally", "SimRebalancer", "REPEAT_WINDOW_SECONDS", "SKIPPED", "skip_kind"]

REPEAT_WINDOW_SECONDS = 3600.0
SKIPPED = "skipped: "  # the tally's key prefix of each skip kind
HELD = "rounds held: "  # the tally's key prefix of each reason a round stopped before looking at pods


@dataclass(slots=True)
class RebalanceTally:
    evictions: int = 0
    refused: int = 0
    unproven: int = 0
    destination_checks: int = 0
    lost_seconds: float = 0.0
    repeats_within_hour: int = 0
    landed_on_destination: int = 0
    landed_on_source: int = 0
    landed_elsewhere: int = 0
    rounds: int = 0
    round_seconds: list[float] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)  # skip_kind -> candidates (or sources) held back
    held: Counter[str] = field(default_factory=Counter)  # skip_kind -> rounds that stopped before looking at pods

    def to_json(self) -> dict[str, float]:
        return {"evictions": self.evictions, "refused": self.refused, "unproven": self.unproven,
                "destination_checks": self.destination_checks, "lost_pod_hours": round(self.lost_seconds / 3600, 2),
                "moved_twice_within_hour": self.repeats_within_hour,
                "landed_on_destination": self.landed_on_destination, "landed_on_source": self.landed_on_source,
                "landed_elsewhere": self.landed_elsewhere, "rounds": self.rounds,
                "round_seconds_total": round(sum(self.round_seconds), 3),
                **{SKIPPED + kind: n for kind, n in self.skipped.most_common()},
                **{HELD + kind: n for kind, n in self.held.most_common()}}


_ARGUMENT = re.compile(r"\b(max[A-Z]\w*|\w+CooldownSeconds|numberOfNodes)\b")


def skip_kind(why: str) -> str:
    """What held a candidate (or a whole round) back, without the numbers: the argument a limit, cool-down or
    ``numberOfNodes`` names, else the reason's opening words (``too small``, ``no destination``, ``paused``)."""
    opening = why.split(":")[0].strip()
    found = _ARGUMENT.search(opening)
    return found.group(1) if found else opening


def _snapshots(cluster: MemoryCluster, clock: Clock, scheduler: Any) -> Callable[[], Snapshot]:
    """Snapshots from the production scheduler's informer cache when the simulation runs one (the same objects,
    parsed once for both), else from a cache of the rebalancer's own."""
    cache = getattr(scheduler, "cache", None)
    if isinstance(cache, SchedulerCache):
        scheduler.start()
        return cache.snapshot
    own = SchedulerCache(cluster, clock)
    own.start()
    return own.snapshot


class SimRebalancer:
    def __init__(self, cluster: MemoryCluster, clock: Clock, conf: SchedulerConf, args: RebalanceArgs, *,
                 tick_seconds: float, scheduler: Any = None) -> None:
        self.interval = max(args.interval_seconds, tick_seconds)
        # observations one round apart must chain, whatever the simulated step
        anomaly = dataclasses.replace(args.anomaly_condition,
                                      timeout=max(args.anomaly_condition.timeout, self.interval))
        self.daemon = RebalancerDaemon(cluster, Rebalancer(dataclasses.replace(args, anomaly_condition=anomaly), conf),
                                       clock, _snapshots(cluster, clock, scheduler))
        self.tally = RebalanceTally()
        self._next = -math.inf
        self._moves: dict[str, Move] = {}  # pod key -> this round's accepted move
        self._awaiting: dict[int, Move] = {}  # workload pod index -> the move its replacement follows
        self._last: dict[int, float] = {}  # workload pod index -> time of its last eviction by the rebalancer

    def round(self, t: float) -> None:
        """One rebalancing round if one is due at simulated second ``t``."""
        if t < self._next:
            return
        self._next = t + self.interval
        t0 = time.perf_counter()
        result = self.daemon.run_once()
        self.tally.round_seconds.append(time.perf_counter() - t0)
        self.tally.rounds += 1
        self.tally.destination_checks += result.plan.checks
        self.tally.refused += len(result.refused)
        self.tally.skipped.update(skip_kind(sk.why) for sk in result.plan.skipped)
        if result.plan.note:
            self.tally.held[skip_kind(result.plan.note)] += 1
        self._moves = {m.pod: m for m in result.evicted}

    def evicted(self, key: str, index: int, t: float, ran_seconds: float, restarts_from_scratch: bool) -> None:
        """The simulator saw the rebalancer's eviction of pod ``key`` (workload pod ``index``)."""
        tally = self.tally
        tally.evictions += 1
        move = self._moves.get(key)
        if move is None:
            tally.unproven += 1
        else:
            self._awaiting[index] = move
        if restarts_from_scratch:
            tally.lost_seconds += ran_seconds
        last = self._last.get(index)
        if last is not None and t - last < REPEAT_WINDOW_SECONDS:
            tally.repeats_within_hour += 1
        self._last[index] = t

    def bound(self, index: int, node: str) -> None:
        """Workload pod ``index`` was bound to ``node``: if it replaces a moved pod, where did it land?"""
        move = self._awaiting.pop(index, None)
        if move is None:
            return
        if node == move.destination:
            self.tally.landed_on_destination += 1
        elif node == move.source:
            self.tally.landed_on_source += 1
        else:
            self.tally.landed_elsewhere += 1
