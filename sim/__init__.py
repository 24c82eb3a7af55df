"""Trace-driven cluster simulator: drives the real agent and scheduler code on a simulated clock."""
