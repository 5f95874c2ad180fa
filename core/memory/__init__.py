"""Stage 2 of context engineering (SPEC.md §3.2): the patient profile and the memory tiers."""
