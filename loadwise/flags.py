"""Flags several subcommands share, spelt and explained once: the Lease for leader election, the kubeconfig,
the scheduler name."""

from __future__ import annotations

import argparse
import os
import socket
from typing import Any

from loadwise.argtypes import positive_float
from scheduler.framework.snapshot import DEFAULT_SCHEDULER_NAME
from scheduler.leader import LeaseConfig

__all__ = ["add_lease_flags", "lease_config", "add_kubeconfig_flag", "add_scheduler_name_flag"]

KUBECONFIG_HELP = "kubeconfig file (default: $KUBECONFIG, then the pod's service account, then ~/.kube/config)"


def add_kubeconfig_flag(parser: Any) -> None:
    """``--kubeconfig`` on a parser or a (mutually exclusive) group."""
    parser.add_argument("--kubeconfig", metavar="F", help=KUBECONFIG_HELP)


def add_scheduler_name_flag(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--scheduler-name", default=DEFAULT_SCHEDULER_NAME, metavar="NAME",
                        help=f"{what} the pods whose spec.schedulerName is NAME (default %(default)s)")


def add_lease_flags(parser: argparse.ArgumentParser, lease_name: str) -> None:
    lease = parser.add_argument_group("leader election (a coordination.k8s.io Lease, as kube-scheduler)")
    lease.add_argument("--leader-elect", action=argparse.BooleanOptionalAction, default=True,
                       help="only the holder of the Lease works, so replicas can run for availability "
                            "(default on; --no-leader-elect for a single replica)")
    lease.add_argument("--lease-name", default=lease_name, metavar="NAME", help="the Lease's name (default %(default)s)")
    lease.add_argument("--lease-namespace", default=os.environ.get("POD_NAMESPACE", "loadwise-system"),
                       metavar="NAMESPACE", help="the Lease's namespace (default: $POD_NAMESPACE, else loadwise-system)")
    lease.add_argument("--identity", default=os.environ.get("POD_NAME") or socket.gethostname(), metavar="ID",
                       help="this replica's holder identity (default: $POD_NAME, else the host name)")
    lease.add_argument("--lease-duration", type=positive_float, default=15.0, metavar="SECONDS",
                       help="how long followers wait after the last renewal before taking over (default %(default)s)")
    lease.add_argument("--renew-deadline", type=positive_float, default=10.0, metavar="SECONDS",
                       help="how long the leader keeps trying to renew before it stops working (default %(default)s)")
    lease.add_argument("--retry-period", type=positive_float, default=2.0, metavar="SECONDS",
                       help="time between attempts to acquire or renew (default %(default)s)")


def lease_config(args: argparse.Namespace) -> LeaseConfig:
    return LeaseConfig(name=args.lease_name, namespace=args.lease_namespace, identity=args.identity,
                       lease_duration=args.lease_duration, renew_deadline=args.renew_deadline,
                       retry_period=args.retry_period)
