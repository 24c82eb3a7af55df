"""Structured logs for every subcommand: ``--log-format logfmt|json`` and ``--log-level``.

One line per record.  logfmt (``time=... level=info logger=loadwise.agent msg="..."``) reads well in
``kubectl logs`` and parses with Loki/Grafana's logfmt parser; json suits collectors that want objects.  A
mapping or list passed as a ``%s`` argument is written as JSON, not as a Python repr, and an exception becomes
one ``error`` field (type and message) instead of a multi-line traceback; ``--log-level debug`` keeps the
traceback in a ``traceback`` field.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import traceback
from datetime import UTC, datetime
from typing import Any

__all__ = ["add_logging_flags", "setup_logging", "LogfmtFormatter", "JsonFormatter"]

LEVELS = ("debug", "info", "warning", "error")
FORMATS = ("logfmt", "json")
# libraries that log every routine step at INFO
_QUIET = ("apscheduler", "aiohttp.access", "kubernetes", "urllib3")


def add_logging_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("logging")
    group.add_argument("--log-level", choices=LEVELS, default="info",
                       help="least severe level written to stderr (default %(default)s)")
    group.add_argument("--log-format", choices=FORMATS, default="logfmt",
                       help="one line per record: logfmt key=value pairs or a JSON object (default %(default)s)")


def _compact(value: Any) -> Any:
    return json.dumps(value, default=str, separators=(",", ":")) if isinstance(value, dict | list) else value


def _json_args(record: logging.LogRecord) -> Any:
    """The record's arguments with mappings and lists as JSON.  A lone mapping argument is kept for
    ``%(key)s`` messages (``logging`` unpacks it into ``args``) and is otherwise one positional argument."""
    args = record.args
    if isinstance(args, dict) and "%(" not in str(record.msg):
        return (_compact(args),)
    if isinstance(args, tuple):
        return tuple(_compact(a) for a in args)
    return args


def _fields(record: logging.LogRecord, debug: bool) -> dict[str, Any]:
    record.args = _json_args(record)
    out: dict[str, Any] = {
        "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "level": record.levelname.lower(),
        "logger": record.name,
        "msg": record.getMessage(),
    }
    if record.exc_info and record.exc_info[1] is not None:
        exc = record.exc_info[1]
        out["error"] = f"{type(exc).__name__}: {exc}"
        if debug:
            out["traceback"] = "".join(traceback.format_exception(exc)).rstrip()
    return out


def _logfmt_value(value: Any) -> str:
    text = str(value)
    if text and not any(c in text for c in ' ="\\\n\t'):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'


class LogfmtFormatter(logging.Formatter):
    def __init__(self, *, debug: bool = False) -> None:
        super().__init__()
        self.debug = debug

    def format(self, record: logging.LogRecord) -> str:
        return " ".join(f"{k}={_logfmt_value(v)}" for k, v in _fields(record, self.debug).items())


class JsonFormatter(logging.Formatter):
    def __init__(self, *, debug: bool = False) -> None:
        super().__init__()
        self.debug = debug

    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(_fields(record, self.debug), default=str)


def setup_logging(level: str = "info", fmt: str = "logfmt") -> None:
    """Route every logger to stderr in ``fmt``, replacing handlers an earlier call installed."""
    debug = level == "debug"
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter(debug=debug) if fmt == "json" else LogfmtFormatter(debug=debug))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    for name in _QUIET:
        logging.getLogger(name).setLevel(logging.DEBUG if debug else logging.WARNING)
