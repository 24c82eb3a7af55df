"""``loadwise``: one console script, one subcommand per role.

Each subcommand lives in its own module exposing ``add_arguments(parser)`` and ``run(args) -> int``;
this file only wires them, so a subcommand's imports cost nothing until it runs.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from prometheus_client import disable_created_metrics

from loadwise import __version__
from loadwise.logs import add_logging_flags, setup_logging

# name -> (module, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "agent": ("loadwise.cmd_agent", "Run the node agent: collect usage, report NodeMetric, serve metrics, waterline"),
    "doctor": ("loadwise.cmd_doctor", "Check this node for the agent: cgroup version/driver, paths, API access, RBAC"),
    "explain": ("loadwise.cmd_explain", "Run one scheduling session on a snapshot and explain every decision"),
    "scheduler": ("loadwise.cmd_scheduler", "Run the scheduler daemon (Volcano-style sessions, leader election)"),
    "rebalancer": ("loadwise.cmd_rebalancer", "Run the rebalancer: move pods off nodes that stay hot, where the scheduler "
                                              "proves a cooler node"),
    "rebalance-plan": ("loadwise.cmd_rebalance_plan", "Plan one rebalancing round on a snapshot offline, with the numbers"),
    "qos-plan": ("loadwise.cmd_qos_plan", "Replay a WaterlinePolicy against a node state offline and print the decisions"),
    "sim": ("loadwise.cmd_sim", "Simulate a cluster on a synthetic or trace workload and compare scheduler confs"),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with ``command`` (a subcommand's name) only that subcommand's module is imported and
    its options known, so one command does not pay for importing every other's dependencies."""
    parser = argparse.ArgumentParser(
        prog="loadwise",
        description="Load-aware scheduling and node QoS for Kubernetes.",
    )
    parser.add_argument("--version", action="version", version=f"loadwise {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if command is not None and name != command:
            continue
        mod = importlib.import_module(module)
        mod.add_arguments(p)
        add_logging_flags(p)
        p.set_defaults(_module=module)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(words[0] if words and words[0] in SUBCOMMANDS else None)
    args = parser.parse_args(words)
    if not getattr(args, "command", None):
        parser.print_usage(sys.stderr)
        print(f"{parser.prog}: error: a command is required ({', '.join(SUBCOMMANDS)}); --help describes them",
              file=sys.stderr)
        return 2
    setup_logging(args.log_level, args.log_format)
    disable_created_metrics()  # type: ignore[no-untyped-call]  # each counter's _created twin is noise on a dashboard and doubles the series
    mod = importlib.import_module(args._module)
    try:
        return int(mod.run(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # the reader went away (``| head``): stop quietly, and keep Python from complaining again at exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
