"""Which Kubernetes API calls each component's code makes, found by reading the code (``ast``).

Every call of a :class:`common.cluster.Cluster` method on an object whose name says ``cluster``
(``self.cluster.bind(...)``, ``cluster.informer(...)``) becomes the RBAC permissions it needs: the
kind argument is resolved to string constants through literals, module constants (also imported
ones), ``for kind in KINDS`` loops and one level of helper functions whose parameter carries the
kind (``self._patch_status("Pod", ...)``).  A kind that cannot be resolved is reported, never
guessed, so a test can fail on it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from common.kinds import kind_info

__all__ = ["Permission", "ApiCall", "scan", "COMPONENT_SOURCES", "METHOD_VERBS", "GRANTED_TO_EVERYONE"]

ROOT = Path(__file__).resolve().parents[2]

# which code runs under which service account; doctor runs inside the agent pod (kubectl exec)
COMPONENT_SOURCES: dict[str, tuple[str, ...]] = {
    "agent": ("agent", "loadwise/cmd_agent.py", "loadwise/cmd_doctor.py"),
    "scheduler": ("scheduler", "loadwise/cmd_scheduler.py"),
    # the rebalancer reads through the scheduler's informer cache and holds a Lease with the scheduler's elector
    "rebalancer": ("rebalancer", "loadwise/cmd_rebalancer.py", "scheduler/cache.py", "scheduler/leader.py"),
}

# method -> (subresource, verbs); kind-less methods carry their own resource below
METHOD_VERBS: dict[str, tuple[str, tuple[str, ...]]] = {
    "list": ("", ("list",)),
    "watch": ("", ("watch",)),
    "informer": ("", ("list", "watch")),
    "get": ("", ("get",)),
    "create": ("", ("create",)),
    "replace": ("", ("update",)),
    "patch": ("", ("patch",)),
    "patch_status": ("status", ("patch",)),
    "patch_conditions": ("status", ("patch",)),  # plus a get of a custom resource (see ApiCall.permissions)
    "delete": ("", ("delete",)),
}
KINDLESS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "bind": (("", "pods/binding", "create"),),
    "evict": (("", "pods/eviction", "create"),),
    # KubeCluster.emit_event creates an events.k8s.io Event and patches its series on repeats
    "emit_event": (("events.k8s.io", "events", "create"), ("events.k8s.io", "events", "patch")),
}


_HTTP_VERBS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


@dataclass(frozen=True, slots=True, order=True)
class Permission:
    group: str
    resource: str  # plural, or plural/subresource
    verb: str


@dataclass(frozen=True, slots=True)
class ApiCall:
    where: str  # path:line
    method: str
    kinds: tuple[str, ...]  # empty for kind-less methods
    unresolved: str = ""  # why the kind could not be resolved

    def permissions(self) -> set[Permission]:
        if self.method == "request":  # a raw call: kinds holds (HTTP method, path)
            return {_raw_permission(*self.kinds)}
        if self.method in KINDLESS:
            return {Permission(*p) for p in KINDLESS[self.method]}
        sub, verbs = METHOD_VERBS[self.method]
        out = set()
        for kind in self.kinds:
            info = kind_info(kind)
            resource = f"{info.plural}/{sub}" if sub else info.plural
            out.update(Permission(info.group, resource, v) for v in verbs)
            if self.method == "patch_conditions" and info.group:
                # no strategic merge patch for a custom resource: the object is read and merged first
                out.add(Permission(info.group, info.plural, "get"))
        return out


# the system:basic-user ClusterRole grants these to every authenticated user; no Role needs them
GRANTED_TO_EVERYONE = {Permission("authorization.k8s.io", "selfsubjectaccessreviews", "create")}


def _raw_permission(method: str, path: str) -> Permission:
    parts = path.strip("/").split("/")
    group, rest = ("", parts[2:]) if parts[0] == "api" else (parts[1], parts[3:])
    if rest and rest[0] == "namespaces" and len(rest) > 2:
        rest = rest[2:]
    resource = rest[0] + (f"/{rest[2]}" if len(rest) > 2 else "")
    verb = _HTTP_VERBS[method.upper()]
    if verb == "get" and len(rest) == 1:
        verb = "list"
    return Permission(group, resource, verb)


def _files(component: str) -> list[Path]:
    out: list[Path] = []
    for src in COMPONENT_SOURCES[component]:
        p = ROOT / src
        if p.is_dir():
            out.extend(sorted(p.rglob("*.py")))
        elif p.exists():
            out.append(p)
    return out


def _module_path(module: str) -> Path | None:
    base = ROOT.joinpath(*module.split("."))
    for cand in (base.with_suffix(".py"), base / "__init__.py"):
        if cand.exists():
            return cand
    return None


class _Module:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        self.parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
        self.assigns: dict[str, ast.expr] = {}
        self.imports: dict[str, tuple[str, str]] = {}
        for stmt in self.tree.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                self.assigns[stmt.targets[0].id] = stmt.value
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
                self.assigns[stmt.target.id] = stmt.value
            elif isinstance(stmt, ast.ImportFrom) and stmt.module:
                module = stmt.module
                if stmt.level:
                    pkg = path.parent.relative_to(ROOT).parts[
                        : len(path.parent.relative_to(ROOT).parts) - stmt.level + 1
                    ]
                    module = ".".join([*pkg, stmt.module])
                for alias in stmt.names:
                    self.imports[alias.asname or alias.name] = (module, alias.name)

    def enclosing(self, node: ast.AST, kind: type) -> list[ast.AST]:
        out = []
        cur = self.parents.get(node)
        while cur is not None:
            if isinstance(cur, kind):
                out.append(cur)
            cur = self.parents.get(cur)
        return out


_MODULES: dict[Path, _Module] = {}


def _module(path: Path) -> _Module:
    if path not in _MODULES:
        _MODULES[path] = _Module(path)
    return _MODULES[path]


def _strings(mod: _Module, expr: ast.expr, at: ast.AST, depth: int = 0) -> set[str] | None:
    """The string constants ``expr`` can take at ``at``, or None when that cannot be known statically."""
    if depth > 6:
        return None
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return {expr.value}
    if isinstance(expr, ast.Tuple | ast.List | ast.Set):
        out: set[str] = set()
        for e in expr.elts:
            got = _strings(mod, e, at, depth + 1)
            if got is None:
                return None
            out |= got
        return out
    if not isinstance(expr, ast.Name):
        return None
    name = expr.id
    for loop in mod.enclosing(at, ast.For):
        assert isinstance(loop, ast.For)
        if isinstance(loop.target, ast.Name) and loop.target.id == name:
            return _strings(mod, loop.iter, loop, depth + 1)
    for fn in mod.enclosing(at, ast.FunctionDef):
        assert isinstance(fn, ast.FunctionDef)
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        if name in params + [a.arg for a in fn.args.kwonlyargs]:
            return _from_callers(mod, fn, name, depth + 1)
    if name in mod.assigns:
        return _strings(mod, mod.assigns[name], mod.assigns[name], depth + 1)
    if name in mod.imports:
        module, attr = mod.imports[name]
        path = _module_path(module)
        if path is not None:
            other = _module(path)
            if attr in other.assigns:
                return _strings(other, other.assigns[attr], other.assigns[attr], depth + 1)
    return None


def _from_callers(mod: _Module, fn: ast.FunctionDef, param: str, depth: int) -> set[str] | None:
    positional = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    is_method = bool(positional) and positional[0] in ("self", "cls")
    index = positional.index(param) - (1 if is_method else 0) if param in positional else None
    out: set[str] = set()
    found = False
    for node in ast.walk(mod.tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        called = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
        if called != fn.name:
            continue
        arg: ast.expr | None = None
        for kw in node.keywords:
            if kw.arg == param:
                arg = kw.value
        if arg is None and index is not None and index < len(node.args):
            arg = node.args[index]
        if arg is None:
            return None
        got = _strings(mod, arg, node, depth)
        if got is None:
            return None
        out |= got
        found = True
    return out if found else None


def _is_cluster(expr: ast.expr) -> bool:
    name = expr.attr if isinstance(expr, ast.Attribute) else expr.id if isinstance(expr, ast.Name) else ""
    return "cluster" in name.lower()


def scan(component: str) -> list[ApiCall]:
    calls: list[ApiCall] = []
    for path in _files(component):
        mod = _module(path)
        for node in ast.walk(mod.tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            method = node.func.attr
            known = method in METHOD_VERBS or method in KINDLESS or method == "request"
            if not known or not _is_cluster(node.func.value):
                continue
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            if method == "request":
                verb = _strings(mod, node.args[0], node) if node.args else None
                target = _strings(mod, node.args[1], node) if len(node.args) > 1 else None
                if verb and target and len(verb) == 1 and len(target) == 1:
                    calls.append(ApiCall(where, method, (*verb, *target)))
                else:
                    calls.append(ApiCall(where, method, (), unresolved=ast.unparse(node)))
                continue
            if method in KINDLESS:
                calls.append(ApiCall(where, method, ()))
                continue
            arg = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "kind"), None)
            kinds = _strings(mod, arg, node) if arg is not None else None
            if kinds is None:
                calls.append(ApiCall(where, method, (), unresolved=ast.unparse(arg) if arg is not None else "<none>"))
            else:
                calls.append(ApiCall(where, method, tuple(sorted(kinds))))
    return calls
