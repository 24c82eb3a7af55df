"""Load-aware rebalancing: move pods off nodes that stay hot, only where the scheduler proves a cooler place.

Koordinator's LowNodeLoad semantics (``args``, ``classify``, ``anomaly``, ``rank``), a destination proof by the
scheduler's own session (``destination``), one pure round (``plan``) and the adapters that evict and report
(``daemon``).  It imports ``common`` and ``scheduler``; only the simulator and the command line import it.
How and why: docs/design/rebalance.md.
"""
