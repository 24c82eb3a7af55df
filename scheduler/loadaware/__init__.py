"""Load-aware scheduling core (Koordinator LoadAwareScheduling, specs/koordinator.md §1): args, estimator,
assigned-pod cache, per-node threshold profiles and the vectorised filter/score."""
