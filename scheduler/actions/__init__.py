"""Session actions, one per module (specs/volcano.md §3); each registers itself."""
