"""Pure node predicates with kube's semantics and reason strings (taints, node affinity, pod dependencies).

Per-node checks depend only on a node's taints/labels, so the vector forms evaluate each distinct taint set or
label set once and broadcast the answer to every node that shares it.
"""
