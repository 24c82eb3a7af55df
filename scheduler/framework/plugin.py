"""Plugin and action registries and the lenient argument reader (docs/design/scheduler.md §1.1).

A plugin is built once per session from its conf arguments; ``on_session_open`` registers callbacks on the
session and computes per-session state; ``on_session_close`` writes back.  Built-in plugins live one per module
in ``scheduler/plugins/`` and actions in ``scheduler/actions/``; third-party ones may be registered through the
``loadwise.plugins`` / ``loadwise.actions`` entry-point groups.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator, Mapping
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, Protocol

from ..lenient import bool_arg, float_arg, int_arg

if TYPE_CHECKING:
    from .session import Session

__all__ = ["Plugin", "Action", "Arguments", "PluginBuilder", "register_plugin", "register_action", "plugin_builders",
           "actions"]


class Plugin(Protocol):
    name: str

    def on_session_open(self, ssn: Session) -> None: ...

    def on_session_close(self, ssn: Session) -> None: ...


class Action(Protocol):
    name: str

    def execute(self, ssn: Session) -> None: ...


class Arguments(Mapping[str, Any]):
    """A plugin's ``arguments`` map plus its tier ``weight``, read through the one lenient reader
    (``scheduler.lenient``): a value of the wrong type keeps the default, as in Volcano."""

    def __init__(self, raw: Mapping[str, Any] | None = None, *, weight: int | None = None) -> None:
        self._raw: dict[str, Any] = dict(raw or {})
        self.weight = weight

    def __getitem__(self, key: str) -> Any:
        return self._raw[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def get_int(self, key: str, default: int) -> int:
        return int_arg(self._raw, key, default)

    def get_float(self, key: str, default: float) -> float:
        return float_arg(self._raw, key, default)

    def get_bool(self, key: str, default: bool) -> bool:
        return bool_arg(self._raw, key, default)

    def score_weight(self, default: int = 1) -> int:
        return self.weight if self.weight is not None else default


PluginBuilder = Callable[[Arguments], Plugin]
_PLUGINS: dict[str, PluginBuilder] = {}
_ACTIONS: dict[str, Callable[[], Action]] = {}
_loaded = False


def register_plugin(name: str) -> Callable[[PluginBuilder], PluginBuilder]:
    def deco(builder: PluginBuilder) -> PluginBuilder:
        _PLUGINS[name] = builder
        return builder
    return deco


def register_action(name: str) -> Callable[[Callable[[], Action]], Callable[[], Action]]:
    def deco(factory: Callable[[], Action]) -> Callable[[], Action]:
        _ACTIONS[name] = factory
        return factory
    return deco


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for pkg_name in ("scheduler.plugins", "scheduler.actions"):
        pkg = importlib.import_module(pkg_name)
        for mod in pkgutil.iter_modules(pkg.__path__):
            importlib.import_module(f"{pkg_name}.{mod.name}")
    for ep in entry_points(group="loadwise.plugins"):
        _PLUGINS.setdefault(ep.name, ep.load())
    for ep in entry_points(group="loadwise.actions"):
        _ACTIONS.setdefault(ep.name, ep.load())


def plugin_builders() -> Mapping[str, PluginBuilder]:
    _load()
    return _PLUGINS


def actions() -> Mapping[str, Callable[[], Action]]:
    _load()
    return _ACTIONS
