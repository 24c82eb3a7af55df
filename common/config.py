"""Loading configuration and snapshot files with errors that name the file and the field."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

__all__ = ["ConfigError", "load_document", "load_objects", "require", "integer", "flag"]


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


STDIN = "-"


def _read(path: str | Path) -> str:
    """The text of ``path``; ``-`` is standard input (``kubectl get ... -o yaml | loadwise explain --snapshot -``)."""
    if str(path) == STDIN:
        return sys.stdin.read()
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("file not found", source=str(p)) from None
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", source=str(p)) from None
    except UnicodeDecodeError:
        raise ConfigError("not a UTF-8 text file", source=str(p)) from None


def _source(path: str | Path) -> str:
    return "<stdin>" if str(path) == STDIN else str(path)


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader refusing a key given twice in one mapping: two documents pasted together without
    ``---`` would otherwise keep only the second one's ``items``, silently."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
            if isinstance(key, str | int | float | bool) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (two documents pasted together? separate them with ---)",
                    key_node.start_mark)
            if isinstance(key, str | int | float | bool):
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


_TOP_API_VERSION = re.compile(r"^apiVersion:", re.MULTILINE)


def _split_concatenated(text: str) -> str:
    """``kubectl get ... -o yaml`` output run twice into one stream has no ``---`` between the two Lists; each
    starts with a top-level ``apiVersion:``, so a second one starts a new document."""
    starts = [m.start() for m in _TOP_API_VERSION.finditer(text)]
    if len(starts) < 2 or "\n---" in text or text.startswith("---"):
        return text
    parts = [text[a:b] for a, b in zip([0, *starts[1:]], [*starts[1:], len(text)], strict=True)]
    return "\n---\n".join(parts)


def _json_values(text: str) -> list[Any]:
    """One JSON value, or several written one after another (``kubectl get -o json`` run twice)."""
    decoder = json.JSONDecoder()
    out: list[Any] = []
    at = 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            return out
        value, at = decoder.raw_decode(text, at)
        out.append(value)


def _syntax_error(exc: yaml.YAMLError | json.JSONDecodeError, path: str | Path) -> ConfigError:
    """One line naming the file, where the text stops making sense, and why."""
    if isinstance(exc, json.JSONDecodeError):
        return ConfigError(f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}", source=_source(path))
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return ConfigError(f"invalid YAML/JSON{where}: {getattr(exc, 'problem', None) or exc}", source=_source(path))


def load_document(path: str | Path) -> Any:
    """One YAML or JSON document."""
    text = _read(path)
    try:
        docs = [d for d in yaml.load_all(text, Loader=_StrictLoader) if d is not None]
    except yaml.YAMLError as exc:
        raise _syntax_error(exc, path) from None
    if len(docs) > 1:
        raise ConfigError("expected one document, found several", source=_source(path))
    return docs[0] if docs else None


def load_objects(path: str | Path) -> list[dict[str, Any]]:
    """Kubernetes objects from ``kind: List`` documents, a multi-document YAML stream (or several ``kubectl get -o
    yaml`` outputs one after another), or JSON values (lists, objects, several in a row); ``-`` reads stdin."""
    text = _read(path)
    try:
        if text.lstrip().startswith(("{", "[")):
            docs: list[Any] = _json_values(text)
        else:
            docs = [d for d in yaml.load_all(_split_concatenated(text), Loader=_StrictLoader) if d is not None]
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        raise _syntax_error(exc, path) from None
    out: list[dict[str, Any]] = []
    source = _source(path)

    def add(doc: Any, where: str) -> None:
        if isinstance(doc, list):
            for i, d in enumerate(doc):
                add(d, f"{where}[{i}]")
            return
        if not isinstance(doc, Mapping):
            raise ConfigError("expected a Kubernetes object", field=where, source=source)
        if str(doc.get("kind", "")).endswith("List") and "items" in doc:
            for i, d in enumerate(doc.get("items") or []):
                add(d, f"{where}.items[{i}]")
            return
        if not doc.get("kind"):
            raise ConfigError("missing kind", field=where, source=source)
        if not (doc.get("metadata") or {}).get("name"):
            raise ConfigError("missing metadata.name", field=where, source=source)
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


def flag(raw: Mapping[str, Any], key: str, default: bool, *, source: str = "") -> bool:
    """``raw[key]`` as a configured boolean (``default`` when absent or null); anything but true or false is a
    ConfigError naming ``key``: YAML's ``"yes"`` in quotes is a string, not a yes."""
    v = raw.get(key, default)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise ConfigError(f"must be true or false, got {v!r}", field=key, source=source)
    return v

