"""Config hot reload: a changed config file is validated, its live keys applied, and a bad one refused.

The agent's config file is usually a mounted ConfigMap, which the kubelet updates by swapping the ``..data``
symlink to a new directory; the file's path then resolves to a new inode.  :class:`FileVersion` therefore
compares what ``stat`` says of the resolved file (inode, size, modification and change times) on every poll,
a system call, and reads the file only when that differs.  :class:`ConfigReloader` then validates it with the
same schema check as at start and:

* refuses an invalid file: the last good config keeps running, one error line names the file and the field,
  ``loadwise_agent_config_reloads_total{result="rejected"}`` counts it and (with a cluster) a Warning Event
  on the Node says so; the same bad content is reported once, however many polls see it;
* applies the keys in :data:`LIVE_KEYS` to the running components (``result="applied"``);
* leaves the keys in :data:`RESTART_KEYS` as they were and says which wait for a restart
  (``result="needs_restart"``).  They pick the process's sockets, the files it reads and the node it is; a
  waterline engine the agent started without, with its policy watch and series, also waits for a restart.

The WaterlinePolicy file the config names (``waterline.policyFile``) is watched the same way: a changed one
replaces the running policies when every object in it is valid, and is refused as a whole otherwise.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from agent.config import AgentConfig, WaterlineConfig
from agent.daemon import Agent
from common.cluster import ApiError, EventRecord
from common.config import ConfigError, load_objects
from common.waterline import WaterlinePolicy

__all__ = ["LIVE_KEYS", "RESTART_KEYS", "POLL_SECONDS", "Reload", "FileVersion", "PolicyFile", "ConfigReloader",
           "changed_keys"]

log = logging.getLogger(__name__)

POLL_SECONDS = 10.0

LIVE_KEYS = frozenset({
    "collectIntervalSeconds", "collectContainers", "pressure", "podMetrics", "reportRetryInitialSeconds",
    "reportRetryMaxSeconds", "reportJitterFraction", "metricCollectPolicy", "waterline.intervalSeconds",
    "waterline.policyFile", "waterline.dryRun", "waterline.enabled",
})
RESTART_KEYS = frozenset({
    "nodeName", "procRoot", "cgroupRoot", "cgroupParent", "cgroupVersion", "cgroupDriver", "listenAddress", "port",
    "debugAddress", "debugPort",
})
_NOT_KEYS = {"source"}
POLICY_FILE_KEY = "waterline.policyFile"


@dataclass(frozen=True, slots=True)
class Reload:
    """What one changed file did: ``result`` is ``applied``, ``needs_restart`` or ``rejected``."""

    result: str
    applied: tuple[str, ...] = ()
    restart: tuple[str, ...] = ()
    error: str = ""
    field: str = ""


def _key(name: str) -> str:
    """The config key of a dataclass field: ``collect_interval_seconds`` -> ``collectIntervalSeconds``."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def changed_keys(old: AgentConfig, new: AgentConfig) -> Iterator[str]:
    """The config keys whose values differ, ``waterline.*`` one by one."""
    for f in fields(AgentConfig):
        if f.name in _NOT_KEYS or getattr(old, f.name) == getattr(new, f.name):
            continue
        if f.name == "waterline":
            yield from (f"waterline.{_key(w.name)}" for w in fields(WaterlineConfig)
                        if getattr(old.waterline, w.name) != getattr(new.waterline, w.name))
        else:
            yield _key(f.name)


def _needs_restart(key: str, old: AgentConfig, new: AgentConfig, *, engine: bool) -> bool:
    """Whether a changed key waits for a restart.  Two live keys do in some cases: ``waterline.policyFile`` is
    live from one file to another, not to or from watching the API; ``waterline.enabled`` is live when the agent
    started with the engine (``engine``), and switching on an engine it started without is a restart."""
    if key == POLICY_FILE_KEY:
        return "" in (old.waterline.policy_file, new.waterline.policy_file)
    if key == "waterline.enabled":
        return not engine
    return key in RESTART_KEYS


