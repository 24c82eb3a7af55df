"""deploy/ renders, validates for Kubernetes 1.30+ and agrees with the code that reads and writes the objects.

Built-in kinds are validated with kubernetes-validate (strict: unknown fields fail) against 1.30 and the
newest bundled release.  Custom resources are validated against our own CRD schemas, closed: a field the
code writes that the schema does not declare would be pruned silently by the API server, so it fails here.
The admission policy's CEL is evaluated for real (cel-python) on the requests it must allow and refuse.
"""

from __future__ import annotations

import copy
import logging
from functools import cache
from typing import Any

import celpy
import jsonschema
import kubernetes_validate
import pytest
import yaml

from agent.config import AgentConfig
from common.cluster.memory import MemoryCluster
from common.crdschema import closed
from common.kinds import KINDS
from common.objects import PodGroupView, QueueView
from common.waterline import KNOWN_METRICS, WaterlinePolicy
from loadwise.cli import build_parser
from scheduler.conf import parse_conf
from scheduler.framework.snapshot import DEFAULT_SCHEDULER_NAME
from tests.deploy.kustomize import DEPLOY, build

VERSIONS = ("1.30.0", kubernetes_validate.latest_version())
KUSTOMIZATIONS = ("overlays/observe", "overlays/enforce", "monitoring", "examples", "crds")
OUR_GROUPS = {k.group for k in KINDS.values() if k.group.endswith("loadwise.io")}


@cache
def rendered(path: str) -> tuple[dict[str, Any], ...]:
    return tuple(build(DEPLOY / path))


def by_kind(objects: tuple[dict[str, Any], ...], kind: str, name: str | None = None) -> dict[str, Any]:
    (hit,) = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    return hit


@cache
def crds() -> dict[str, dict[str, Any]]:
    return {o["spec"]["names"]["kind"]: o for o in rendered("crds")}


def schema_of(kind: str) -> dict[str, Any]:
    (version,) = crds()[kind]["spec"]["versions"]
    return dict(version["schema"]["openAPIV3Schema"])


def validate_cr(obj: dict[str, Any]) -> None:
    kind = obj["kind"]
    info = KINDS[kind]
    assert obj["apiVersion"] == info.api_version
    jsonschema.validate(obj, closed(schema_of(kind)))


# -- rendering and validation -----------------------------------------------------------------------
@pytest.mark.parametrize("path", KUSTOMIZATIONS)
@pytest.mark.parametrize("version", VERSIONS)
def test_renders_and_validates(path: str, version: str) -> None:
    objects = rendered(path)
    assert objects
    for obj in objects:
        group = obj["apiVersion"].rpartition("/")[0]
        if group in OUR_GROUPS:
            validate_cr(obj)
        elif group == "monitoring.coreos.com":
            check_monitor(obj)
        else:
            kubernetes_validate.validate(obj, version, strict=True)


