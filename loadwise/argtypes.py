"""Argument types the subcommands share: argparse turns their ``ArgumentTypeError`` into
``loadwise <command>: error: argument --flag: <message>`` and exit status 2."""

from __future__ import annotations

import argparse
import math

__all__ = ["positive_float", "positive_int", "non_negative_int", "port"]


def _number(text: str, kind: type[int] | type[float]) -> int | float:
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if kind is int else 'a number'}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def positive_float(text: str) -> float:
    """A finite number above zero (``nan`` and ``inf`` are refused, not run with)."""
    value = float(_number(text, float))
    if value <= 0:
        raise argparse.ArgumentTypeError("must be positive")
    return value


def positive_int(text: str) -> int:
    value = int(_number(text, int))
    if value <= 0:
        raise argparse.ArgumentTypeError("must be positive")
    return value


def non_negative_int(text: str) -> int:
    value = int(_number(text, int))
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def port(text: str) -> int:
    """A TCP port, 0 (any free port) to 65535."""
    value = int(_number(text, int))
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is outside 0-65535")
    return value
