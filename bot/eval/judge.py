"""Judge metrics with the RAGAS definitions (Es, James, Espinosa-Anke & Schockaert 2023,
"RAGAS: Automated Evaluation of Retrieval Augmented Generation", arXiv:2309.15217), computed
with the configured OpenAI-compatible endpoint as the judge.

The ``ragas`` package is not used. Checked: ``pip install ragas==0.4.3`` pulls 94
packages (LangChain, ``datasets``, ``instructor``, ...) and then fails to import
(``ModuleNotFoundError: langchain_community.chat_models.vertexai`` with the langchain-community
0.4.2 that pip resolves); it also sends usage telemetry unless ``RAGAS_DO_NOT_TRACK=true``, and
its long few-shot prompts with free-form JSON parsing are beyond a 1.5B local model at 5–40
prompt tokens/s. The published definitions are implemented instead, each LLM step with a
capped ``json_schema`` so a small model always returns parseable JSON:

- **faithfulness** F = |V| / |S| (paper §3): the judge splits the answer into at most
  :data:`MAX_STATEMENTS` statements S (one call), then decides for each whether it can be
  inferred from the context c(q) (a second call); V is the supported ones.
- **answer relevance** AR = (1/n) Σ sim(q, qᵢ) (paper §3): the judge writes n = 3 questions
  the answer would answer; sim is the cosine of their embeddings with the original question's
  (here the bundled multilingual-e5-small instead of the paper's ada-002).
- **context precision** (the RAGAS library's definition without reference): the judge marks
  each retrieved document vᵢ ∈ {0, 1} as useful for the answer; CP@K = Σₖ (precision@k · vₖ)
  / (number of useful documents in the top K); 0 when none is useful.

The context of a turn is the patient's own messages so far plus the documents the condition
used (for ``llm`` mode, which retrieves nothing: the documents a reference hybrid search finds
for the question). Every judge metric is reported next to the judge's reliability on the
calibration set (``data/calibration.jsonl``): known-faithful, known-fabricated and off-topic
answers to the same question (:func:`calibrate`).
"""

from __future__ import annotations

import json
import logging
import math
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import numpy as np

from core.llm.client import ChatClient, LLMError

log = logging.getLogger(__name__)
MAX_STATEMENTS = 8
N_QUESTIONS = 3
CONTEXT_CHARS = 1200  # per document, so the judge's prompt stays within ~2,000 model tokens

_STATEMENTS = {"type": "object", "properties": {"statements": {
    "type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": MAX_STATEMENTS}},
    "required": ["statements"]}
_QUESTIONS = {"type": "object", "properties": {"questions": {
    "type": "array", "items": {"type": "string"}, "minItems": N_QUESTIONS, "maxItems": N_QUESTIONS}},
    "required": ["questions"]}


def _verdicts_schema(n: int) -> dict[str, Any]:
    return {"type": "object", "properties": {"verdicts": {
        "type": "array", "items": {"type": "boolean"}, "minItems": n, "maxItems": n}},
        "required": ["verdicts"]}


_P_STATEMENTS = ("Break the answer below into short, self-contained factual statements (at most "
                 f"{MAX_STATEMENTS}, each under 25 words). Skip greetings, disclaimers and advice to "
                 "see a doctor. "
                 "Reply with JSON {\"statements\": [...]}.")
_P_VERIFY = ("For each numbered statement, decide whether it can be directly inferred from the "
             "context (true) or not (false): a statement that the context does not support, or "
             "contradicts, is false. Reply with JSON {\"verdicts\": [true/false per statement, "
             "in order]}.")
_P_QUESTIONS = (f"Write {N_QUESTIONS} different questions that the answer below answers, in the "
                "answer's language. Reply with JSON {\"questions\": [...]}.")
_P_USEFUL = ("For each numbered document, decide whether it was useful to arrive at the answer "
             "to the question (true) or not (false). Reply with JSON {\"verdicts\": [true/false "
             "per document, in order]}.")


@dataclass
class JudgeScores:
    """One answer's judge metrics (``None``: not computable or the judge failed)."""

    faithfulness: float | None = None
    statements: list[dict[str, Any]] = field(default_factory=list)
    answer_relevance: float | None = None
    generated_questions: list[str] = field(default_factory=list)
    context_precision: float | None = None
    judge_calls: int = 0
    judge_errors: list[str] = field(default_factory=list)


