"""The compared configurations: built-in scheduler confs shipped in ``sim/confs/`` and users' own files.

A policy is a scheduler conf (Volcano format, ``scheduler.conf.load_conf``) plus, optionally, a file of
WaterlinePolicy objects that every simulated node agent runs.  Built in (files in ``confs/``):

* ``kube-default`` — ``kube-default.yaml``: kube-scheduler's default profile (its scoring plugins and weights,
  within what Loadwise implements), the baseline;
* ``loadaware`` — ``loadaware.yaml``: the same plugins plus Koordinator-style load-aware filter/score on
  NodeMetrics;
* ``loadaware-waterline`` — ``loadaware-waterline.yaml`` (same scheduler, ``respectWaterlines: false``) with the
  agents running ``waterline.yaml``;
* ``loadaware-waterline-capped`` — as above with ``respectWaterlines: true``: nodes are also closed to new pods
  above their waterlines, which trades waiting pods for fewer hot nodes;
* ``loadaware-waterline-strict`` — as ``loadaware-waterline`` without starvation relief (``relaxAfterSeconds``);
* ``requests`` — ``requests.yaml``: NodeResourcesFit LeastAllocated alone (the weaker baseline of earlier
  releases); ``binpack`` — ``binpack.yaml``: kube-default with MostAllocated, packing by requests;
* ``loadaware-rebalance`` — ``loadaware-waterline`` plus the rebalancer with the arguments of ``rebalance.yaml``
  (``sim.rebalance``): pods move off nodes that stay hot, to nodes the scheduler proves cooler.

The node agents (usage history, NodeMetric reports, waterlines) run for a policy whose scheduler reads usage
(the built-in ``loadaware`` and ``usage`` plugins, or any plugin Loadwise does not ship, which might) or that has
waterlines; the request-based baseline runs without them, as a cluster without Loadwise does.  The default
comparison is ``kube-default``, ``loadaware`` and ``loadaware-waterline``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from common.config import ConfigError, load_objects
from sim.run import Policy

if TYPE_CHECKING:
    from scheduler.conf import SchedulerConf

__all__ = ["CONF_DIR", "BUILTIN", "REBALANCE", "DEFAULT_COMPARE", "BASELINE", "USAGE_PLUGINS", "reads_usage",
           "parse_assignments", "load_policies"]

CONF_DIR = Path(__file__).resolve().parent / "confs"
# name -> (scheduler conf, waterline policies or None)
BUILTIN: dict[str, tuple[Path, Path | None]] = {
    "kube-default": (CONF_DIR / "kube-default.yaml", None),
    "loadaware": (CONF_DIR / "loadaware.yaml", None),
    "loadaware-waterline": (CONF_DIR / "loadaware-waterline.yaml", CONF_DIR / "waterline.yaml"),
    "loadaware-waterline-capped": (CONF_DIR / "loadaware-waterline-capped.yaml", CONF_DIR / "waterline.yaml"),
    "loadaware-waterline-strict": (CONF_DIR / "loadaware-waterline-strict.yaml", CONF_DIR / "waterline.yaml"),
    "requests": (CONF_DIR / "requests.yaml", None),
    "binpack": (CONF_DIR / "binpack.yaml", None),
    "loadaware-rebalance": (CONF_DIR / "loadaware-waterline.yaml", CONF_DIR / "waterline.yaml"),
}
# name -> rebalancer arguments, for the built-in policies that run the rebalancer
REBALANCE: dict[str, Path] = {"loadaware-rebalance": CONF_DIR / "rebalance.yaml"}
DEFAULT_COMPARE = ("kube-default", "loadaware", "loadaware-waterline")
BASELINE = "kube-default"
# The built-in scheduler plugins that read NodeMetrics (the session snapshot's node_metrics).
USAGE_PLUGINS = frozenset({"loadaware", "usage"})


def reads_usage(conf: SchedulerConf) -> bool:
    """Whether a scheduler with ``conf`` reads NodeMetrics: a usage plugin, or a plugin not shipped with Loadwise."""
    from scheduler.framework.plugin import plugin_builders

    builders = plugin_builders()
    for tier in conf.tiers:
        for p in tier.plugins:
            builder = builders.get(p.name)
            if p.name in USAGE_PLUGINS or builder is None or not builder.__module__.startswith("scheduler.plugins."):
                return True
    return False


def parse_assignments(values: Sequence[str], flag: str) -> dict[str, Path]:
    """``NAME=PATH`` pairs of a repeated flag."""
    out: dict[str, Path] = {}
    for v in values:
        name, sep, path = v.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise ConfigError(f"expected NAME=PATH, got {v!r}", field=flag)
        out[name.strip()] = Path(path.strip())
    return out


def _waterline_objects(path: Path) -> tuple[dict[str, object], ...]:
    objs = load_objects(path)
    bad = [o for o in objs if o.get("kind") != "WaterlinePolicy"]
    if bad:
        raise ConfigError(f"expected only WaterlinePolicy objects, found kind {bad[0].get('kind')!r}", source=str(path))
    if not objs:
        raise ConfigError("no WaterlinePolicy in the file", source=str(path))
    return tuple(objs)


def _rebalance_args(name: str) -> object:
    """The built-in rebalancer arguments of policy ``name``, or ``None`` when it runs no rebalancer."""
    path = REBALANCE.get(name)
    if path is None:
        return None
    from rebalancer.args import load_rebalance_args

    return load_rebalance_args(str(path))


def load_policies(
    names: Sequence[str],
    *,
    confs: Mapping[str, Path] | None = None,
    waterlines: Mapping[str, Path] | None = None,
) -> list[Policy]:
    """Policies for ``names`` in order: user files (``--conf``/``--waterline``) override the built-ins."""
    from scheduler.conf import load_conf

    confs = dict(confs or {})
    waterlines = dict(waterlines or {})
    for name in waterlines:
        if name not in names:
            raise ConfigError(f"--waterline names {name!r}, which is not compared (--compare)")
    out: list[Policy] = []
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ConfigError(f"{name!r} is listed twice", field="--compare")
        seen.add(name)
        conf_path = confs.get(name)
        if conf_path is None and name not in BUILTIN:
            raise ConfigError(
                f"unknown policy {name!r}: built-in ones are {', '.join(BUILTIN)}; give others with --conf NAME=PATH",
                field="--compare",
            )
        # A file given for a built-in name replaces that part only: --conf keeps the built-in waterlines.
        builtin_conf, builtin_wl = BUILTIN.get(name, (None, None))
        conf_path = conf_path or builtin_conf
        assert conf_path is not None
        wl_path = waterlines.get(name) or builtin_wl
        conf = load_conf(conf_path)
        objs = _waterline_objects(wl_path) if wl_path is not None else ()
        out.append(Policy(name, conf, str(conf_path), objs, str(wl_path) if wl_path else "",
                          node_agents=bool(objs) or reads_usage(conf) or name in REBALANCE,
                          rebalance=_rebalance_args(name)))
    return out
