"""The offline answer generator: an extractive, evidence-grounded answer with no LLM.

It never writes a medical statement of its own. Every factual sentence of the answer is a
sentence copied from a retrieved document, followed by that document's citation number; the
only other text is fixed framing (an opening line, the profile facts the user stated, and the
disclaimer). Sentences are chosen by overlap of their BM25 tokens with the query's tokens
(question plus profile terms), at most two per document, five in all, in document rank order;
questions (sentences ending in "?") and repeated sentences are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core import prompts
from core.retrieval.tokenize import tokenize
from core.text import split_sentences

MAX_SENTENCES = 5
MAX_PER_DOC = 2

_OPENING = {
    "ko": "찾은 자료에서 질문과 관련된 내용을 정리했어요.",
    "en": "Here is what the retrieved sources say about your question.",
}
_PROFILE = {"ko": "참고한 회원님 정보: {}", "en": "What I took into account about you: {}"}
_NOTHING = {
    "ko": "죄송해요. 이 질문에 답할 근거 자료를 찾지 못했어요. 추측으로 답하지 않을게요. "
          "질문을 조금 더 구체적으로 해 주시거나 의사·약사와 상담해 주세요.",
    "en": "Sorry, I found no source that answers this question, and I will not guess. "
          "Please rephrase it more specifically, or ask your doctor or pharmacist.",
}
_OTHER_LANG = {"ko": "(영문 자료 인용)", "en": "(quoted from a Korean source)"}


@dataclass
class Picked:
    """A chosen sentence: its text, the citation number of its document, its score."""

    text: str
    n: int
    score: float
    order: tuple[int, int]


def pick_sentences(query_terms: set[str], docs: list[dict[str, Any]]) -> list[Picked]:
    """Choose the evidence sentences that share the most query terms.

    Args:
        query_terms: BM25 tokens of the question and profile terms.
        docs: retrieved documents (``text``; position i is citation number i+1).
    Returns:
        Up to :data:`MAX_SENTENCES` sentences with at least one shared term, in document order.
    """
    cands: list[Picked] = []
    seen: set[str] = set()
    for i, doc in enumerate(docs):
        for j, sent in enumerate(split_sentences(doc["text"])):
            if len(sent) < 8 or sent.rstrip().endswith("?") or sent in seen:
                continue  # questions and repeats carry no information
            seen.add(sent)
            terms = set(tokenize(sent))
            overlap = len(terms & query_terms)
            if overlap == 0:
                continue
            cands.append(Picked(sent, i + 1, overlap + 0.5 / (i + 1) - 0.01 * j, (i, j)))
    cands.sort(key=lambda p: -p.score)
    chosen: list[Picked] = []
    per_doc: dict[int, int] = {}
    for p in cands:
        if per_doc.get(p.n, 0) >= MAX_PER_DOC:
            continue
        chosen.append(p)
        per_doc[p.n] = per_doc.get(p.n, 0) + 1
        if len(chosen) >= MAX_SENTENCES:
            break
    return sorted(chosen, key=lambda p: p.order)


def compose_answer(question_terms: set[str], lang: str, docs: list[dict[str, Any]],
                   profile_line: str) -> str:
    """The offline answer: opening, profile line, cited evidence sentences, disclaimer.

    Args:
        question_terms: query tokens (see :func:`pick_sentences`).
        lang: ``ko`` or ``en``, the user's language (framing text only; quotes stay verbatim).
        docs: the retrieved documents in citation order.
        profile_line: the one-line profile summary, or ``""``.
    Returns:
        The answer text. With no usable evidence, a refusal to guess plus the disclaimer.
    """
    lang = lang if lang in _OPENING else "en"
    picked = pick_sentences(question_terms, docs)
    if not picked:
        return f"{_NOTHING[lang]}\n\n{prompts.DISCLAIMER[lang]}"
    lines = [_OPENING[lang]]
    if profile_line:
        lines.append(_PROFILE[lang].format(profile_line))
    lines.append("")
    for p in picked:
        other = docs[p.n - 1].get("lang") not in (None, lang)
        lines.append(f"- {p.text} [{p.n}]" + (f" {_OTHER_LANG[lang]}" if other else ""))
    lines += ["", prompts.DISCLAIMER[lang]]
    return "\n".join(lines)