class Judge:
    """The RAGAS-definition metrics over one chat client and one embedder.

    Args:
        llm: the judge model.
        embedder: has ``embed_query(text) -> np.ndarray`` (L2-normalised), for relevance.
        seed: sampling seed sent with every call (temperature 0 as well).
    """

    def __init__(self, llm: ChatClient, embedder: Any, seed: int = 0) -> None:
        self.llm, self.embedder, self.seed = llm, embedder, seed
        self._vectors: dict[str, np.ndarray] = {}  # a run embeds the same questions many times

    def _embed(self, text: str) -> np.ndarray:
        if text not in self._vectors:
            self._vectors[text] = np.asarray(self.embedder.embed_query(text), dtype=np.float32)
        return self._vectors[text]

    def _json(self, system: str, user: str, schema: dict[str, Any], out: JudgeScores,
              max_tokens: int = 400, salvage: str = "") -> dict[str, Any] | None:
        out.judge_calls += 1
        text = ""
        try:
            text = self.llm.complete([{"role": "system", "content": system},
                                      {"role": "user", "content": user}], json_schema=schema,
                                     max_tokens=max_tokens, temperature=0.0, seed=self.seed).text
            return json.loads(text)
        except (LLMError, json.JSONDecodeError, TypeError) as exc:
            items = salvage_strings(text) if salvage and isinstance(exc, json.JSONDecodeError) else []
            out.judge_errors.append(f"{type(exc).__name__}: {str(exc)[:120]}"
                                    + (f" (kept the {len(items)} complete items)" if items else ""))
            return {salvage: items} if items else None

    def faithfulness(self, answer: str, context: list[str], out: JudgeScores) -> None:
        """Fill ``out.faithfulness`` = supported statements / statements (paper §3)."""
        data = self._json(_P_STATEMENTS, f"Answer:\n{answer}", _STATEMENTS, out, max_tokens=700,
                          salvage="statements")
        statements = [s.strip() for s in (data or {}).get("statements", []) if str(s).strip()]
        if not statements:
            return
        numbered = "\n".join(f"{i}. {s}" for i, s in enumerate(statements, 1))
        verdict = self._json(_P_VERIFY, f"Context:\n{_context(context)}\n\nStatements:\n{numbered}",
                             _verdicts_schema(len(statements)), out, max_tokens=200)
        flags = (verdict or {}).get("verdicts")
        if not isinstance(flags, list) or len(flags) != len(statements):
            return
        out.statements = [{"statement": s, "supported": bool(v)} for s, v in zip(statements, flags)]
        out.faithfulness = round(sum(map(bool, flags)) / len(flags), 4)

    def answer_relevance(self, question: str, answer: str, out: JudgeScores) -> None:
        """Fill ``out.answer_relevance`` = mean cosine(question, generated questions) (paper §3)."""
        data = self._json(_P_QUESTIONS, f"Answer:\n{answer}", _QUESTIONS, out, max_tokens=200)
        qs = [q.strip() for q in (data or {}).get("questions", []) if str(q).strip()]
        if not qs:
            return
        q0 = self._embed(question)
        sims = [float(np.dot(q0, self._embed(q))) for q in qs]
        out.generated_questions = qs
        out.answer_relevance = round(sum(sims) / len(sims), 4)

    def context_precision(self, question: str, answer: str, docs: list[str], out: JudgeScores) -> None:
        """Fill ``out.context_precision`` (RAGAS CP@K without reference) over ranked ``docs``."""
        if not docs:
            return
        numbered = "\n\n".join(f"[{i}] {d[:CONTEXT_CHARS]}" for i, d in enumerate(docs, 1))
        data = self._json(_P_USEFUL, f"Question: {question}\nAnswer: {answer}\n\nDocuments:\n{numbered}",
                          _verdicts_schema(len(docs)), out, max_tokens=100)
        flags = (data or {}).get("verdicts")
        if isinstance(flags, list) and len(flags) == len(docs):
            out.context_precision = round(context_precision_at_k([bool(v) for v in flags]), 4)

    def score(self, question: str, answer: str, context: list[str], docs: list[str],
              metrics: list[str] | tuple[str, ...] = ("faithfulness", "answer_relevance",
                                                      "context_precision")) -> JudgeScores:
        """The ``metrics`` of one answer (context: patient messages + documents)."""
        out = JudgeScores()
        if "faithfulness" in metrics:
            self.faithfulness(answer, context, out)
        if "answer_relevance" in metrics:
            self.answer_relevance(question, answer, out)
        if "context_precision" in metrics:
            self.context_precision(question, answer, docs, out)
        return out


