"""Hybrid retrieval (SPEC.md §7): BM25 over Korean morphemes and English tokens, dense vectors
in FAISS, fused by Reciprocal Rank Fusion."""
