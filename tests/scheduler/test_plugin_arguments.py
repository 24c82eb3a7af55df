"""Each plugin module's declared ``ARGUMENTS`` are exactly the argument keys the plugin reads.

The declarations are what docs/configure.md is checked against (tests/deploy/test_docs.py), so they must not drift
from the code: every plugin is built with arguments that record each key looked up, and the recorded top-level
keys must equal the declared ones; keys read inside a declared map (``parent/child``) must be declared too.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import pytest

from scheduler.framework.plugin import Arguments, plugin_builders

PROBE = "_probe"  # a key no plugin reads, so that "empty means default" shortcuts still look at the real keys


class Recording(dict[str, Any]):
    """A dict that remembers every key looked up in it."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.seen: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        self.seen.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.seen.add(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self.seen.add(str(key))
        return super().__contains__(key)


class RecordingArguments(Arguments):
    def __init__(self, raw: dict[str, Any]) -> None:
        super().__init__()
        self._raw = self.recording = Recording(raw)


def _declared() -> Iterator[tuple[str, tuple[str, ...]]]:
    for name, builder in sorted(plugin_builders().items()):
        yield name, tuple(importlib.import_module(builder.__module__).ARGUMENTS)


@pytest.mark.parametrize("name, declared", list(_declared()), ids=lambda v: v if isinstance(v, str) else "")
def test_declared_arguments_are_what_the_plugin_reads(name: str, declared: tuple[str, ...]) -> None:
    parents = {k.split("/", 1)[0] for k in declared if "/" in k}
    nested = {p: Recording({PROBE: 0}) for p in parents}
    args = RecordingArguments({PROBE: 0, **nested})
    plugin_builders()[name](args)
    assert args.recording.seen - {PROBE} == {k.split("/", 1)[0] for k in declared}
    for parent, recording in nested.items():
        children = {k.split("/", 1)[1] for k in declared if k.startswith(parent + "/")}
        assert recording.seen - {PROBE} <= children, f"{name}: {parent} reads undeclared keys"


def test_the_check_notices_an_undeclared_read() -> None:
    def build(args: Arguments) -> None:
        args.get("declared")
        args.get("forgotten")

    args = RecordingArguments({PROBE: 0})
    build(args)
    assert args.recording.seen - {PROBE} != {"declared"}