_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


def salvage_strings(text: str) -> list[str]:
    """The complete JSON strings of the first array in a reply cut off at ``max_tokens``
    (``{"statements": ["a", "b", "c...`` -> ``["a", "b"]``); ``[]`` when there is none."""
    start = text.find("[")
    if start < 0:
        return []
    return [json.loads(f'"{m.group(1)}"') for m in _STRING.finditer(text, start + 1)
            if text[m.end():m.end() + 1] in (",", "]", "\n", " ") and m.group(1).strip()]


def context_precision_at_k(useful: list[bool]) -> float:
    """RAGAS context precision: Σₖ precision@k · vₖ over useful ranks / number useful (0 if none)."""
    hits, total = 0, 0.0
    for k, v in enumerate(useful, 1):
        if v:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


def perplexity(logprobs: list[float] | None) -> float | None:
    """exp(−mean log p) of the generated tokens (natural log); ``None`` without logprobs."""
    if not logprobs:
        return None
    return round(math.exp(-sum(logprobs) / len(logprobs)), 4)


def _context(context: list[str]) -> str:
    return "\n\n".join(c[:CONTEXT_CHARS] for c in context if c.strip())


def load_calibration(langs: list[str]) -> list[dict[str, Any]]:
    """The shipped calibration items in ``langs`` (question, context, and a faithful, a
    fabricated and an off-topic answer)."""
    text = resources.files("bot.eval").joinpath("data/calibration.jsonl").read_text("utf-8")
    return [d for line in text.splitlines() if line.strip() and (d := json.loads(line))["lang"] in langs]


def auc(positives: list[float], negatives: list[float]) -> float | None:
    """P(a positive scores above a negative), ties counting ½ (Mann–Whitney U / (n₁n₂))."""
    if not positives or not negatives:
        return None
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in positives for n in negatives)
    return round(wins / (len(positives) * len(negatives)), 4)


def calibrate(judge: Judge, items: list[dict[str, Any]]) -> dict[str, Any]:
    """The judge's reliability on known answers.

    Faithfulness: faithful vs fabricated answers against the item's context. Answer relevance:
    the faithful answer vs the off-topic one. Context precision: the relevant document ranked
    first vs ranked after an unrelated one (ideal 1.0 vs 0.5).
    Returns:
        Per metric: mean score of each group, AUC (1 = always ranked right, 0.5 = chance) and
        the share of items whose pair is ordered right; plus the raw scores per item.
    """
    rows = []
    for it in items:
        ctx = it["context"]
        good, bad = JudgeScores(), JudgeScores()
        judge.faithfulness(it["faithful"], ctx, good)
        judge.faithfulness(it["fabricated"], ctx, bad)
        judge.answer_relevance(it["question"], it["faithful"], good)
        judge.answer_relevance(it["question"], it["off_topic"], bad)
        judge.context_precision(it["question"], it["faithful"], [ctx[0], it["unrelated_context"]], good)
        judge.context_precision(it["question"], it["faithful"], [it["unrelated_context"], ctx[0]], bad)
        rows.append({"id": it["id"], "faithful": good.faithfulness, "fabricated": bad.faithfulness,
                     "relevant": good.answer_relevance, "off_topic": bad.answer_relevance,
                     "cp_relevant_first": good.context_precision,
                     "cp_unrelated_first": bad.context_precision,
                     "errors": good.judge_errors + bad.judge_errors})
    return {"items": rows,
            "faithfulness": _separation(rows, "faithful", "fabricated"),
            "answer_relevance": _separation(rows, "relevant", "off_topic"),
            "context_precision": _separation(rows, "cp_relevant_first", "cp_unrelated_first")}


def _separation(rows: list[dict[str, Any]], pos: str, neg: str) -> dict[str, Any]:
    p = [r[pos] for r in rows if r[pos] is not None]
    n = [r[neg] for r in rows if r[neg] is not None]
    pairs = [(r[pos], r[neg]) for r in rows if r[pos] is not None and r[neg] is not None]
    return {f"mean_{pos}": round(sum(p) / len(p), 4) if p else None,
            f"mean_{neg}": round(sum(n) / len(n), 4) if n else None,
            "auc": auc(p, n), "pairs_ordered": round(sum(a > b for a, b in pairs) / len(pairs), 4) if pairs else None,
            "n_items": len(rows), "n_scored": len(pairs)}