def _keep(old: AgentConfig, new: AgentConfig, keys: set[str]) -> AgentConfig:
    """``new`` with the values of ``keys`` (restart keys) taken from ``old``."""
    top = {f.name: getattr(old, f.name) for f in fields(AgentConfig) if _key(f.name) in keys}
    nested = {w.name: getattr(old.waterline, w.name) for w in fields(WaterlineConfig)
              if f"waterline.{_key(w.name)}" in keys}
    return replace(new, **top, waterline=replace(new.waterline, **nested))


class FileVersion:
    """Tells whether a file changed since the last look, from ``stat`` of the path it resolves to."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._seen: tuple[int, ...] | None = None

    def _stamp(self) -> tuple[int, ...]:
        try:
            st = os.stat(self.path)  # follows the ..data symlink to the file kubelet wrote
        except OSError:
            return ()
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def changed(self) -> bool:
        stamp = self._stamp()
        if stamp == self._seen:
            return False
        self._seen = stamp
        return True

    def digest(self) -> str:
        """The content's hash (``""`` when unreadable): a rewrite with the same content changes nothing."""
        try:
            return hashlib.sha256(Path(self.path).read_bytes()).hexdigest()
        except OSError:
            return ""


@dataclass(frozen=True, slots=True)
class _PolicySet:
    objects: list[dict[str, Any]]
    digest: str


class PolicyFile:
    """The WaterlinePolicy file the config names (``waterline.policyFile``): its version, and the content in force.

    A changed file is read again; its policies replace the running ones only when every object in it is valid.
    """

    def __init__(self, path: str) -> None:
        self.version: FileVersion | None = None
        self.in_force = ""
        self.follow(path)
        self.in_force = self.digest()  # the agent loaded it when it started

    @property
    def path(self) -> str:
        return self.version.path if self.version is not None else ""

    def follow(self, path: str) -> None:
        """Watch ``path`` from now on (a config naming another file); what runs stays as it is."""
        if path != self.path:
            self.version = FileVersion(path) if path else None
            self.changed()

    def changed(self) -> bool:
        return self.version is not None and self.version.changed()

    def digest(self) -> str:
        return self.version.digest() if self.version is not None else ""

    def pending(self) -> _PolicySet | None:
        """The file's policies when its content is not what runs, each checked against the CRD first."""
        digest = self.digest()
        if self.version is None or digest == self.in_force:
            return None
        return _PolicySet(_checked_policies(self.path), digest)


