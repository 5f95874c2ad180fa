"""Feature flags of SPEC.md §10, settable in configuration and per request.

Every flag has the default that SPEC.md gives; a request may override any subset through
:meth:`FeatureFlags.merged`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class FeatureFlags(BaseModel):
    """The switches of the agent pipeline (SPEC.md §10).

    Defaults follow SPEC.md §3 (self-refine, budgets), §5 (cache) and §6 (k per complexity).
    ``cache_similarity_threshold`` applies within the structured cache key (same concepts,
    question type, language, polarity, numbers: SPEC.md §11 "Response cache decision"), not to all entries as
    SPEC §5's 0.85 did, and after the content-word veto (``core.cache.content``; docs/benchmarks.md "Content and cue vetoes");
    0.85 (SPEC §5's value, now a floor within the key) was chosen on the tuning data (the team
    pairs' tuning half and the cache dev pairs): below 0.91 the vetoes alone kept every
    negative out and 13 more paraphrases hit; keys without concepts need
    ``core.cache.key.EMPTY_CONCEPT_THRESHOLD``. README "Response cache", docs/benchmarks.md.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    self_refine_enabled: bool = True
    max_refine_iterations: int = Field(2, ge=0, le=5)
    quality_threshold: float = Field(0.5, ge=0.0, le=1.0)
    llm_based_quality_check: bool = True
    dynamic_query_rewrite: bool = True
    active_retrieval_enabled: bool = True
    simple_query_k: int = Field(3, ge=1, le=50)
    moderate_query_k: int = Field(8, ge=1, le=50)
    complex_query_k: int = Field(15, ge=1, le=50)
    context_compression_enabled: bool = True
    compression_strategy: Literal["extractive", "abstractive", "hybrid"] = "extractive"
    compression_target_ratio: float = Field(0.6, gt=0.0, le=1.0)
    hierarchical_memory_enabled: bool = True
    working_memory_capacity: int = Field(5, ge=1, le=50)
    compression_threshold: int = Field(5, ge=1, le=100)
    response_cache_enabled: bool = True
    cache_similarity_threshold: float = Field(0.85, ge=0.0, le=1.0)
    cache_learned_decision: bool = True
    cache_llm_check: bool = False
    style_variation_level: float = Field(0.0, ge=0.0, le=1.0)
    include_history: bool = True
    include_profile: bool = True
    include_evidence: bool = True
    retrieval_mode: Literal["hybrid", "bm25", "dense"] = "hybrid"
    budget_aware_retrieval: bool = True
    medcat_enabled: bool = True
    memory_mode: Literal["structured", "none"] = "structured"
    query_rewrite_enabled: bool = True

    def merged(self, overrides: dict[str, Any] | None) -> "FeatureFlags":
        """Return a copy with ``overrides`` applied.

        Args:
            overrides: flag name -> value; ``None`` or ``{}`` returns ``self``.
        Returns:
            A validated :class:`FeatureFlags`.
        Raises:
            pydantic.ValidationError: an unknown flag name or a value of the wrong type.
        """
        if not overrides:
            return self
        return FeatureFlags.model_validate({**self.model_dump(), **overrides})
