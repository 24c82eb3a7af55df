"""Scheduler configuration in Volcano's format (docs/design/scheduler.md §1).

``parse_conf`` validates everything up front — action names, plugin names, flag types, and each plugin's
arguments by building the plugin once — so that a bad file is rejected with a message naming the key while the
previous conf keeps running (:class:`ConfHolder`).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from common.config import ConfigError, load_document

if TYPE_CHECKING:
    from scheduler.framework.plugin import PluginBuilder

__all__ = ["PluginOption", "Tier", "SchedulerConf", "parse_conf", "load_conf", "DEFAULT_CONF_YAML", "default_conf",
           "ConfHolder", "FLAG_KEYS"]

log = logging.getLogger(__name__)

FLAG_KEYS = (
    "enableJobOrder", "enableTaskOrder", "enableQueueOrder", "enabledClusterOrder", "enableJobReady",
    "enableJobPipelined", "enableJobStarving", "enableJobEnqueued", "enablePredicate", "enableBestNode",
    "enableNodeOrder", "enablePreemptable", "enableReclaimable", "enablePreemptive", "enabledOverused",
    "enabledAllocatable", "enableTargetJob", "enableReservedNodes", "enabledVictim",
)
_OTHER_KEYS = {"name", "arguments", "weight", "enableHierarchy"}

DEFAULT_CONF_YAML = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: loadaware
"""


@dataclass(frozen=True, slots=True)
class PluginOption:
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    weight: int | None = None
    flags: Mapping[str, bool | None] = field(default_factory=dict)
    hierarchy: bool = False

    def enabled(self, flag: str) -> bool:
        """``None`` (absent in a programmatic conf) means disabled, as in Volcano (docs/design/scheduler.md §1.2)."""
        return bool(self.flags.get(flag))


@dataclass(frozen=True, slots=True)
class Tier:
    plugins: tuple[PluginOption, ...]


@dataclass(frozen=True, slots=True)
class SchedulerConf:
    actions: tuple[str, ...]
    tiers: tuple[Tier, ...]
    configurations: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    source: str = "<default>"
    warnings: tuple[str, ...] = ()

    def action_arguments(self, action: str) -> Mapping[str, Any]:
        return self.configurations.get(action, {})

    def plugin(self, name: str) -> PluginOption | None:
        for tier in self.tiers:
            for p in tier.plugins:
                if p.name == name:
                    return p
        return None


def _fail(message: str, key: str, source: str) -> ConfigError:
    return ConfigError(message, field=key, source=source)


def _plugin(raw: Any, where: str, source: str, *, from_file: bool) -> PluginOption:
    if isinstance(raw, str):
        raw = {"name": raw}
    if not isinstance(raw, Mapping):
        raise _fail("must be a mapping with a name", where, source)
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise _fail("plugin name is required", f"{where}.name", source)
    args = raw.get("arguments") or {}
    if not isinstance(args, Mapping):
        raise _fail("arguments must be a mapping", f"{where}.arguments", source)
    weight = raw.get("weight")
    if weight is not None and (not isinstance(weight, int) or isinstance(weight, bool) or weight < 0):
        raise _fail(f"weight must be a non-negative integer, got {weight!r}", f"{where}.weight", source)
    flags: dict[str, bool | None] = {}
    for key in FLAG_KEYS:
        v = raw.get(key)
        if v is not None and not isinstance(v, bool):
            raise _fail(f"must be true or false, got {v!r}", f"{where}.{key}", source)
        flags[key] = True if (v is None and from_file) else v
    unknown = sorted(set(raw) - set(FLAG_KEYS) - _OTHER_KEYS)
    if unknown:
        raise _fail(f"unknown key(s) {', '.join(unknown)}", f"{where}.{unknown[0]}", source)
    hierarchy = raw.get("enableHierarchy", False)
    if not isinstance(hierarchy, bool):
        raise _fail(f"must be true or false, got {hierarchy!r}", f"{where}.enableHierarchy", source)
    return PluginOption(name=name.strip(), arguments=dict(args), weight=weight, flags=flags, hierarchy=hierarchy)


def parse_conf(doc: Any, *, source: str = "<conf>", from_file: bool = True, validate_plugins: bool = True
               ) -> SchedulerConf:
    """Validate and build a conf from its parsed YAML document."""
    if not isinstance(doc, Mapping):
        raise _fail("the scheduler conf must be a mapping", "", source)
    unknown_top = sorted(set(doc) - {"actions", "tiers", "configurations", "metrics"})
    if unknown_top:
        raise _fail(f"unknown key {unknown_top[0]!r}", unknown_top[0], source)
    names = _action_names(doc.get("actions", ""), source)
    tiers, warnings = _tiers(doc.get("tiers") or [], source, from_file=from_file, validate_plugins=validate_plugins)
    configurations = _configurations(doc.get("configurations") or [], source)
    for w in warnings:
        log.warning("%s: %s", source, w)
    return SchedulerConf(tuple(names), tuple(tiers), configurations, source, tuple(warnings))


