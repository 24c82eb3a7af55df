"""Exact Kubernetes quantity parsing and formatting.

A quantity is parsed into an exact :class:`fractions.Fraction`, so ``0.1`` stays one tenth and no
float drift ever reaches the resource arithmetic.  The two integer views match
``resource.Quantity``: :func:`milli_value` (``MilliValue()``) and :func:`value` (``Value()``) both
round up, as Kubernetes does.  Both are memoised for strings, and plain integers with an integral suffix
skip the fraction altogether; the results are the same exact values.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

__all__ = [
    "QuantityError",
    "parse_quantity",
    "milli_value",
    "value",
    "cached_milli_value",
    "cached_value",
    "cached_quantity",
    "format_milli",
    "format_bytes",
    "format_int",
]

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_BINARY_LARGEST_FIRST = tuple(sorted(_BINARY.items(), key=lambda kv: -kv[1]))
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
# sign, digits with optional fraction, then a binary suffix, a decimal suffix or an exponent.
_PATTERN = re.compile(
    r"^(?P<sign>[+-]?)(?P<num>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:(?P<bin>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<exp>[eE][+-]?[0-9]+)|(?P<dec>[numkMGTPE]?))$"
)
# Kubernetes rejects quantities whose exponent is absurd; so do we, to keep Fractions small.
_MAX_EXPONENT = 64


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity.  The message names the offending text."""


def parse_quantity(text: str | int | float, *, field: str | None = None) -> Fraction:
    """Parse ``text`` (``"250m"``, ``"1.5Gi"``, ``"1e3"``, ``2``) into an exact fraction of base units."""
    where = f"{field}: " if field else ""
    if isinstance(text, bool):
        raise QuantityError(f"{where}quantity must be a string or number, got {text!r}")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        if not math.isfinite(text):
            raise QuantityError(f"{where}quantity must be finite, got {text!r}")
        # JSON numbers arrive as floats; their shortest repr is what the user wrote.
        text = repr(text)
    if not isinstance(text, str):
        raise QuantityError(f"{where}quantity must be a string or number, got {type(text).__name__}")
    s = text.strip()
    m = _PATTERN.match(s)
    if m is None:
        raise QuantityError(f"{where}{text!r} is not a valid quantity (expected e.g. 250m, 1.5, 2Gi, 1e3)")
    number = Fraction(m.group("num"))
    if m.group("bin"):
        number *= _BINARY[m.group("bin")]
    elif m.group("exp"):
        exponent = int(m.group("exp")[1:])
        if abs(exponent) > _MAX_EXPONENT:
            raise QuantityError(f"{where}{text!r}: exponent out of range")
        number *= Fraction(10) ** exponent
    else:
        number *= _DECIMAL[m.group("dec") or ""]
    return -number if m.group("sign") == "-" else number


def _ceil(x: Fraction) -> int:
    return -((-x.numerator) // x.denominator)


# Suffixes whose factor is a whole number, for the integer fast path; "m" is handled on its own.
_WHOLE_FACTORS = {**_BINARY, **{k: int(v) for k, v in _DECIMAL.items() if k and v.denominator == 1}}


def _scaled(text: str, scale: int) -> int:
    """``ceil(quantity × scale)`` of a quantity string: exact, as :func:`parse_quantity` then rounding up.

    Plain digits, optionally followed by ``m`` or a whole-number suffix (``k``, ``M``, ``Ki``, ``Gi`` ...), take
    an integer path; everything else goes through the exact fraction.
    """
    if text.isascii():
        if text.isdigit():
            return int(text) * scale
        for width in (1, 2):
            digits = text[:-width]
            if digits.isdigit():
                suffix = text[-width:]
                if suffix == "m":
                    return -((-int(digits) * scale) // 1000)
                factor = _WHOLE_FACTORS.get(suffix)
                if factor is not None:
                    return int(digits) * factor * scale
                break
    return _ceil(parse_quantity(text) * scale)


@lru_cache(maxsize=4096)
def cached_quantity(text: str) -> Fraction:
    """:func:`parse_quantity` of a string, exact and memoised by the text (errors as :func:`cached_milli_value`)."""
    return parse_quantity(text)


@lru_cache(maxsize=65536)
def cached_milli_value(text: str) -> int:
    """:func:`milli_value` of a quantity string, memoised by the text.

    Raises :class:`QuantityError` (not naming a field) for a string that is not a quantity; callers that name
    the field parse it again with :func:`milli_value` for the message.
    """
    return _scaled(text, 1000)


@lru_cache(maxsize=65536)
def cached_value(text: str) -> int:
    """:func:`value` of a quantity string, memoised by the text (errors as :func:`cached_milli_value`)."""
    return _scaled(text, 1)


def milli_value(text: str | int | float | Fraction, *, field: str | None = None) -> int:
    """``Quantity.MilliValue()``: thousandths of the unit, rounded up."""
    if type(text) is str:
        try:
            return cached_milli_value(text)
        except QuantityError:
            pass  # parsed again below, for the message that names the field
    q = text if isinstance(text, Fraction) else parse_quantity(text, field=field)
    return _ceil(q * 1000)


def value(text: str | int | float | Fraction, *, field: str | None = None) -> int:
    """``Quantity.Value()``: whole units, rounded up."""
    if type(text) is str:
        try:
            return cached_value(text)
        except QuantityError:
            pass  # parsed again below, for the message that names the field
    q = text if isinstance(text, Fraction) else parse_quantity(text, field=field)
    return _ceil(q)


def format_milli(millis: int) -> str:
    """Millicores as Kubernetes prints them: ``"2"`` for 2000, ``"250m"`` otherwise."""
    if millis % 1000 == 0:
        return str(millis // 1000)
    return f"{millis}m"


def format_bytes(n: int) -> str:
    """Bytes in binary SI canonical form: the largest binary suffix that divides exactly."""
    if n % 1024:  # no binary suffix divides it (each is a multiple of 1Ki): most measured byte counts
        return str(n)
    if n == 0:
        return "0"
    for suffix, factor in _BINARY_LARGEST_FIRST:
        if n % factor == 0:
            return f"{n // factor}{suffix}"
    return str(n)


def format_int(n: int) -> str:
    """A plain integer quantity (pods, extended resources)."""
    return str(n)
