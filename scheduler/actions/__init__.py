"""Session actions, one per module (docs/design/scheduler.md §3); each registers itself."""
