"""``loadwise doctor``: check this node for the agent — procfs, the cgroup mounts, cgroup version and driver,
the paths found, API access and RBAC — and report what it saw: one line per check (ok, warn, fail, or skip with
the reason), then a summary.  Exit status 1 when any check fails, 0 otherwise (warnings are reported, not fatal).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any

from agent.config import AgentConfig
from agent.doctor import (
    API_REACHABLE,
    FAIL,
    OK,
    SKIP,
    WARN,
    ApiAccess,
    Check,
    access_review_body,
    check_api,
    check_host,
    check_rbac,
)
from common.config import ConfigError
from loadwise.output import add_output_flag

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--node", metavar="NAME", help="node name (default: config nodeName, $NODE_NAME, host name)")
    api = parser.add_mutually_exclusive_group()
    api.add_argument("--kubeconfig", metavar="F",
                     help="kubeconfig file (default: $KUBECONFIG, then the pod's service account, then ~/.kube/config)")
    api.add_argument("--no-api", action="store_true", help="check only this host, not the API server")
    parser.add_argument("--config", metavar="F", help="agent config file (its cgroup and proc settings are used)")
    add_output_flag(parser)


def _api_checks(args: argparse.Namespace, node: str, config: AgentConfig) -> list[Check]:
    if args.no_api:
        return [Check("api", SKIP, "--no-api")]
    from common.cluster.kube import credentials_source, load_cluster

    if not credentials_source(args.kubeconfig):
        return [Check("api", SKIP, "no --kubeconfig, no $KUBECONFIG, not in a pod and no ~/.kube/config")]
    # the client retries an unreachable server with a warning each time; the one failed check says it once
    logging.getLogger("urllib3").setLevel(logging.ERROR)
    try:
        cluster = load_cluster(args.kubeconfig, component="loadwise-doctor")
    except ConfigError as exc:
        return [Check("api", FAIL, str(exc)), Check("rbac", SKIP, "not reviewed: no API client (see the api check)")]
    checks = check_api(cluster, node)

    def review(access: ApiAccess) -> bool | None:
        answer: Any = cluster.request(
            "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body=access_review_body(access)
        )
        status = answer.get("status") if isinstance(answer, dict) else None
        return bool(status.get("allowed")) if isinstance(status, dict) else None

    if any(c.name == API_REACHABLE and c.verdict == FAIL for c in checks):
        return [*checks, Check("rbac", SKIP, "not reviewed: the API server is unreachable")]
    enforce = config.waterline.enabled and not config.waterline.dry_run
    return checks + check_rbac(review, enforce=enforce)


def summary(checks: list[Check]) -> str:
    """``12 ok, 4 warnings, 0 failed, 1 skipped: passed with warnings``."""
    n = {v: sum(1 for c in checks if c.verdict == v) for v in (OK, WARN, FAIL, SKIP)}
    counts = f"{n[OK]} ok, {n[WARN]} warnings, {n[FAIL]} failed, {n[SKIP]} skipped"
    verdict = "FAILED" if n[FAIL] else "passed with warnings" if n[WARN] else "all checks passed"
    return f"{counts}: {verdict}"


def run(args: argparse.Namespace) -> int:
    try:
        config = AgentConfig.load(args.config) if args.config else AgentConfig()
    except ConfigError as exc:
        print(f"loadwise doctor: error: {exc}", file=sys.stderr)
        return 2
    from loadwise.cmd_agent import resolve_node_name

    node = resolve_node_name(args.node, config)
    host, layout = check_host(config)
    checks = [Check("node", OK, node), *host, *_api_checks(args, node, config)]
    failed = any(c.verdict == FAIL for c in checks)
    if args.output == "json":
        doc = {
            "node": node,
            "cgroup": layout.describe() if layout is not None else None,
            "checks": [c.to_json() for c in checks],
            "summary": summary(checks),
            "ok": not failed,
        }
        print(json.dumps(doc, indent=2))
    else:
        width = max(len(c.name) for c in checks)
        for c in checks:
            print(f"[{c.verdict.upper():>4}] {c.name:<{width}}  {' '.join(c.detail.split())}")
        print(f"\n{summary(checks)}")
    return 1 if failed else 0
