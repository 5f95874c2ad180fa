"""Scores of ``medbot bench answers``: the on-topic rule, ROUGE-L, embedding similarity."""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bot.bench.answers.data import Answer, Question

_BULLET = re.compile(r"^- (?P<body>.+?) \[(?P<n>\d+)\](?: \(.+\))?$")


def parse_bullets(text: str, sources: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(quoted text, cited document id) of every ``- text [n]`` line of an answer."""
    out = []
    for line in text.splitlines():
        m = _BULLET.match(line)
        if m and 1 <= int(m.group("n")) <= len(sources):
            out.append((m.group("body"), sources[int(m.group("n")) - 1]["doc_id"]))
    return out


def on_topic(body: str, doc_id: str, q: Question, texts: dict[str, str], strict: bool = False) -> bool:
    """The on-topic rule of the module docstring (``strict``: grade-2 documents only)."""
    rel = {d for d, g in q.relevant.items() if g >= (2 if strict else 1)}
    return doc_id in rel or any(body in texts.get(d, "") for d in rel)


class _WordTokenizer:
    """Unicode word tokens, lower-cased (rouge-score's default drops every non-ASCII letter)."""

    def tokenize(self, text: str) -> list[str]:
        return re.findall(r"\w+", text.lower())


def rouge_l(candidate: str, reference: str) -> float:
    """ROUGE-L F1 (rouge-score's LCS implementation) over Unicode word tokens."""
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=_WordTokenizer())
    return float(scorer.score(reference, candidate)["rougeL"].fmeasure)


def embedding_similarity(bullets: Sequence[str], reference_vec: np.ndarray | None,
                         vectors: Callable[[list[str]], dict[str, np.ndarray]]) -> float:
    """Cosine between the normalised mean e5 vector of the quoted sentences and the reference's
    vector (0 for no bullet or no reference vector)."""
    from core.retrieval.sentences import sentence_key

    if not bullets or reference_vec is None:
        return 0.0
    found = vectors([sentence_key(b) for b in bullets])
    if not found:
        return 0.0
    mean = np.mean(list(found.values()), axis=0)
    return float(mean @ reference_vec / (np.linalg.norm(mean) * np.linalg.norm(reference_vec) + 1e-12))


@dataclass
class Scores:
    """Per-answer scores of one generator on one question."""

    bullets: int = 0
    on_topic: int = 0
    on_topic_strict: int = 0
    rouge: float = 0.0
    similarity: float = 0.0
    ms: float = 0.0
    cpu_ms: float = 0.0
    examples: list[tuple[str, str, bool]] = field(default_factory=list)


def score(ans: Answer, q: Question, texts: dict[str, str], ref_vec: np.ndarray | None,
          vectors: Callable[[list[str]], dict[str, np.ndarray]], rouge: bool = True) -> Scores:
    """Every score of one answer (see :mod:`bot.bench.answers`); ``rouge=False`` skips ROUGE-L."""
    bodies = [b for b, _ in ans.bullets]
    verdicts = [on_topic(b, d, q, texts) for b, d in ans.bullets]
    return Scores(len(bodies), sum(verdicts), sum(on_topic(b, d, q, texts, True) for b, d in ans.bullets),
                  rouge_l(" ".join(bodies), q.reference) if bodies and rouge else 0.0,
                  embedding_similarity(bodies, ref_vec, vectors), ans.ms, ans.cpu_ms,
                  [(b, d, v) for (b, d), v in zip(ans.bullets, verdicts)])


def summarize(rows: Sequence[Scores]) -> dict[str, float]:
    """Aggregate: on-topic rate over all bullets (micro), refusal rate, mean ROUGE-L and
    similarity over all questions and over answered ones, latency p50/p95 (ms)."""
    answered = [r for r in rows if r.bullets]
    n_b = sum(r.bullets for r in rows)
    ms = sorted(r.ms for r in rows)
    return {"questions": len(rows), "bullets_per_answer": n_b / max(len(rows), 1),
            "on_topic": sum(r.on_topic for r in rows) / n_b if n_b else float("nan"),
            "on_topic_strict": sum(r.on_topic_strict for r in rows) / n_b if n_b else float("nan"),
            "refusal": 1 - len(answered) / max(len(rows), 1),
            "rouge_l": statistics.fmean(r.rouge for r in rows) if rows else 0.0,
            "similarity": statistics.fmean(r.similarity for r in rows) if rows else 0.0,
            "rouge_l_answered": statistics.fmean(r.rouge for r in answered) if answered else 0.0,
            "similarity_answered": statistics.fmean(r.similarity for r in answered) if answered else 0.0,
            "p50_ms": float(np.percentile(ms, 50)) if ms else 0.0,
            "p95_ms": float(np.percentile(ms, 95)) if ms else 0.0,
            "cpu_p50_ms": float(np.percentile([r.cpu_ms for r in rows], 50)) if rows else 0.0}
