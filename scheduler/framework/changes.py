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

    __slots__ = ("_log", "_limit")

    def __init__(self, limit: int = 1 << 16) -> None:
        if limit < 2:
            raise ValueError(f"ChangeLog limit must be at least 2, got {limit}")
        # (generation before the first entry, entries), replaced as a whole when trimmed: a reader in another
        # thread than the (single) writer reads a consistent pair, and a list once replaced is never changed
        self._log: tuple[int, list[_Entry]] = (0, [])
        self._limit = limit

    @property
    def generation(self) -> int:
        """The generation the last noted change made."""
        start, entries = self._log
        return start + len(entries)

    def note(self, kind: str, key: str, removed: bool = False) -> None:
        """One change, making the next generation (one writer at a time: the cache notes under its lock)."""
        start, entries = self._log
        entries.append((kind, key, removed))
        if len(entries) > self._limit:
            drop = len(entries) // 2
            self._log = (start + drop, entries[drop:])

    def between(self, since: int, upto: int) -> Changes | None:
        """Kind -> key -> whether it left the cache at some point, for the changes after generation ``since`` up to
        ``upto``; None when the log no longer holds them all."""
        start, entries = self._log
        if since < start or upto > start + len(entries) or since > upto:
            return None
        out: Changes = {}
        for kind, key, removed in entries[since - start:upto - start]:
            keys = out.get(kind)
            if keys is None:
                keys = out[kind] = {}
            keys[key] = keys.get(key, False) or removed
        return out
