"""Per-turn metrics that need no judge (computed for every condition, online or offline).

- **context retention**: of the facts the turn needs that the patient stated in an *earlier*
  turn, the share present in the prompt's memory sections (profile / semantic memory, earlier
  conversation summaries, recent dialogue). Evidence documents and the question do not count:
  a document about hypertension names hypertension whether or not anything was remembered.
  ``None`` when the turn needs no earlier fact.
- **prompt facts**: every needed fact (the current message included) anywhere in the prompt.
- **information preservation**: the share of the needed facts that the answer itself uses.
  A fact is present when one of its surface forms (concept names and synonyms in both
  languages, or the number as the patient wrote it) occurs, case-insensitively.
- **retrieval**: nDCG@10, Recall@5 and MRR@10 of the cited documents against the scenario's
  relevance judgments (bundled documents whose title names the turn's topic), where both exist
  (definitions as BEIR/trec_eval: :mod:`core.retrieval.metrics`).
- **citation validity**: every ``[n]`` of the answer points at one of the turn's sources; and
  for the offline generator, every quoted line is a verbatim substring of the cited document.
- **budget compliance**: the prompt (cl100k tokens) is within ``TOKEN_BUDGET``.
- **cost and path**: prompt and completion tokens (the endpoint's counts), LLM calls, latency
  per node, cache hit, refine iterations and stop reason, emergency flags.
"""

from __future__ import annotations

import re
from typing import Any

from bot.eval.scenarios import Fact, Turn
from core.retrieval.metrics import mrr_at_k, ndcg_at_k, recall_at_k

_CITE = re.compile(r"\[(\d+)\]")
_QUOTE = re.compile(r"^- (.+?) \[(\d+)\]")
_WS = re.compile(r"\s+")


def present(fact: Fact, text: str) -> bool:
    """True when one of the fact's surface forms occurs in ``text`` (case-insensitive; a number
    must not be part of a longer number, so ``7.1`` is not found in ``17.1``)."""
    low = text.lower()
    for term in fact.terms:
        t = term.lower()
        if re.fullmatch(r"[\d./]+", t):
            if re.search(r"(?<![\d.])" + re.escape(t) + r"(?![\d])", low):
                return True
        elif t in low:
            return True
    return False


def _share(facts: list[Fact], text: str) -> float | None:
    return sum(present(f, text) for f in facts) / len(facts) if facts else None


MEMORY_SECTIONS = ("profile", "long_term", "dialogue")


def prompt_text(trace: dict[str, Any], sections: tuple[str, ...] | None = None) -> str:
    """The prompt sections the model saw (all but the fixed system text, or only ``sections``)."""
    found = trace.get("prompt_sections") or {}
    return "\n".join(str(v) for k, v in found.items() if v and (sections is None or k in sections))


def citation_validity(answer: str, sources: list[dict[str, Any]], doc_texts: dict[str, str],
                      generator: str | None) -> dict[str, Any]:
    """Citations of one answer.

    Args:
        answer: the reply text.
        sources: the reply's sources (``n``, ``doc_id``).
        doc_texts: doc id -> the document's full text (for the verbatim-quote check).
        generator: the trace's generator (``offline`` enables the quote check).
    Returns:
        ``citations`` (how many ``[n]``), ``citations_valid`` (share pointing at a source;
        ``None`` without citations), ``quotes_verbatim`` (offline only: share of quoted lines
        that are substrings of their cited document; ``None`` otherwise).
    """
    numbers = {s["n"]: s["doc_id"] for s in sources}
    cited = [int(n) for n in _CITE.findall(answer)]
    out: dict[str, Any] = {"citations": len(cited),
                           "citations_valid": (sum(n in numbers for n in cited) / len(cited)) if cited else None,
                           "quotes_verbatim": None}
    if generator == "offline":
        quotes = [(m.group(1), int(m.group(2))) for line in answer.splitlines() if (m := _QUOTE.match(line))]
        if quotes:
            ok = sum(_WS.sub(" ", q) in _WS.sub(" ", doc_texts.get(numbers.get(n, ""), "")) for q, n in quotes)
            out["quotes_verbatim"] = ok / len(quotes)
    return out


def retrieval_scores(turn: Turn, sources: list[dict[str, Any]]) -> dict[str, float | None]:
    """nDCG@10, Recall@5, MRR@10 of the cited ranking; ``None`` when the scenario has no
    relevance judgments for the turn or nothing was retrieved."""
    if not turn.relevant_docs or not sources:
        return {"ndcg10": None, "recall5": None, "mrr10": None}
    ranking = [s["doc_id"] for s in sorted(sources, key=lambda s: s["n"])]
    qrels = {d: 1 for d in turn.relevant_docs}
    return {"ndcg10": round(ndcg_at_k(ranking, qrels, 10), 4),
            "recall5": round(recall_at_k(ranking, qrels, 5), 4),
            "mrr10": round(mrr_at_k(ranking, qrels, 10), 4)}


def node_ms(trace: dict[str, Any]) -> dict[str, float]:
    """Milliseconds per node (summed over refine loops)."""
    out: dict[str, float] = {}
    for row in trace.get("nodes") or []:
        out[row["node"]] = round(out.get(row["node"], 0.0) + float(row["ms"]), 2)
    return out


def turn_metrics(turn: Turn, answer: str, trace: dict[str, Any], sources: list[dict[str, Any]],
                 doc_texts: dict[str, str], token_budget: int) -> dict[str, Any]:
    """Every no-judge metric of one finished turn (see the module docstring)."""
    prompt = prompt_text(trace)
    earlier = [f for f in turn.needs if f.turn < turn.n]
    quality = trace.get("quality") or {}
    prompt_tokens = trace.get("prompt_tokens")
    return {
        "context_retention": _share(earlier, prompt_text(trace, MEMORY_SECTIONS)),
        "prompt_facts": _share(turn.needs, prompt),
        "information_preservation": _share(turn.needs, answer),
        "facts_missing_from_answer": [f.label for f in turn.needs if not present(f, answer)],
        **retrieval_scores(turn, sources),
        **citation_validity(answer, sources, doc_texts, trace.get("generator")),
        "prompt_tokens_cl100k": prompt_tokens,
        "within_budget": None if prompt_tokens is None else prompt_tokens <= token_budget,
        "total_ms": trace.get("total_ms"),
        "node_ms": node_ms(trace),
        "llm_calls": trace.get("llm_calls", 0),
        "cache_hit": bool(trace.get("cache_hit")),
        "generator": trace.get("generator"),
        "quality_overall": quality.get("overall"),
        "quality_method": quality.get("method"),
        "refine_iterations": trace.get("refine_iterations", 0),
        "refine_stop_reason": trace.get("refine_stop_reason"),
        "emergency": bool(trace.get("red_flags")),
        "intent": (trace.get("intent") or {}).get("complexity"),
        "k": (trace.get("intent") or {}).get("k"),
    }