def test_strict_validation_catches_a_typo() -> None:
    ds = copy.deepcopy(by_kind(rendered("overlays/enforce"), "DaemonSet"))
    ds["spec"]["template"]["spec"]["containers"][0]["livenesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(ds, "1.30.0", strict=True)


def check_monitor(obj: dict[str, Any]) -> None:
    """No schema is bundled for the Prometheus Operator; check what it needs to find our pods."""
    spec = obj["spec"]
    labels = spec["selector"]["matchLabels"]
    base = rendered("overlays/observe")
    if obj["kind"] == "PodMonitor":
        endpoints = spec["podMetricsEndpoints"]
        pods = [o["spec"]["template"] for o in base if o["kind"] in ("DaemonSet", "Deployment")]
        targets = [p for p in pods if labels.items() <= p["metadata"]["labels"].items()]
        ports = {p["name"] for t in targets for c in t["spec"]["containers"] for p in c.get("ports", [])}
    else:
        assert obj["kind"] == "ServiceMonitor"
        endpoints = spec["endpoints"]
        targets = [o for o in base if o["kind"] == "Service" and labels.items() <= o["metadata"]["labels"].items()]
        ports = {p["name"] for t in targets for p in t["spec"]["ports"]}
    assert targets, f"{obj['kind']} {obj['metadata']['name']} selects nothing"
    assert {e["port"] for e in endpoints} <= ports
    assert all(e.get("path", "/metrics") == "/metrics" for e in endpoints)
    # the agent's namespace/pod labels name the measured pod: kept, not renamed exported_*
    assert all(e.get("honorLabels") is True for e in endpoints)
    # kube-prometheus-stack selects monitors by its release label (docs/install.md "Prometheus")
    assert obj["metadata"]["labels"].get("release") == "kube-prometheus-stack"


# -- CRDs -----------------------------------------------------------------------------------------------
def structural(schema: dict[str, Any], where: str) -> None:
    assert (
        "type" in schema
        or schema.get("x-kubernetes-int-or-string")
        or schema.get("x-kubernetes-preserve-unknown-fields")
    ), f"{where}: no type"
    assert not ("properties" in schema and "additionalProperties" in schema), f"{where}: both property kinds"
    for name, sub in (schema.get("properties") or {}).items():
        structural(sub, f"{where}.{name}")
    if isinstance(schema.get("additionalProperties"), dict):
        structural(schema["additionalProperties"], f"{where}.*")
    if "items" in schema:
        structural(schema["items"], f"{where}[]")
        for key in schema.get("x-kubernetes-list-map-keys") or []:
            assert key in schema["items"].get("required", []), f"{where}: list-map key {key} must be required"
    if "default" in schema:
        jsonschema.validate(schema["default"], closed(schema))
    for key in schema.get("required") or []:
        assert key in schema.get("properties", {}), f"{where}: required {key} is not a property"


@pytest.mark.parametrize("kind", ["NodeMetric", "WaterlinePolicy", "PodGroup", "Queue"])
def test_crd_matches_the_kind_registry(kind: str) -> None:
    crd = crds()[kind]
    info = KINDS[kind]
    spec = crd["spec"]
    assert crd["metadata"]["name"] == f"{info.plural}.{info.group}"
    assert (spec["group"], spec["names"]["plural"]) == (info.group, info.plural)
    assert spec["scope"] == ("Namespaced" if info.namespaced else "Cluster")
    (version,) = spec["versions"]
    assert version["name"] == info.version == "v1alpha1" and version["served"] and version["storage"]
    assert version["subresources"] == {"status": {}}
    structural(version["schema"]["openAPIV3Schema"], kind)
    for col in version["additionalPrinterColumns"]:  # every printer column points at a declared field
        node: dict[str, Any] = version["schema"]["openAPIV3Schema"]
        for part in col["jsonPath"].split("[")[0].strip(".").split("."):
            if part == "metadata":
                break
            if "properties" in node:
                node = node["properties"][part]
            elif "items" in node:
                node = node["items"]["properties"][part]
            else:
                node = node["additionalProperties"]  # a map key, e.g. resources.cpu


def test_waterline_metric_names_are_the_agents() -> None:
    rule = schema_of("WaterlinePolicy")["properties"]["spec"]["properties"]["objectiveEnsurances"]["items"]
    assert set(rule["properties"]["metricRule"]["properties"]["name"]["enum"]) == set(KNOWN_METRICS)


@pytest.mark.parametrize(
    ("kind", "path", "value"),
    [
        ("WaterlinePolicy", ("spec", "objectiveEnsurances", 0, "avoidanceThreshold"), 0),
        ("WaterlinePolicy", ("spec", "objectiveEnsurances", 0, "strategy"), "Sometimes"),
        ("WaterlinePolicy", ("spec", "objectiveEnsurances", 0, "metricRule", "name"), "cpu_temperature"),
        ("WaterlinePolicy", ("spec", "executeExcess"), "120%"),
        ("WaterlinePolicy", ("spec", "objectiveEnsurances"), []),
        ("WaterlinePolicy", ("spec", "podQOS", 0, "scopeSelector", "matchExpressions", 0, "operator"), "Exists"),
        ("Queue", ("spec", "weight"), 0),
        ("Queue", ("spec", "guarantee", "resource", "cpu"), "four"),
        ("PodGroup", ("spec", "minMember"), -1),
        ("PodGroup", ("spec", "typo"), 1),
    ],
)
def test_schemas_reject_what_the_specs_reject(kind: str, path: tuple[Any, ...], value: Any) -> None:
    obj = copy.deepcopy(next(o for o in rendered("examples") if o["kind"] == kind))
    validate_cr(obj)
    node: Any = obj
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value
    with pytest.raises(jsonschema.ValidationError):
        validate_cr(obj)


def test_examples_parse_with_the_code_that_reads_them() -> None:
    examples = rendered("examples")
    policy = WaterlinePolicy.parse(by_kind(examples, "WaterlinePolicy"))
    assert [r.name for r in policy.rules] == ["cpu-usage", "memory-utilization"]
    queues = {o["metadata"]["name"]: QueueView.parse(o) for o in examples if o["kind"] == "Queue"}
    assert queues["prod"].weight == 2 and not queues["prod"].reclaimable
    group = PodGroupView.parse(by_kind(examples, "PodGroup"))
    assert (group.min_member, group.queue) == (4, "research") and group.queue in queues


@pytest.mark.slow
def test_objects_the_code_writes_fit_the_schemas() -> None:
    """A short simulation writes NodeMetrics, PodGroup and Queue status; the agent's policy store writes
    WaterlinePolicy conditions.  Every field must be declared, or the API server would drop it."""
    from agent.qos.policy import PolicyStore
    from sim.policies import load_policies
    from sim.run import SimOptions, Simulation
    from sim.synthetic import SyntheticConfig, generate

    logging.disable(logging.WARNING)
    try:
        (policy,) = load_policies(["loadaware-waterline"])
        for seed in range(1, 9):  # the synthetic workload is random: take the first seed that makes a gang
            sim = Simulation(
                generate(SyntheticConfig(nodes=4, hours=1.0, seed=seed)), policy, SimOptions(hours=1.0, tick_seconds=60)
            )
            sim.run()
            if any(o.get("status") for o in sim.cluster.list("PodGroup").items):
                break
        written: dict[str, list[dict[str, Any]]] = {
            k: sim.cluster.list(k).items for k in ("NodeMetric", "PodGroup", "Queue", "WaterlinePolicy")
        }
        cluster = MemoryCluster()
        bad = copy.deepcopy(by_kind(rendered("examples"), "WaterlinePolicy"))
        bad["metadata"]["name"] = "bad"
        # valid for the CRD, refused by the agent: two rules share an action name with different bodies
        bad["spec"]["objectiveEnsurances"][1]["action"]["name"] = "throttle"
        validate_cr(bad)
        for obj in (by_kind(rendered("examples"), "WaterlinePolicy"), bad):
            cluster.create("WaterlinePolicy", obj)
        store = PolicyStore(cluster)
        store.watch(cluster)
        store.stop()
        written["WaterlinePolicy"] += cluster.list("WaterlinePolicy").items
    finally:
        logging.disable(logging.NOTSET)
    statuses = {k: [o for o in v if o.get("status")] for k, v in written.items()}
    assert all(statuses.values()), {k: len(v) for k, v in statuses.items()}
    conditions = [c for o in written["WaterlinePolicy"] for c in (o.get("status") or {}).get("conditions", [])]
    assert {c["status"] for c in conditions} == {"True", "False"}
    for objects in written.values():
        for obj in objects:
            obj = {k: v for k, v in obj.items()}
            obj["metadata"] = {"name": obj["metadata"]["name"]}
            validate_cr(obj)


# -- components -------------------------------------------------------------------------------------
def agent_pod(overlay: str) -> dict[str, Any]:
    return by_kind(rendered(overlay), "DaemonSet", "loadwise-agent")["spec"]["template"]


def agent_config(overlay: str) -> dict[str, Any]:
    doc = yaml.safe_load(by_kind(rendered(overlay), "ConfigMap", "loadwise-agent-config")["data"]["config.yaml"])
    AgentConfig.from_mapping(doc, source=overlay)  # the agent's own parser accepts it
    return dict(doc)


@pytest.mark.parametrize("overlay", ["observe", "enforce"])
def test_agent_daemonset(overlay: str) -> None:
    tpl = agent_pod(f"overlays/{overlay}")
    spec = tpl["spec"]
    (c,) = spec["containers"]
    assert spec["tolerations"] == [{"operator": "Exists"}]
    assert spec["priorityClassName"] == "system-node-critical"
    assert not spec.get("hostPID") and not spec.get("hostNetwork")
    env = {e["name"]: e for e in c["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz" and c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    cfg = agent_config(f"overlays/{overlay}")
    (port,) = c["ports"]
    args = build_parser().parse_args(c["args"])  # the real command line accepts the manifest's arguments
    assert args.config == "/etc/loadwise/config.yaml" and not args.standalone and args.port is None
    assert port["containerPort"] == cfg["port"] == int(tpl["metadata"]["annotations"]["prometheus.io/port"])
    sc = c["securityContext"]
    assert sc["capabilities"] == {"drop": ["ALL"]} and sc["allowPrivilegeEscalation"] is False
    assert sc["readOnlyRootFilesystem"] is True and not sc.get("privileged")
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    assert mounts["host-proc"]["readOnly"] is True and cfg["procRoot"] == mounts["host-proc"]["mountPath"]
    assert cfg["cgroupRoot"] == mounts["host-cgroup"]["mountPath"]
    assert mounts["host-cgroup"]["readOnly"] is (overlay == "observe")  # cgroup writable only in enforce
    assert cfg["waterline"]["dryRun"] is (overlay == "observe")
    req, lim = c["resources"]["requests"], c["resources"]["limits"]
    assert (req["cpu"], req["memory"], lim["cpu"], lim["memory"]) == ("25m", "96Mi", "200m", "192Mi")


def test_overlays_differ_only_where_intended() -> None:
    observe, enforce = agent_config("overlays/observe"), agent_config("overlays/enforce")
    observe["waterline"].pop("dryRun")
    enforce["waterline"].pop("dryRun")
    assert observe == enforce
    a, b = agent_pod("overlays/observe"), agent_pod("overlays/enforce")
    for m in a["spec"]["containers"][0]["volumeMounts"] + b["spec"]["containers"][0]["volumeMounts"]:
        m.pop("readOnly", None)
    assert a == b
    extra = {(o["kind"], o["metadata"]["name"]) for o in rendered("overlays/enforce")} - {
        (o["kind"], o["metadata"]["name"]) for o in rendered("overlays/observe")
    }
    assert extra == {("ClusterRole", "loadwise-agent-enforce"), ("ClusterRoleBinding", "loadwise-agent-enforce")}


def test_scheduler_deployment() -> None:
    objects = rendered("overlays/observe")
    dep = by_kind(objects, "Deployment", "loadwise-scheduler")
    tpl = dep["spec"]["template"]
    (c,) = tpl["spec"]["containers"]
    assert dep["spec"]["replicas"] == 2
    assert tpl["spec"]["priorityClassName"] == "system-cluster-critical"
    assert tpl["spec"]["securityContext"]["runAsNonRoot"] is True
    env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in c["env"]}
    assert env == {"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace"}
    conf_path = c["args"][c["args"].index("--config") + 1]
    (mount,) = [m for m in c["volumeMounts"] if conf_path.startswith(m["mountPath"] + "/")]
    assert "subPath" not in mount  # a ConfigMap mounted as a directory follows edits (hot reload)
    cm = by_kind(objects, "ConfigMap", "loadwise-scheduler-config")
    conf = parse_conf(yaml.safe_load(cm["data"][conf_path.rsplit("/", 1)[1]]), source="scheduler-config")
    assert "loadaware" in {p.name for t in conf.tiers for p in t.plugins} and not conf.warnings
    assert DEFAULT_SCHEDULER_NAME == "loadwise-scheduler"  # what workloads put in spec.schedulerName
    (port,) = c["ports"]
    args = build_parser().parse_args(c["args"])  # the real command line accepts the manifest's arguments
    assert args.port == port["containerPort"] and args.config == conf_path and args.leader_elect
    assert (args.lease_name, args.scheduler_name) == ("loadwise-scheduler", DEFAULT_SCHEDULER_NAME)
    svc = by_kind(objects, "Service", "loadwise-scheduler-metrics")
    assert svc["spec"]["ports"][0]["targetPort"] == port["name"]
    assert int(tpl["metadata"]["annotations"]["prometheus.io/port"]) == port["containerPort"]
    pdb = by_kind(objects, "PodDisruptionBudget")
    assert pdb["spec"]["selector"]["matchLabels"].items() <= tpl["metadata"]["labels"].items()


# -- the node-scoped write guard --------------------------------------------------------------------
AGENT_USER = "system:serviceaccount:loadwise-system:loadwise-agent"


def admit(user: str, extra: dict[str, list[str]], resource: str, name: str) -> tuple[bool, str]:
    """Evaluate the ValidatingAdmissionPolicy's CEL as the API server would: (allowed, message)."""
    objects = rendered("overlays/enforce")
    policy = by_kind(objects, "ValidatingAdmissionPolicy")
    binding = by_kind(objects, "ValidatingAdmissionPolicyBinding")
    assert binding["spec"]["policyName"] == policy["metadata"]["name"] and binding["spec"]["validationActions"] == [
        "Deny"
    ]
    spec = policy["spec"]
    group = "slo.loadwise.io" if resource.startswith("nodemetrics") else ""
    rules = spec["matchConstraints"]["resourceRules"]
    if not any(group in r["apiGroups"] and resource in r["resources"] for r in rules):
        return True, "not matched"
    env = celpy.Environment()
    request = {"userInfo": {"username": user, "extra": extra}, "name": name}
    act: dict[str, Any] = {
        "request": celpy.json_to_cel(request),
        "object": celpy.json_to_cel({"metadata": {"name": name}}),
    }

    def run(expr: str) -> Any:
        return env.program(env.compile(expr)).evaluate(act)

    if not all(run(m["expression"]) for m in spec["matchConditions"]):
        return True, "not the agent"
    act["variables"] = celpy.json_to_cel({v["name"]: str(run(v["expression"])) for v in spec["variables"]})
    for v in spec["validations"]:
        if not run(v["expression"]):
            return False, str(run(v["messageExpression"])) if "messageExpression" in v else v["message"]
    return True, ""


NODE_CLAIM = "authentication.kubernetes.io/node-name"


@pytest.mark.parametrize("resource", ["nodemetrics", "nodemetrics/status", "nodes", "nodes/status"])
def test_agent_writes_only_its_own_nodes_objects(resource: str) -> None:
    assert admit(AGENT_USER, {NODE_CLAIM: ["n1"]}, resource, "n1") == (True, "")
    allowed, message = admit(AGENT_USER, {NODE_CLAIM: ["n1"]}, resource, "n2")
    assert not allowed and "node n1" in message and "n2" in message
    allowed, message = admit(AGENT_USER, {}, resource, "n1")  # a token without the node claim
    assert not allowed and "no node claim" in message
    assert admit("system:serviceaccount:loadwise-system:loadwise-scheduler", {}, resource, "n2")[0]
    assert admit("kubernetes-admin", {}, resource, "n2")[0]


def test_guard_does_not_touch_other_resources() -> None:
    assert admit(AGENT_USER, {NODE_CLAIM: ["n1"]}, "waterlinepolicies/status", "colocation") == (True, "not matched")
