"""What a check returns: one verdict per claim and the answer-level summary."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class SentenceVerdict:
    """One claim's verdict.

    Attributes:
        index: the claim's position among the answer's claims.
        sentence: the sentence as written (citations kept).
        cited: citation numbers.
        p: calibrated P(the cited evidence supports the sentence), in [0, 1].
        supported: ``p`` at or above the floor.
        reasons: what the offline features found wrong (empty when nothing).
        missing_evidence: the failure is that no evidence document covers the claim's drug,
            condition or number at all (a re-retrieval may find it), not a contradiction.
        llm: the endpoint's own P(true) when the endpoint judged it, else ``None``.
    """

    index: int
    sentence: str
    cited: tuple[int, ...]
    p: float
    supported: bool
    reasons: list[str] = field(default_factory=list)
    missing_evidence: bool = False
    llm: float | None = None

    def brief(self) -> dict[str, Any]:
        """Rounded dict for the trace (the sentence cut to 120 characters)."""
        out = {"i": self.index, "sentence": self.sentence[:120], "cited": list(self.cited),
               "p": round(self.p, 4), "supported": self.supported}
        if self.reasons:
            out["reasons"] = self.reasons
        if self.missing_evidence:
            out["missing_evidence"] = True
        if self.llm is not None:
            out["llm"] = round(self.llm, 4)
        return out


@dataclass
class Verification:
    """The check of one answer.

    Attributes:
        backend: ``offline`` or ``endpoint`` (``offline`` also when the endpoint failed and the
            offline checker stood in: ``note`` says so).
        floor: the support floor used.
        verdicts: one per claim.
        calls: LLM calls made (0 or 1).
        usage: the call's token counts (prompt, cached, completion) when one was made.
        note: what went wrong, if anything.
    """

    backend: str
    floor: float
    verdicts: list[SentenceVerdict] = field(default_factory=list)
    calls: int = 0
    usage: dict[str, Any] = field(default_factory=dict)
    note: str = ""

    @property
    def failed(self) -> list[SentenceVerdict]:
        """The claims below the floor."""
        return [v for v in self.verdicts if not v.supported]

    @property
    def supported_share(self) -> float:
        """Share of claims at or above the floor (1.0 for an answer with no claim)."""
        return 1.0 - len(self.failed) / len(self.verdicts) if self.verdicts else 1.0

    @property
    def mean_p(self) -> float | None:
        """Mean P(supported) over the claims (``None`` with no claim)."""
        return sum(v.p for v in self.verdicts) / len(self.verdicts) if self.verdicts else None

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for the state and trace."""
        mean = self.mean_p
        return {"backend": self.backend, "floor": self.floor, "claims": len(self.verdicts),
                "failed": len(self.failed), "supported_share": round(self.supported_share, 4),
                "mean_p": None if mean is None else round(mean, 4), "calls": self.calls,
                "usage": self.usage, "note": self.note, "verdicts": [v.brief() for v in self.verdicts]}
