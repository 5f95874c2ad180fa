"""Checking an LLM answer's numbered citations against the evidence it was given (issue 14).

The prompt numbers the evidence documents ``[1]..[m]`` and asks for a citation after each
statement. Here every sentence of the answer that cites ``[n]`` (also ``[1, 3]``, ``[1][3]``) is
checked against the text document n had in the prompt:

- **lexical support**: at least :data:`LEXICAL_MIN` of the sentence's content terms
  (:func:`core.evidence.terms`) occur in document n; else
- **embedding support**: the e5 cosine between the sentence and document n's best-matching
  sentence is at least :data:`COSINE_MIN` (both embedded as passages; a paraphrase passes).

A citation that fails both, or that names no document, is **unsupported**: the turn's trace
lists it (``citations``), a note says so, and the LLM judge of ``refine`` is shown the list.
Sentences without a citation are counted (``uncited``), not judged.

Thresholds: :data:`LEXICAL_MIN` 0.6 (a sentence restating its source keeps most of its content
words; 0.5 let ``amlodipine causes diarrhoea`` pass on a metformin document). :data:`COSINE_MIN`
0.88 from a small calibration with e5-small (``tests/test_citations.py``): paraphrases of a
source sentence scored 0.88–0.97, unrelated claims 0.77–0.86, but claims that contradict their
source (``take it with calcium`` for ``on an empty stomach``) scored up to 0.90. The embedding
check therefore catches citations of the wrong document, not contradictions: it flags, it does
not rewrite, and the LLM judge sees what it flagged.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from core.embedding import Embedder
from core.evidence import terms
from core.retrieval.sentences import chunk_sentences
from core.text import split_sentences

LEXICAL_MIN = 0.6
COSINE_MIN = 0.88
_CITE = re.compile(r"\[(\d+(?:\s*[,;]\s*\d+)*)\]")


@dataclass
class Unsupported:
    """A sentence whose citation ``n`` is not supported, and why (``no such document``,
    ``lexical 0.20, cosine 0.81``)."""

    sentence: str
    n: int
    reason: str


@dataclass
class CitationReport:
    """Counts of cited sentences and citations checked, and the unsupported ones."""

    sentences: int = 0
    cited_sentences: int = 0
    citations: int = 0
    supported: int = 0
    uncited: int = 0
    unsupported: list[Unsupported] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for the state and trace."""
        return asdict(self)

    def note(self) -> str:
        """One line for the trace's notes."""
        cites = ", ".join(f"[{u.n}]" for u in self.unsupported)
        return f"citation check: {len(self.unsupported)} of {self.citations} citations unsupported ({cites})"


def cited_numbers(sentence: str) -> list[int]:
    """The citation numbers in a sentence, in order, without repeats."""
    nums: list[int] = []
    for m in _CITE.finditer(sentence):
        nums.extend(int(x) for x in re.split(r"\s*[,;]\s*", m.group(1)))
    return list(dict.fromkeys(nums))


def lexical_support(sentence: str, document: str) -> float:
    """Share of the sentence's content terms (citations removed) found in the document (1.0
    for a sentence with no content term)."""
    t = terms(_CITE.sub(" ", sentence))
    return len(t & terms(document)) / len(t) if t else 1.0


def check_citations(answer: str, documents: list[str], embedder: Embedder | None = None) -> CitationReport:
    """Check every ``[n]`` of ``answer`` against ``documents[n - 1]`` (see the module doc).

    Args:
        answer: the LLM's answer.
        documents: the evidence texts in citation order, as the prompt gave them.
        embedder: for the embedding check (``None``: lexical check only).
    Returns:
        :class:`CitationReport`. An embedder failure falls back to the lexical verdict.
    """
    report = CitationReport()
    pending: list[tuple[str, int, float]] = []
    for sentence in split_sentences(answer):
        nums = cited_numbers(sentence)
        report.sentences += 1
        if not nums:
            report.uncited += 1
            continue
        report.cited_sentences += 1
        for n in nums:
            report.citations += 1
            if not 1 <= n <= len(documents):
                report.unsupported.append(Unsupported(sentence, n, "no such document"))
                continue
            lex = lexical_support(sentence, documents[n - 1])
            if lex >= LEXICAL_MIN:
                report.supported += 1
            else:
                pending.append((sentence, n, lex))
    for sentence, n, lex in pending:
        cos = _best_cosine(sentence, documents[n - 1], embedder)
        if cos is not None and cos >= COSINE_MIN:
            report.supported += 1
        else:
            shown = "n/a" if cos is None else f"{cos:.2f}"
            report.unsupported.append(Unsupported(sentence, n, f"lexical {lex:.2f}, cosine {shown}"))
    return report


def _best_cosine(sentence: str, document: str, embedder: Embedder | None) -> float | None:
    sents = chunk_sentences(document) or [document]
    if embedder is None:
        return None
    try:
        vecs = embedder.embed_passages([_CITE.sub("", sentence).strip(), *sents])
    except Exception:  # the check must never cost the user the answer
        return None
    return float(np.max(vecs[1:] @ vecs[0]))
