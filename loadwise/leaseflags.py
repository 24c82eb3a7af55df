"""The leader-election flags the daemons share (a ``coordination.k8s.io`` Lease each, client-go's timings)."""

from __future__ import annotations

import argparse
import os
import socket

from loadwise.argtypes import positive_float
from scheduler.leader import LeaseConfig

__all__ = ["add_lease_arguments", "lease_config"]


def add_lease_arguments(parser: argparse.ArgumentParser, *, name: str, holder_does: str, title: str) -> None:
    """``--leader-elect``, ``--lease-*``, ``--identity`` and the timings; ``name`` is the Lease's default name and
    ``holder_does`` what only the holder does ("schedules")."""
    lease = parser.add_argument_group(title)
    lease.add_argument("--leader-elect", action=argparse.BooleanOptionalAction, default=True,
                       help=f"only the holder of the Lease {holder_does}, so replicas can run for availability "
                            "(default on; --no-leader-elect for a single replica)")
    lease.add_argument("--lease-name", default=name, metavar="NAME", help="the Lease's name (default %(default)s)")
    lease.add_argument("--lease-namespace", default=os.environ.get("POD_NAMESPACE", "loadwise-system"),
                       metavar="NAMESPACE", help="the Lease's namespace (default: $POD_NAMESPACE, else loadwise-system)")
    lease.add_argument("--identity", default=os.environ.get("POD_NAME") or socket.gethostname(), metavar="ID",
                       help="this replica's holder identity (default: $POD_NAME, else the host name)")
    lease.add_argument("--lease-duration", type=positive_float, default=15.0, metavar="SECONDS",
                       help="how long followers wait after the last renewal before taking over (default %(default)s)")
    lease.add_argument("--renew-deadline", type=positive_float, default=10.0, metavar="SECONDS",
                       help=f"how long the leader keeps trying to renew before it stops: it no longer {holder_does} "
                            "(default %(default)s)")
    lease.add_argument("--retry-period", type=positive_float, default=2.0, metavar="SECONDS",
                       help="time between attempts to acquire or renew (default %(default)s)")


def lease_config(args: argparse.Namespace) -> LeaseConfig:
    """The flags as a LeaseConfig (a ValueError names what is inconsistent)."""
    return LeaseConfig(name=args.lease_name, namespace=args.lease_namespace, identity=args.identity,
                       lease_duration=args.lease_duration, renew_deadline=args.renew_deadline,
                       retry_period=args.retry_period)