class ConfigReloader:
    """Checks the agent's config file (and the policy file it names) once per :meth:`check`; applies or refuses.

    ``overrides`` re-applies the command line's settings (``--port``) to every file read, as at start;
    ``reschedule(job, seconds)`` moves the daemon's ``collect`` or ``waterline`` job to a new interval.
    """

    def __init__(self, agent: Agent, path: str | Path, *,
                 overrides: Callable[[AgentConfig], AgentConfig] = lambda c: c,
                 reschedule: Callable[[str, float], None] = lambda job, seconds: None) -> None:
        self.agent = agent
        self.file = FileVersion(path)
        self.policy_file = PolicyFile(self._policy_path(agent.config))
        self._overrides = overrides
        self._reschedule = reschedule
        self._digest: str | None = None
        self._rejected = False

    def check(self) -> Reload | None:
        """One poll: ``None`` when neither file (nor its content) changed, or the change changes nothing."""
        config_changed = self.file.changed()
        if not (self.policy_file.changed() or config_changed):
            return None
        digest = self._content_digest()
        if digest == self._digest:
            return None
        self._digest = digest
        try:
            new = self._overrides(AgentConfig.load(self.file.path))
            old = self.agent.config
            keys = set(changed_keys(old, new))
            restart = {k for k in keys if _needs_restart(k, old, new, engine=self.agent.runtime is not None)}
            merged = _keep(old, new, restart)
            self._follow(merged)
            policies = self.policy_file.pending()
        except ConfigError as exc:
            return self._reject(exc)
        live = keys - restart | ({POLICY_FILE_KEY} if policies is not None else set())
        return self._apply(merged, live, restart, policies)

    def _policy_path(self, config: AgentConfig) -> str:
        return config.waterline.policy_file if self.agent.runtime is not None else ""

    def _content_digest(self) -> str:
        return f"{self.file.digest()}:{self.policy_file.digest()}"

    def _follow(self, config: AgentConfig) -> None:
        """Watch the policy file ``config`` names: fixing a new file it names is then noticed, too."""
        self.policy_file.follow(self._policy_path(config))
        self._digest = self._content_digest()

    # -- outcomes -------------------------------------------------------------------------------------
    def _reject(self, exc: ConfigError) -> Reload:
        self._rejected = True
        log.error("config %s rejected, the last good config keeps running: %s", self.file.path, _what(exc))
        self.agent.metrics.config_reloads["rejected"].inc()
        self._event(f"config {self.file.path} rejected: {_what(exc)}; the last good config keeps running")
        return Reload("rejected", error=str(exc), field=exc.field)

    def _apply(self, config: AgentConfig, live: set[str], restart: set[str],
               policies: _PolicySet | None) -> Reload | None:
        was_rejected, self._rejected = self._rejected, False
        if not live and not restart:
            if was_rejected:
                log.info("config %s is valid again and the same as the config in force", self.file.path)
            return None
        old = self.agent.config
        self.agent.apply_config(config)
        if policies is not None and self.agent.runtime is not None:
            self.agent.runtime.policies.replace_all(policies.objects)
            self.policy_file.in_force = policies.digest
        self._reschedule_jobs(old, config)
        applied = tuple(sorted(live))
        if restart:
            log.warning("config %s: %s take effect when the agent restarts (kubectl rollout restart); applied live: %s",
                        self.file.path, ", ".join(sorted(restart)), ", ".join(applied) or "nothing")
            self.agent.metrics.config_reloads["needs_restart"].inc()
            return Reload("needs_restart", applied, tuple(sorted(restart)))
        log.info("config %s reloaded; applied %s", self.file.path, ", ".join(applied))
        self.agent.metrics.config_reloads["applied"].inc()
        return Reload("applied", applied)

    def _reschedule_jobs(self, old: AgentConfig, new: AgentConfig) -> None:
        if new.collect_interval_seconds != old.collect_interval_seconds:
            self._reschedule("collect", new.collect_interval_seconds)
        if self.agent.runtime is not None and new.waterline.interval_seconds != old.waterline.interval_seconds:
            self._reschedule("waterline", new.waterline.interval_seconds)

    def _event(self, message: str) -> None:
        """A Warning Event on this node, where the agent has a cluster to send it to."""
        cluster = self.agent.cluster
        if cluster is None:
            return
        try:
            cluster.emit_event(EventRecord(kind="Node", name=self.agent.node_name, namespace="default",
                                           reason="AgentConfigRejected", message=message, type="Warning",
                                           component="loadwise-agent", action="Reload"))
        except ApiError as exc:
            log.warning("cannot emit the config rejection event: %s", exc)


def _checked_policies(path: str) -> list[dict[str, Any]]:
    """Every object of a WaterlinePolicy file, each checked against the CRD; an error names the file, the
    policy and the field."""
    try:
        objs = load_objects(path)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc.message}", field=POLICY_FILE_KEY) from None
    for obj in objs:
        try:
            WaterlinePolicy.parse(obj)
        except ConfigError as exc:
            raise ConfigError(f"{path}: WaterlinePolicy {_name(obj)}: {_what(exc)}", field=POLICY_FILE_KEY) from None
    return objs


def _what(exc: ConfigError) -> str:
    """The error without its file: ``field: message``."""
    return f"{exc.field}: {exc.message}" if exc.field else exc.message


def _name(obj: Any) -> str:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    return str(meta.get("name", "<unnamed>")) if isinstance(meta, dict) else "<unnamed>"
