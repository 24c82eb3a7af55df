"""The shape of the pod spec fields the scheduler reads, checked once when a pod is parsed.

The API server validates a pod against its schema, so on a real cluster these checks never fail.  Pods also
come from ``loadwise explain`` snapshots and the in-memory cluster, written by hand: there, a toleration that
is a string or a preference weight that is not a number would otherwise surface in the middle of a scheduling
session, as an exception that fails the whole session for every pod.  Checked here, such a pod is refused
when it is parsed, with the path of the offending field, and everything else keeps scheduling.

Only the shape is checked (objects, lists, strings, integers).  Values with a meaning, such as an unknown
operator or a ``maxSkew`` of 0, are the plugins' to judge: they make that one pod unschedulable, with a reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["check_pod", "check_pod_metadata", "check_pod_spec", "check_strings"]


class _Shape:
    """The checks; each first asks for the exact plain type (a ``dict``, ``list`` or ``str`` of parsed JSON), which
    is much cheaper than an ``isinstance`` check against an abstract class, and answers the same for it."""

    __slots__ = ()

    @staticmethod
    def fail(path: str, what: str, got: Any) -> ValueError:
        return ValueError(f"{path}: expected {what}, got {got!r}")

    def map(self, v: Any, path: str) -> Mapping[str, Any]:
        if type(v) is dict:
            return v
        if not isinstance(v, Mapping):
            raise self.fail(path, "an object", v)
        return v

    def maps(self, v: Any, path: str) -> list[Mapping[str, Any]]:
        """A list of objects (an absent list is empty)."""
        if v is None:
            return []
        if not isinstance(v, list):
            raise self.fail(path, "a list", v)
        for item in v:
            if type(item) is not dict:
                return [self.map(item, f"{path}[{i}]") for i, item in enumerate(v)]
        return v

    def text(self, v: Any, path: str) -> None:
        if v is not None and type(v) is not str and not isinstance(v, str):
            raise self.fail(path, "a string", v)

    def texts(self, v: Any, path: str) -> None:
        if v is None:
            return
        if not isinstance(v, list):
            raise self.fail(path, "a list of strings", v)
        for i, item in enumerate(v):
            self.text(item, f"{path}[{i}]")

    def integer(self, v: Any, path: str) -> None:
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
            raise self.fail(path, "an integer", v)

    def labels(self, v: Any, path: str) -> None:
        if v is None:
            return
        if type(v) is dict:
            for value in v.values():
                if type(value) is not str:
                    break
            else:
                return
        for k, value in self.map(v, path).items():
            self.text(value, f"{path}.{k}")

    def expressions(self, v: Any, path: str) -> None:
        for i, e in enumerate(self.maps(v, path)):
            self.text(e.get("key"), f"{path}[{i}].key")
            self.text(e.get("operator"), f"{path}[{i}].operator")
            self.texts(e.get("values"), f"{path}[{i}].values")

    def label_selector(self, v: Any, path: str) -> None:
        if v is None:
            return
        sel = self.map(v, path)
        self.labels(sel.get("matchLabels"), f"{path}.matchLabels")
        self.expressions(sel.get("matchExpressions"), f"{path}.matchExpressions")

    def node_term(self, v: Any, path: str) -> None:
        term = self.map(v, path)
        self.expressions(term.get("matchExpressions"), f"{path}.matchExpressions")
        self.expressions(term.get("matchFields"), f"{path}.matchFields")

    def pod_term(self, v: Any, path: str) -> None:
        term = self.map(v, path)
        self.label_selector(term.get("labelSelector"), f"{path}.labelSelector")
        self.label_selector(term.get("namespaceSelector"), f"{path}.namespaceSelector")
        self.texts(term.get("namespaces"), f"{path}.namespaces")
        self.text(term.get("topologyKey"), f"{path}.topologyKey")
        self.texts(term.get("matchLabelKeys"), f"{path}.matchLabelKeys")
        self.texts(term.get("mismatchLabelKeys"), f"{path}.mismatchLabelKeys")

    def weighted(self, v: Any, path: str, inner: str, check: Any) -> None:
        for i, w in enumerate(self.maps(v, path)):
            self.integer(w.get("weight"), f"{path}[{i}].weight")
            check(w.get(inner) if w.get(inner) is not None else {}, f"{path}[{i}].{inner}")

    def containers(self, v: Any, path: str) -> None:
        for i, c in enumerate(self.maps(v, path)):
            # the paths are made only for a field that is not a plain dict (most containers have no ports)
            res = c.get("resources")
            if res is not None:
                if type(res) is not dict:
                    res = self.map(res, f"{path}[{i}].resources")
                for key in ("requests", "limits"):
                    part = res.get(key)
                    if part is not None and type(part) is not dict:
                        self.map(part, f"{path}[{i}].resources.{key}")
            ports = c.get("ports")
            if ports is None:
                continue
            at = f"{path}[{i}]"
            for j, port in enumerate(self.maps(ports, f"{at}.ports")):
                self.integer(port.get("hostPort"), f"{at}.ports[{j}].hostPort")
                self.integer(port.get("containerPort"), f"{at}.ports[{j}].containerPort")
                self.text(port.get("protocol"), f"{at}.ports[{j}].protocol")
                self.text(port.get("hostIP"), f"{at}.ports[{j}].hostIP")


_SHAPE = _Shape()


def check_pod(pod: Mapping[str, Any]) -> None:
    """Raise ``ValueError("spec.<path>: expected ..., got ...")`` for the first field of the wrong shape."""
    check_pod_metadata(pod)
    check_pod_spec(pod.get("spec"))


def check_pod_metadata(pod: Mapping[str, Any]) -> None:
    """:func:`check_pod`'s checks of the metadata (the labels and annotations), which come first."""
    s = _SHAPE
    meta = pod.get("metadata")
    if meta is not None:
        meta = s.map(meta, "metadata")
        s.labels(meta.get("labels"), "metadata.labels")
        s.labels(meta.get("annotations"), "metadata.annotations")