def _action_names(raw_actions: Any, source: str) -> list[str]:
    """The ``actions`` entry (a comma-separated string or a list) as names, each one a registered action."""
    from scheduler.framework.plugin import actions

    if isinstance(raw_actions, str):
        names = [a.strip() for a in raw_actions.split(",") if a.strip()]
    elif isinstance(raw_actions, Sequence):
        names = [str(a).strip() for a in raw_actions]
    else:
        raise _fail("must be a comma-separated string", "actions", source)
    known_actions = actions()
    for a in names:
        if a not in known_actions:
            raise _fail(f"unknown action {a!r} (known: {', '.join(sorted(known_actions))})", "actions", source)
    return names


def _tiers(raw_tiers: Any, source: str, *, from_file: bool, validate_plugins: bool) -> tuple[list[Tier], list[str]]:
    """The ``tiers`` entry as tiers, with a warning for each unknown plugin (skipped, as Volcano does); with
    ``validate_plugins`` each known plugin is built once so that bad arguments are refused here."""
    from scheduler.framework.plugin import plugin_builders

    if not isinstance(raw_tiers, Sequence) or isinstance(raw_tiers, str):
        raise _fail("must be a list of tiers", "tiers", source)
    tiers: list[Tier] = []
    warnings: list[str] = []
    builders = plugin_builders()
    for i, raw_tier in enumerate(raw_tiers):
        if not isinstance(raw_tier, Mapping) or not isinstance(raw_tier.get("plugins") or [], Sequence):
            raise _fail("a tier must be a mapping with a plugins list", f"tiers[{i}]", source)
        plugins = []
        for j, raw_plugin in enumerate(raw_tier.get("plugins") or []):
            where = f"tiers[{i}].plugins[{j}]"
            opt = _plugin(raw_plugin, where, source, from_file=from_file)
            builder = builders.get(opt.name)
            if builder is None:
                warnings.append(f"{where}: unknown plugin {opt.name!r} is skipped")
            elif validate_plugins:
                _check_arguments(builder, opt, where, source)
            plugins.append(opt)
        tiers.append(Tier(tuple(plugins)))
    for tier in tiers:
        names_in_tier = {p.name for p in tier.plugins}
        if "proportion" in names_in_tier and any(p.name == "drf" and p.hierarchy for p in tier.plugins):
            raise _fail("drf with enableHierarchy cannot be combined with proportion", "tiers", source)
    return tiers, warnings


def _check_arguments(builder: PluginBuilder, opt: PluginOption, where: str, source: str) -> None:
    """Builds the plugin once from ``opt``; an error it raises on its arguments becomes a ConfigError naming them."""
    from scheduler.framework.plugin import Arguments

    try:
        builder(Arguments(opt.arguments, weight=opt.weight))
    except (ValueError, TypeError, KeyError, ArithmeticError) as exc:
        raise _fail(str(exc), f"{where}.arguments", source) from exc


def _configurations(raw_confs: Any, source: str) -> dict[str, dict[str, Any]]:
    """The ``configurations`` entry: each action's arguments by action name."""
    if not isinstance(raw_confs, Sequence) or isinstance(raw_confs, str):
        raise _fail("must be a list of {name, arguments}", "configurations", source)
    configurations: dict[str, dict[str, Any]] = {}
    for k, entry in enumerate(raw_confs):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            raise _fail("each entry needs a name", f"configurations[{k}]", source)
        args = entry.get("arguments") or {}
        if not isinstance(args, Mapping):
            raise _fail("arguments must be a mapping", f"configurations[{k}].arguments", source)
        configurations[entry["name"]] = dict(args)
    return configurations


def load_conf(path: str | os.PathLike[str]) -> SchedulerConf:
    p = Path(path)
    # unreadable, not UTF-8 or not YAML: a ConfigError naming the file (and the line), as for every other file
    return parse_conf(load_document(p), source=str(p))


def default_conf() -> SchedulerConf:
    return parse_conf(yaml.safe_load(DEFAULT_CONF_YAML), source="<default>")


class ConfHolder:
    """The active conf with hot reload: a file that fails validation is reported and the last good conf stays."""

    def __init__(self, path: str | None = None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._mtime: float | None = None
        self.last_error: str = ""
        self.rejected = 0  # changed files (or a file turned unreadable) rejected so far; each kept the last good conf
        self._conf = load_conf(path) if path else default_conf()
        if path:
            self._mtime = os.stat(path).st_mtime

    @property
    def conf(self) -> SchedulerConf:
        with self._lock:
            return self._conf

    def maybe_reload(self) -> bool:
        """Re-read the file if it changed; returns True when a new conf became active."""
        if not self.path:
            return False
        try:
            mtime = os.stat(self.path).st_mtime
        except OSError as exc:
            error = f"{self.path}: {exc.strerror}; keeping the previous conf"
            if error != self.last_error:  # reported once, not on every check while it lasts
                self.rejected += 1
                log.error("%s", error)
            self.last_error = error
            return False
        if mtime == self._mtime:
            return False
        self._mtime = mtime
        try:
            new = load_conf(self.path)
        except ConfigError as exc:
            self.last_error = f"{exc}; keeping the previous conf"
            self.rejected += 1
            log.error("%s", self.last_error)
            return False
        with self._lock:
            self._conf = new
        self.last_error = ""
        return True
