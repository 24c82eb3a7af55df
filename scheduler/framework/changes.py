"""Which cached objects changed between two snapshots: the scheduler cache notes the kind and key of every change it
sees (a watch event, an assumed binding made or dropped), so that a session can update what it carried from the
previous one by those objects alone instead of walking every object again (:mod:`.carried`)."""

from __future__ import annotations

__all__ = ["ChangeLog", "Changes"]

# kind, key, and whether the object left the cache (deleted, or dropped as malformed)
_Entry = tuple[str, str, bool]
Changes = dict[str, dict[str, bool]]


class ChangeLog:
    """The changes a cache saw, one per generation: entry ``i`` made generation ``start + i + 1``.

    Only the last ``limit`` or so entries are kept; a reader asking about older generations gets None (and then
    rebuilds what it derived, as after a restart)."""

    __slots__ = ("_entries", "_start", "_limit")

    def __init__(self, limit: int = 1 << 16) -> None:
        if limit < 2:
            raise ValueError(f"ChangeLog limit must be at least 2, got {limit}")
        self._entries: list[_Entry] = []
        self._start = 0
        self._limit = limit

    @property
    def generation(self) -> int:
        """The generation the last noted change made."""
        return self._start + len(self._entries)

    def note(self, kind: str, key: str, removed: bool = False) -> None:
        """One change, making the next generation."""
        entries = self._entries
        entries.append((kind, key, removed))
        if len(entries) > self._limit:
            drop = len(entries) // 2
            del entries[:drop]
            self._start += drop

    def between(self, since: int, upto: int) -> Changes | None:
        """Kind -> key -> whether it left the cache at some point, for the changes after generation ``since`` up to
        ``upto``; None when the log no longer holds them all."""
        if since < self._start or upto > self.generation or since > upto:
            return None
        out: Changes = {}
        for kind, key, removed in self._entries[since - self._start:upto - self._start]:
            keys = out.get(kind)
            if keys is None:
                keys = out[kind] = {}
            keys[key] = keys.get(key, False) or removed
        return out
