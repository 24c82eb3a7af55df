"""``loadwise doctor``: check this node for the agent — cgroup version and driver, the paths found,
procfs, API access and RBAC.  Exit status 1 when any check fails, 0 otherwise (warnings included)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from agent.config import AgentConfig
from agent.doctor import FAIL, ApiAccess, Check, access_review_body, check_api, check_host, check_rbac
from common.config import ConfigError

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--node", metavar="NAME", help="node name (default: config nodeName, $NODE_NAME, host name)")
    api = parser.add_mutually_exclusive_group()
    api.add_argument("--kubeconfig", metavar="F", help="kubeconfig file (default: $KUBECONFIG, then in-cluster)")
    api.add_argument("--no-api", action="store_true", help="check only this host, not the API server")
    parser.add_argument("--config", metavar="F", help="agent config file (its cgroup and proc settings are used)")
    parser.add_argument("-o", "--output", choices=["text", "json"], default="text")


def _api_checks(args: argparse.Namespace, node: str, config: AgentConfig) -> list[Check]:
    if args.no_api:
        return [Check("api", "skip", "--no-api")]
    kubeconfig = args.kubeconfig or os.environ.get("KUBECONFIG") or None
    if kubeconfig is None and not os.environ.get("KUBERNETES_SERVICE_HOST"):
        return [Check("api", "skip", "no --kubeconfig, no $KUBECONFIG and not running in a pod")]
    from common.cluster.kube import load_cluster

    try:
        cluster = load_cluster(kubeconfig, component="loadwise-doctor")
    except ConfigError as exc:
        return [Check("api", FAIL, str(exc))]
    checks = check_api(cluster, node)

    def review(access: ApiAccess) -> bool | None:
        answer: Any = cluster.request(
            "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body=access_review_body(access)
        )
        status = answer.get("status") if isinstance(answer, dict) else None
        return bool(status.get("allowed")) if isinstance(status, dict) else None

    if all(c.verdict == FAIL for c in checks):
        return checks  # unreachable: RBAC reviews would only repeat the failure
    enforce = config.waterline.enabled and not config.waterline.dry_run
    return checks + check_rbac(review, enforce=enforce)


def run(args: argparse.Namespace) -> int:
    try:
        config = AgentConfig.load(args.config) if args.config else AgentConfig()
    except ConfigError as exc:
        print(f"loadwise doctor: error: {exc}", file=sys.stderr)
        return 2
    from loadwise.cmd_agent import resolve_node_name

    node = resolve_node_name(args.node, config)
    host, layout = check_host(config)
    checks = [Check("node", "ok", node), *host, *_api_checks(args, node, config)]
    failed = any(c.verdict == FAIL for c in checks)
    if args.output == "json":
        doc = {
            "node": node,
            "cgroup": layout.describe() if layout is not None else None,
            "checks": [c.to_json() for c in checks],
            "ok": not failed,
        }
        print(json.dumps(doc, indent=2))
    else:
        width = max(len(c.name) for c in checks)
        for c in checks:
            print(f"[{c.verdict.upper():>4}] {c.name:<{width}}  {c.detail}")
        print("\nall checks passed" if not failed else "\nsome checks FAILED")
    return 1 if failed else 0
