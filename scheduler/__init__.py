"""The session-based scheduler: cache -> session -> actions -> plugins -> binder; explain."""
