"""Load-aware scheduling core (Koordinator LoadAwareScheduling, docs/design/loadaware.md): args, estimator,
assigned-pod cache, per-node threshold profiles and the vectorised filter/score."""
