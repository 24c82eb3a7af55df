"""The one output flag every subcommand shares: ``-o text|json`` (and ``table`` where a table fits), text by
default, so a script never has to learn a command's own spelling."""

from __future__ import annotations

import argparse

__all__ = ["add_output_flag", "OUTPUTS"]

OUTPUTS = ("text", "json")


def add_output_flag(parser: argparse.ArgumentParser, *, table: bool = False) -> None:
    """``-o/--output``; with ``table``, ``table`` is accepted too and means the same as ``text``."""
    choices = (*OUTPUTS, "table") if table else OUTPUTS
    what = "text (tables for a terminal" + (", also spelt table" if table else "") + ") or json"
    parser.add_argument("-o", "--output", choices=choices, default="text", help=f"{what}; default %(default)s")
