"""Trace-driven cluster simulator: drives the real agent and scheduler code on a simulated clock.

``loadwise sim`` answers "how many hot nodes, evictions and pods does load-aware scheduling (plus waterlines)
change against request-based scheduling, on a workload like mine?" without a cluster.  Nothing here decides
placement, eviction or throttling; the simulator only supplies what a real cluster would: nodes, pods arriving
and finishing, a kubelet starting them, true usage, and time.

Modules, in the order data flows:

* ``model`` — the workload as data (nodes, pods with arrival/duration/requests, usage profiles, gangs);
* ``synthetic`` / ``traces`` / ``replay`` — workloads from the seeded generator or from public trace files;
* ``usage`` — every pod's true CPU and memory at a tick, vectorised and policy-independent;
* ``objects`` — the Kubernetes dicts put into ``common.cluster.memory.MemoryCluster``;
* ``agents`` / ``samples`` — the node agents: every node's and pod's samples in one table, and each node's
  NodeMetric report (the agent's own status) on its interval;
* ``waterline`` — per node, the agent's ``WaterlineRuntime`` with a simulated cgroup quota writer;
* ``run`` — one policy's run on a ``FakeClock`` with ``scheduler.engine.Scheduler``; ``record`` its output;
* ``policies`` / ``confs/`` — the compared confs; ``compare`` — several policies side by side;
* ``measures`` — the defined measures; ``html`` — the self-contained report.
"""
