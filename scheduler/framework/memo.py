"""Values derived from parsed cluster objects, reused from one session to the next.

Every entry is keyed by the *identity* of the object it was derived from (a ``PodView``, ``NodeView``,
``NodeMetricView`` ...).  Those views are immutable, and the scheduler cache replaces a view with a new object
whenever its watch delivers a new version of the object, so a pod, node or NodeMetric that changed is a different
object and can never hit an entry derived from its predecessor.  An entry holds its object, so the object's id
cannot be reused by another object while the entry exists.

Entries not used during a session read as absent once the session after it opens (:meth:`SessionMemo.rotate`) and
are dropped in batches, so the memo holds two sessions' worth of objects and at most a quarter (plus 256) more.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from operator import is_
from typing import Any, Generic, TypeVar

__all__ = ["IdentityMemo", "SessionMemo", "same_objects"]

V = TypeVar("V")
T = TypeVar("T")


class IdentityMemo(Generic[V]):
    """A value per object, for the objects seen in the current or the previous session.

    One entry per object, stamped with the last session that used it: a session's rotation costs nothing, an entry
    older than the previous session reads as absent, and such entries are dropped together once they make up a
    fifth of the table (rather than two tables swapped and the older freed whole at every rotation, which costs as
    much as the table is large)."""

    __slots__ = ("_entries", "_epoch", "_kept")

    def __init__(self) -> None:
        self._entries: dict[int, list[Any]] = {}   # id(obj) -> [obj, value, the last session that used it]
        self._epoch = 0
        self._kept = 0   # entries left by the last pruning

    def get(self, obj: object) -> V | None:
        hit = self._entries.get(id(obj))
        if hit is None or hit[0] is not obj:
            return None
        used = hit[2]
        if used != self._epoch:
            if used < self._epoch - 1:
                return None
            hit[2] = self._epoch
        value: V = hit[1]
        return value

    def put(self, obj: object, value: V) -> V:
        self._entries[id(obj)] = [obj, value, self._epoch]
        return value

    def rotate(self) -> None:
        """Start a new session: what the last session did not use reads as absent after the next rotation."""
        self._epoch += 1
        if len(self._entries) > self._kept * 5 // 4 + 256:
            oldest = self._epoch - 1
            self._entries = {k: e for k, e in self._entries.items() if e[2] >= oldest}
            self._kept = len(self._entries)

    def clear(self) -> None:
        self._entries = {}
        self._kept = 0

    def __len__(self) -> int:
        oldest = self._epoch - 1
        return sum(1 for e in self._entries.values() if e[2] >= oldest)


def same_objects(a: Sequence[object], b: Sequence[object]) -> bool:
    """The very same objects, in the same order (the very same sequence without a look at them): what the memos
    key values derived from every node view, profile or pod of a node by."""
    return a is b or (len(a) == len(b) and all(map(is_, a, b)))


class SessionMemo:
    """The identity memos of one scheduler, by name, plus small per-name values (e.g. the resource columns the
    memoised task vectors were built for).  A session without a scheduler gets a fresh, empty memo.

    Besides immutable derived values, a session may also take over the mutable task, job and node objects of the
    session before it — made anew in place, which spares allocating (and garbage-collecting) them every period, or
    taken as they are when nothing changed them since they were made (a task, a pod's group of one: they note any
    change, see :class:`~scheduler.framework.api.Tracked`).
    Only one session at a time may do so: the one that :meth:`claim` admits, until it is :meth:`release` d (the
    engine releases a session once it has written it back and nothing reads it any more)."""

    def __init__(self) -> None:
        self._tables: dict[str, IdentityMemo[Any]] = {}
        self._values: dict[Hashable, Any] = {}
        self._owner: object | None = None
        self.epoch = 0   # counts rotations: an object renewed in this epoch is in use by the current session
        # the epochs of the last two sessions that claimed the memo (the current one's last, while it holds it)
        self.claimed_epoch = -1
        self.previous_claim = -1
        # for_objects' shared tuple, the sequence last found equal to it and the epoch it was found in
        self._last_sequence: tuple[tuple[Any, ...], Sequence[Any], int] | None = None

    def claim(self, owner: object) -> bool:
        """Whether ``owner`` may renew the mutable objects earlier sessions left (no other owner holds them)."""
        if self._owner is not None:
            return False
        self._owner = owner
        self.previous_claim, self.claimed_epoch = self.claimed_epoch, self.epoch
        return True

    def carried(self, key: Hashable) -> Any:
        """What the previous claiming session stored with :meth:`carry` under ``key`` (None if it stored nothing, or
        if another session stored something since): the base a claiming session updates by the jobs it did not
        take over as they were (see ``SessionState.kept_jobs``)."""
        hit = self._values.get(("carried", key))
        return hit[1] if hit is not None and hit[0] == self.previous_claim else None

    def carry(self, key: Hashable, value: Any) -> None:
        """Store ``value`` for the next claiming session (:meth:`carried`), as the current session's."""
        self._values[("carried", key)] = (self.epoch, value)

    def release(self, owner: object) -> None:
        if self._owner is owner:
            self._owner = None

    def table(self, name: str) -> IdentityMemo[Any]:
        t = self._tables.get(name)
        if t is None:
            t = self._tables[name] = IdentityMemo()
        return t

    def value(self, key: Hashable) -> Any:
        return self._values.get(key)

    def set_value(self, key: Hashable, value: Any) -> None:
        self._values[key] = value

    def for_objects(self, key: Hashable, objects: Sequence[object], compute: Callable[[], V]) -> V:
        """``compute()``, reused while ``objects`` are the very same objects, in the same order (e.g. a value
        derived from every node view of the session).  Only the latest value per key is kept.

        The sequences are compared once per session and sequence object, not once per key: the keys' values are
        stored with one shared tuple of the objects, which a sequence found equal to it stands for until the next
        rotation (a session's callers hand the same read-only node list to several keys, 5,000 objects each)."""
        seq = self.shared_tuple(objects)
        hit = self._values.get(key)
        if hit is not None and (hit[0] is seq or same_objects(hit[0], seq)):
            value: V = hit[1]
            if hit[0] is not seq:
                self._values[key] = (seq, value)
            return value
        value = compute()
        self._values[key] = (seq, value)
        return value

    def shared_tuple(self, objects: Sequence[T]) -> tuple[T, ...]:
        """A tuple of ``objects`` (read-only: a sequence the caller does not change while this session runs): the
        last one made while they are the same objects in the same order, so callers that keep one may compare it
        by identity; without a comparison when ``objects`` is the sequence last found equal to it in this session
        (what :meth:`for_objects` stores its values with)."""
        last = self._last_sequence
        if last is not None and last[1] is objects and last[2] == self.epoch:
            return last[0]
        seq = last[0] if last is not None and same_objects(last[0], objects) else tuple(objects)
        self._last_sequence = (seq, objects, self.epoch)
        return seq

    def rotate(self) -> None:
        self.epoch += 1
        for t in self._tables.values():
            t.rotate()
