"""The ten nodes of the agent graph (SPEC.md §4), one small module per concern.

Every node is ``fn(state, services) -> dict`` returning only the keys it sets.
"""
