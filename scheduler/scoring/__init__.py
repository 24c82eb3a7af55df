"""Pure, vectorised node-scoring and fit formulas (kube-scheduler semantics), shared by the scheduler plugins."""
