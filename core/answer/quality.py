"""Answer quality for self-refine (SPEC.md §3.4, refined by §11 "Verification").

Checker (what the agent uses): ``overall = 0.3·length + 0.4·grounding + 0.3·personalization``,
the heuristic's formula below with its citation term replaced by ``grounding``, the share of
the answer's claims that the calibrated checker supports (:mod:`core.verification`; 0 for an
answer with no claim). The separate LLM judge prompt is gone: the checker's one verification
call (or its offline back end) is the judge.

LLM judge (SPEC.md §3.4's original, replaced by the checker; :class:`QualityScore` keeps its fields): ``overall = 0.4·grounding + 0.3·completeness + 0.3·accuracy``.
Heuristic without a judge: ``overall = 0.3·length + 0.4·evidence + 0.3·personalization`` where
``length = min(1, answer tokens / 120)``, ``evidence`` = share of the top min(3, n) documents
that the answer cites (0 with no documents), and ``personalization`` = share of the profile's
key terms (conditions, medications; at most 2 needed) that the answer mentions (1 when the
profile is empty).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from core.language.tokens import count_tokens


@dataclass
class QualityScore:
    """Scores in [0, 1]; ``method`` is ``llm_judge`` or ``heuristic``."""

    overall: float
    method: str
    grounding: float | None = None
    completeness: float | None = None
    accuracy: float | None = None
    length: float | None = None
    evidence: float | None = None
    personalization: float | None = None
    missing_info: list[str] = field(default_factory=list)
    improvement_suggestions: list[str] = field(default_factory=list)
    safety_concerns: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for the state and trace (``None`` fields dropped)."""
        return {k: v for k, v in asdict(self).items() if v is not None}


def _length_personalization(answer: str, profile_terms: list[str]) -> tuple[float, float]:
    length = min(1.0, count_tokens(answer) / 120.0)
    if not profile_terms:
        return length, 1.0
    low = answer.lower()
    hits = sum(1 for t in profile_terms if t.lower() in low)
    return length, min(1.0, hits / min(2, len(profile_terms)))


def checker_score(check: Any, answer: str, profile_terms: list[str],
                  uncovered_terms: list[str]) -> QualityScore:
    """The agent's quality score from the checker (formula in the module docstring).

    Args:
        check: a :class:`core.verification.Verification` of the answer as it will ship.
        answer: the answer text.
        profile_terms: the profile's condition and medication names.
        uncovered_terms: profile names the question points at that no document mentions;
            they become ``missing_info`` (the query rewrite adds them).
    """
    length, personalization = _length_personalization(answer, profile_terms)
    grounding = check.supported_share if check.verdicts else 0.0
    overall = 0.3 * length + 0.4 * grounding + 0.3 * personalization
    missing = list(uncovered_terms) if grounding < 1.0 or uncovered_terms else []
    return QualityScore(overall=round(overall, 4), method=f"checker:{check.backend}",
                        grounding=round(grounding, 4), length=round(length, 4),
                        personalization=round(personalization, 4), missing_info=missing)


def heuristic_score(answer: str, n_docs: int, profile_terms: list[str],
                    uncovered_terms: list[str]) -> QualityScore:
    """The no-LLM quality score (formula in the module docstring).

    Args:
        answer: the generated answer.
        n_docs: documents given to the generator.
        profile_terms: the profile's condition and medication names.
        uncovered_terms: profile terms no retrieved document mentions; they become
            ``missing_info`` (the query rewrite adds them).
    """
    length = min(1.0, count_tokens(answer) / 120.0)
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", answer)}
    top = min(3, n_docs)
    evidence = len({n for n in cited if n <= top}) / top if top else 0.0
    if profile_terms:
        low = answer.lower()
        hits = sum(1 for t in profile_terms if t.lower() in low)
        personalization = min(1.0, hits / min(2, len(profile_terms)))
    else:
        personalization = 1.0
    overall = 0.3 * length + 0.4 * evidence + 0.3 * personalization
    missing = list(uncovered_terms) if evidence < 1.0 or uncovered_terms else []
    return QualityScore(overall=round(overall, 4), method="heuristic", length=round(length, 4),
                        evidence=round(evidence, 4), personalization=round(personalization, 4),
                        missing_info=missing)
