"""The semantic response cache (SPEC.md §5)."""
