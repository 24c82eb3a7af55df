"""A small kustomize, enough to render deploy/ the way ``kustomize build`` does, in pure Python.

Supported, because deploy/ uses exactly this: ``resources`` (files and directories), ``namespace``,
``labels`` (``pairs``, without selectors), ``images`` (``newName`` / ``newTag``), and ``patches``
given by ``path``: a document is a strategic-merge patch on the object of the same kind and name,
a list is a JSON 6902 patch on its ``target``.  Anything else in a kustomization is an error, so
the renderer cannot silently ignore a field the real kustomize would honour.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

__all__ = ["build", "CLUSTER_SCOPED", "DEPLOY", "strategic_merge", "json6902"]

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"

CLUSTER_SCOPED = {
    "Namespace",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleBinding",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "PriorityClass",
    "Node",
    "NodeMetric",
    "WaterlinePolicy",
    "Queue",
}
_KNOWN_KEYS = {"apiVersion", "kind", "resources", "namespace", "labels", "images", "patches"}
# strategic-merge keys of the lists deploy/ patches (k8s.io/api patchMergeKey tags)
_MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "volumes": "name",
    "env": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
}


def _load(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]


def build(directory: str | Path) -> list[dict[str, Any]]:
    """Render the kustomization in ``directory`` into a list of objects."""
    root = Path(directory)
    kfile = root / "kustomization.yaml"
    (k,) = _load(kfile)
    unknown = set(k) - _KNOWN_KEYS
    if unknown:
        raise ValueError(f"{kfile}: unsupported kustomization fields {sorted(unknown)}")
    objects: list[dict[str, Any]] = []
    for res in k.get("resources") or []:
        p = root / res
        objects.extend(build(p) if p.is_dir() else [copy.deepcopy(o) for o in _load(p)])
    for patch in k.get("patches") or []:
        _apply_patch(objects, root / patch["path"], patch.get("target"))
    for img in k.get("images") or []:
        _set_image(objects, img)
    ns = k.get("namespace")
    for obj in objects:
        meta = obj.setdefault("metadata", {})
        if ns and obj["kind"] not in CLUSTER_SCOPED:
            meta["namespace"] = ns
        for group in k.get("labels") or []:
            if group.get("includeSelectors") or group.get("includeTemplates"):
                raise ValueError(f"{kfile}: labels with selectors/templates are not supported here")
            meta.setdefault("labels", {}).update(group["pairs"])
    seen: set[tuple[str, str, str]] = set()
    for obj in objects:
        key = (obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        if key in seen:
            raise ValueError(f"{kfile}: {key} appears twice")
        seen.add(key)
    return objects


def _find(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    hits = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    if len(hits) != 1:
        raise ValueError(f"patch target {kind}/{name}: {len(hits)} matches")
    return hits[0]


def _apply_patch(objects: list[dict[str, Any]], path: Path, target: dict[str, Any] | None) -> None:
    docs = _load(path)
    if len(docs) == 1 and isinstance(docs[0], list):
        if not target:
            raise ValueError(f"{path}: a JSON 6902 patch needs a target")
        obj = _find(objects, target["kind"], target["name"])
        patched = json6902(obj, docs[0])
        obj.clear()
        obj.update(patched)
        return
    for doc in docs:
        obj = _find(objects, doc["kind"], doc["metadata"]["name"])
        merged = strategic_merge(obj, doc)
        obj.clear()
        obj.update(merged)


def strategic_merge(base: Any, patch: Any, key: str = "") -> Any:
    """Maps merge recursively; lists with a known merge key merge by it; other lists are replaced."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = copy.deepcopy(base)
        for k, v in patch.items():
            if v is None:
                out.pop(k, None)
            else:
                out[k] = strategic_merge(base.get(k), v, k) if k in base else copy.deepcopy(v)
        return out
    if isinstance(base, list) and isinstance(patch, list) and key in _MERGE_KEYS:
        mk = _MERGE_KEYS[key]
        out_list = copy.deepcopy(base)
        for item in patch:
            match = next((i for i, b in enumerate(out_list) if b.get(mk) == item.get(mk)), None)
            if match is None:
                out_list.append(copy.deepcopy(item))
            else:
                out_list[match] = strategic_merge(out_list[match], item)
        return out_list
    return copy.deepcopy(patch)


def _pointer(path: str) -> list[str]:
    return [p.replace("~1", "/").replace("~0", "~") for p in path.lstrip("/").split("/")]


def json6902(obj: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """RFC 6902 add / replace / remove / test on a copy of ``obj``."""
    doc = copy.deepcopy(obj)
    for op in ops:
        *parents, last = _pointer(op["path"])
        node: Any = doc
        for p in parents:
            node = node[int(p)] if isinstance(node, list) else node[p]
        kind = op["op"]
        if isinstance(node, list):
            idx = len(node) if last == "-" else int(last)
            if kind == "add":
                node.insert(idx, copy.deepcopy(op["value"]))
            elif kind == "replace":
                node[idx] = copy.deepcopy(op["value"])
            elif kind == "remove":
                del node[idx]
            elif kind == "test":
                assert node[idx] == op["value"], op
            else:
                raise ValueError(f"unsupported op {kind}")
        else:
            if kind in ("add", "replace"):
                if kind == "replace" and last not in node:
                    raise KeyError(op["path"])
                node[last] = copy.deepcopy(op["value"])
            elif kind == "remove":
                del node[last]
            elif kind == "test":
                assert node[last] == op["value"], op
            else:
                raise ValueError(f"unsupported op {kind}")
    return doc


def _set_image(objects: list[dict[str, Any]], img: dict[str, Any]) -> None:
    for obj in objects:
        spec = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
        for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
            name, _, tag = c["image"].partition(":")
            if name == img["name"]:
                tag = img.get("newTag", tag)
                c["image"] = img.get("newName", name) + (f":{tag}" if tag else "")
