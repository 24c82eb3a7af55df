"""The shared model: quantities, resource vectors, object views, QoS and priority, windows, clock,
configuration loading and the cluster interface.  ``common`` imports neither ``agent`` nor
``scheduler``."""
