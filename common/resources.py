"""Resource vectors over arbitrary resource names, in integer base units.

CPU (and the ``*-cpu`` batch/mid names) is held in millicores; everything else in its integer base
unit (bytes, pods, devices).  ``Resources`` is an immutable mapping; missing names read as 0.
"""

from __future__ import annotations

from collections.abc import Callable, ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from fractions import Fraction
from typing import Any

from common.quantity import (
    QuantityError,
    cached_milli_value,
    cached_value,
    format_bytes,
    format_int,
    format_milli,
    milli_value,
    value,
)

__all__ = [
    "CPU",
    "MEMORY",
    "PODS",
    "EPHEMERAL_STORAGE",
    "MAX_QUANTITY",
    "cap_quantity",
    "Resources",
    "is_milli_resource",
    "is_byte_resource",
    "is_scalar_resource",
]

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"

# Parsed quantities are exact integers, but sessions pack them into int64 arrays and sum them.  A quantity
# beyond 2**53 (8 PiB of memory, 9 billion cores: a typo such as "1Ei" cores, or a "practically unlimited"
# queue capability) is capped there when parsed, as Kubernetes caps quantities it cannot represent, so that
# sums of a thousand of them still fit in int64 and every value converts to float64 exactly.
MAX_QUANTITY = 2**53


def cap_quantity(n: int) -> int:
    """``n`` bounded to ±:data:`MAX_QUANTITY`."""
    return n if -MAX_QUANTITY <= n <= MAX_QUANTITY else (MAX_QUANTITY if n > 0 else -MAX_QUANTITY)


def is_milli_resource(name: str) -> bool:
    """Names whose quantities are stored in millicores.

    Koordinator's ``batch-cpu``/``mid-cpu`` are already written as milli-core integers in pod
    specs (``"500"`` means 500m), so they are read as plain integers but still mean millicores.
    """
    return name == CPU


def is_byte_resource(name: str) -> bool:
    return name in (MEMORY, EPHEMERAL_STORAGE) or name.startswith("hugepages-") or name.endswith("-memory")


def is_scalar_resource(name: str) -> bool:
    """Extended, hugepages and attachable-volume resources (kube's "scalar" resources)."""
    return name not in (CPU, MEMORY, PODS, EPHEMERAL_STORAGE)


# Resource name -> memoised parser of its quantity strings (millis for cpu, whole units for the rest).
_TEXT_PARSERS: dict[str, Callable[[str], int]] = {}


def _text_parser(name: str) -> Callable[[str], int]:
    parser = cached_milli_value if is_milli_resource(name) else cached_value
    if len(_TEXT_PARSERS) < 1024:  # names are few; never let odd input grow it without bound
        _TEXT_PARSERS[name] = parser
    return parser


def _parse_one(name: str, raw: Any, field: str, key: Any) -> int:
    """One quantity of ``field``; the field's name for an error (``field.key``) is only built on failure."""
    if type(raw) is str:
        try:
            return cap_quantity(cached_milli_value(raw) if is_milli_resource(name) else cached_value(raw))
        except QuantityError:
            pass  # parsed again below, for the message that names the field
    where = f"{field}.{key}"
    if is_milli_resource(name):
        return cap_quantity(milli_value(raw, field=where))
    return cap_quantity(value(raw, field=where))


