"""Loading configuration and snapshot files with errors that name the file and the field."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

__all__ = ["ConfigError", "load_document", "load_objects", "require", "integer"]


class ConfigError(ValueError):
    """A configuration, policy or snapshot that cannot be used; the message names file and field.

    ``str(exc)`` is ``"<source>: <field>: <message>"``; ``exc.message`` is the message alone, for callers that
    report the field and the source their own way.
    """

    def __init__(self, message: str, *, field: str = "", source: str = "") -> None:
        prefix = ""
        if source:
            prefix += f"{source}: "
        if field:
            prefix += f"{field}: "
        super().__init__(prefix + message)
        self.message = message
        self.field = field
        self.source = source


def _read(path: str | Path) -> str:
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("file not found", source=str(p)) from None
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", source=str(p)) from None
    except UnicodeDecodeError:
        raise ConfigError("not a UTF-8 text file", source=str(p)) from None


def _syntax_error(exc: yaml.YAMLError | json.JSONDecodeError, path: str | Path) -> ConfigError:
    """One line naming the file, where the text stops making sense, and why."""
    if isinstance(exc, json.JSONDecodeError):
        return ConfigError(f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}", source=str(path))
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return ConfigError(f"invalid YAML/JSON{where}: {getattr(exc, 'problem', None) or exc}", source=str(path))


def load_document(path: str | Path) -> Any:
    """One YAML or JSON document."""
    text = _read(path)
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise _syntax_error(exc, path) from None
    if len(docs) > 1:
        raise ConfigError("expected one document, found several", source=str(path))
    return docs[0] if docs else None


def load_objects(path: str | Path) -> list[dict[str, Any]]:
    """Kubernetes objects from a ``kind: List``, a multi-document YAML stream, or a JSON list."""
    text = _read(path)
    try:
        if text.lstrip().startswith(("{", "[")):
            docs: list[Any] = [json.loads(text)]
        else:
            docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        raise _syntax_error(exc, path) from None
    out: list[dict[str, Any]] = []

    def add(doc: Any, where: str) -> None:
        if isinstance(doc, list):
            for i, d in enumerate(doc):
                add(d, f"{where}[{i}]")
            return
        if not isinstance(doc, Mapping):
            raise ConfigError("expected a Kubernetes object", field=where, source=str(path))
        if str(doc.get("kind", "")).endswith("List") and "items" in doc:
            for i, d in enumerate(doc.get("items") or []):
                add(d, f"{where}.items[{i}]")
            return
        if not doc.get("kind"):
            raise ConfigError("missing kind", field=where, source=str(path))
        if not (doc.get("metadata") or {}).get("name"):
            raise ConfigError("missing metadata.name", field=where, source=str(path))
        out.append(dict(doc))

    for i, d in enumerate(docs):
        add(d, f"document[{i}]")
    return out


def require(mapping: Mapping[str, Any], key: str, typ: type | tuple[type, ...], *, field: str) -> Any:
    """``mapping[key]`` checked for type, or a ConfigError naming ``field.key``."""
    if key not in mapping:
        raise ConfigError("required", field=f"{field}.{key}" if field else key)
    v = mapping[key]
    if not isinstance(v, typ) or isinstance(v, bool) and bool not in (typ if isinstance(typ, tuple) else (typ,)):
        raise ConfigError(f"expected {getattr(typ, '__name__', typ)}, got {type(v).__name__}", field=f"{field}.{key}" if field else key)
    return v


def integer(value: Any, *, field: str, source: str = "") -> int:
    """A configured integer: an int, or a whole float (YAML's ``5.0``); anything else - booleans, text, fractions,
    nan and inf (``int()`` of which would raise without naming the field) - is a ConfigError naming ``field``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or (
            isinstance(value, float) and not value.is_integer()):
        raise ConfigError(f"must be an integer, got {value!r}", field=field, source=source)
    return int(value)
