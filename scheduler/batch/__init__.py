"""Pure formulas behind the batch scheduling plugins (gang, drf, proportion, capacity, overcommit, sla).

Nothing here touches the session or the cluster: every function takes values and returns decisions,
so the plugins in ``scheduler.plugins`` stay thin and the arithmetic is table-testable.
"""