class Resources(Mapping[str, int]):
    """An immutable vector of named integer quantities.  Zero entries are dropped."""

    __slots__ = ("_d", "_hash")

    def __init__(self, values: Mapping[str, int] | Iterable[tuple[str, int]] | None = None, **kw: int) -> None:
        d: dict[str, int] = {}
        if values is not None:
            items = values.items() if isinstance(values, Mapping) else values
            for k, v in items:
                if v:
                    d[k] = int(v)
        for k, v in kw.items():
            if v:
                d[k] = int(v)
        self._d = d
        self._hash: int | None = None

    # -- construction -----------------------------------------------------------------------------
    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None, *, field: str = "resources") -> Resources:
        """From a Kubernetes ResourceList (``{"cpu": "250m", "memory": "1Gi"}``)."""
        if not raw:
            return EMPTY
        fast = cls.parse_texts(raw)
        if fast is not None:
            return fast
        if not isinstance(raw, Mapping):
            raise ValueError(f"{field}: expected a map of resource name to quantity")
        parsed = {str(k): _parse_one(str(k), v, field, k) for k, v in raw.items()}
        return cls._trusted({k: v for k, v in parsed.items() if v})

    @classmethod
    def parse_texts(cls, raw: Any) -> Resources | None:
        """:meth:`parse` of the usual ResourceList, a ``dict`` of string names to quantity strings (memoised).

        ``None`` for anything else, or a string that is not a quantity: :meth:`parse` then takes the general
        path and its error names the field, so callers can leave building the field's name to that case.
        """
        if type(raw) is not dict:
            return None
        d: dict[str, int] = {}
        for k, v in raw.items():
            if type(k) is not str or type(v) is not str:
                return None
            if v.isdigit() and v.isascii():
                # A plain integer (most measured byte counts, each seen once): what the memoised parsers compute
                # for it (millis for cpu, the one milli resource), without a memo entry that would only push
                # useful ones out.
                n = int(v) * 1000 if k == CPU else int(v)
            else:
                try:
                    n = (_TEXT_PARSERS.get(k) or _text_parser(k))(v)
                except QuantityError:
                    return None
            if n:
                d[k] = n if -MAX_QUANTITY <= n <= MAX_QUANTITY else cap_quantity(n)
        out = cls.__new__(cls)
        out._d = d
        out._hash = None
        return out

    @classmethod
    def _trusted(cls, d: dict[str, int]) -> Resources:
        """From a dict of non-zero ints that nobody else holds (what ``__init__`` would build, without the checks)."""
        out = cls.__new__(cls)
        out._d = d
        out._hash = None
        return out

    @classmethod
    def of(cls, cpu: int = 0, memory: int = 0, pods: int = 0, **extra: int) -> Resources:
        return cls({CPU: cpu, MEMORY: memory, PODS: pods, **extra})

    def to_kube(self) -> dict[str, str]:
        """Back to a ResourceList with Kubernetes' canonical formatting."""
        out: dict[str, str] = {}
        for k in sorted(self._d):
            v = self._d[k]
            if is_milli_resource(k):
                out[k] = format_milli(v)
            elif is_byte_resource(k):
                out[k] = format_bytes(v)
            else:
                out[k] = format_int(v)
        return out

    # -- Mapping ------------------------------------------------------------------------------------
    def __getitem__(self, key: str) -> int:
        return self._d.get(key, 0)

    def get(self, key: str, default: Any = 0) -> Any:  # type: ignore[override]
        return self._d.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._d

    def __iter__(self) -> Iterator[str]:
        return iter(self._d)

    # the views of the entries themselves, in the same order as Mapping's (which reads each value through
    # __getitem__, in Python): read-only, as every view of a dict is
    def items(self) -> ItemsView[str, int]:
        return self._d.items()

    def keys(self) -> KeysView[str]:
        return self._d.keys()

    def values(self) -> ValuesView[int]:
        return self._d.values()

    def __len__(self) -> int:
        return len(self._d)

    def __repr__(self) -> str:
        return f"Resources({self._d!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Resources):
            return self._d == other._d
        if isinstance(other, Mapping):
            return self._d == {k: v for k, v in other.items() if v}
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._d.items()))
        return self._hash

    # -- arithmetic ---------------------------------------------------------------------------------
    def __add__(self, other: Mapping[str, int]) -> Resources:
        d = dict(self._d)
        if type(other) is not Resources:
            for k, v in other.items():
                d[k] = d.get(k, 0) + v
            return Resources(d)
        for k, v in other._d.items():
            d[k] = d.get(k, 0) + v
        return _of_sums(d)

    def __sub__(self, other: Mapping[str, int]) -> Resources:
        d = dict(self._d)
        if type(other) is not Resources:
            for k, v in other.items():
                d[k] = d.get(k, 0) - v
            return Resources(d)
        for k, v in other._d.items():
            d[k] = d.get(k, 0) - v
        return _of_sums(d)

    def scale(self, factor: float | Fraction) -> Resources:
        """Multiply every entry, truncating toward zero."""
        return Resources({k: int(v * factor) for k, v in self._d.items()})

    def max(self, other: Mapping[str, int]) -> Resources:
        keys = set(self._d) | set(other)
        return Resources({k: max(self[k], other.get(k, 0)) for k in keys})

    def min(self, other: Mapping[str, int]) -> Resources:
        keys = set(self._d) | set(other)
        return Resources({k: min(self[k], other.get(k, 0)) for k in keys})

    def clamp_nonnegative(self) -> Resources:
        return Resources({k: v for k, v in self._d.items() if v > 0})

    def only(self, names: Iterable[str]) -> Resources:
        names = set(names)
        return Resources({k: v for k, v in self._d.items() if k in names})

    # -- comparison ---------------------------------------------------------------------------------
    def fits_in(self, capacity: Mapping[str, int]) -> bool:
        """Every entry of ``self`` is at most the same entry of ``capacity``."""
        return all(v <= capacity.get(k, 0) for k, v in self._d.items())

    def insufficient(self, free: Mapping[str, int]) -> list[str]:
        """Names whose request exceeds ``free``, in sorted order."""
        return sorted(k for k, v in self._d.items() if v > free.get(k, 0))

    def less_equal(self, other: Mapping[str, int]) -> bool:
        return self.fits_in(other)

    def is_zero(self) -> bool:
        return not self._d

    def as_dict(self) -> dict[str, int]:
        return dict(self._d)


EMPTY = Resources()


def _of_sums(d: dict[str, int]) -> Resources:
    """``Resources(d)`` for a dict of sums of two vectors' entries (ints) that nobody else holds: its zero entries
    dropped, without the checks."""
    if 0 in d.values():
        d = {k: v for k, v in d.items() if v}
    return Resources._trusted(d)
