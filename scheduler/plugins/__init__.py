"""Scheduler plugins, one per module; each registers its builder with the framework."""