def check_pod_spec(raw: Any) -> None:
    """:func:`check_pod`'s checks of the spec, which follow those of the metadata."""
    s = _SHAPE
    spec = s.map(raw, "spec")
    if not spec.get("containers"):
        raise ValueError("spec.containers: required: a pod has at least one container")
    s.containers(spec.get("containers"), "spec.containers")
    s.containers(spec.get("initContainers"), "spec.initContainers")
    for key in ("overhead", "resources"):
        if spec.get(key) is not None:
            s.map(spec[key], f"spec.{key}")
    s.labels(spec.get("nodeSelector"), "spec.nodeSelector")
    for i, t in enumerate(s.maps(spec.get("tolerations"), "spec.tolerations")):
        for key in ("key", "operator", "value", "effect"):
            s.text(t.get(key), f"spec.tolerations[{i}].{key}")
        s.integer(t.get("tolerationSeconds"), f"spec.tolerations[{i}].tolerationSeconds")
    for i, c in enumerate(s.maps(spec.get("topologySpreadConstraints"), "spec.topologySpreadConstraints")):
        at = f"spec.topologySpreadConstraints[{i}]"
        s.integer(c.get("maxSkew"), f"{at}.maxSkew")
        s.integer(c.get("minDomains"), f"{at}.minDomains")
        for key in ("topologyKey", "whenUnsatisfiable", "nodeAffinityPolicy", "nodeTaintsPolicy"):
            s.text(c.get(key), f"{at}.{key}")
        s.label_selector(c.get("labelSelector"), f"{at}.labelSelector")
        s.texts(c.get("matchLabelKeys"), f"{at}.matchLabelKeys")
    if spec.get("affinity") is None:
        return
    affinity = s.map(spec["affinity"], "spec.affinity")
    if affinity.get("nodeAffinity") is not None:
        at = "spec.affinity.nodeAffinity"
        na = s.map(affinity["nodeAffinity"], at)
        required = na.get("requiredDuringSchedulingIgnoredDuringExecution")
        if required is not None:
            req = s.map(required, f"{at}.requiredDuringSchedulingIgnoredDuringExecution")
            path = f"{at}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
            for i, term in enumerate(s.maps(req.get("nodeSelectorTerms"), path)):
                s.node_term(term, f"{path}[{i}]")
        s.weighted(na.get("preferredDuringSchedulingIgnoredDuringExecution"),
                   f"{at}.preferredDuringSchedulingIgnoredDuringExecution", "preference", s.node_term)
    for kind in ("podAffinity", "podAntiAffinity"):
        if affinity.get(kind) is None:
            continue
        at = f"spec.affinity.{kind}"
        pa = s.map(affinity[kind], at)
        path = f"{at}.requiredDuringSchedulingIgnoredDuringExecution"
        for i, term in enumerate(s.maps(pa.get("requiredDuringSchedulingIgnoredDuringExecution"), path)):
            s.pod_term(term, f"{path}[{i}]")
        s.weighted(pa.get("preferredDuringSchedulingIgnoredDuringExecution"),
                   f"{at}.preferredDuringSchedulingIgnoredDuringExecution", "podAffinityTerm", s.pod_term)


def check_strings(v: Any, path: str) -> None:
    """Raise ``ValueError("<path>...: expected ...")`` unless ``v`` is absent or a map of strings (labels,
    annotations)."""
    _SHAPE.labels(v, path)
