"""Loadwise: the command line and the simulator, which tie the agent and the scheduler together."""

__version__ = "0.1.0"
