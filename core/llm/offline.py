"""The offline answer generator: an extractive, evidence-grounded answer with no LLM.

It never writes a medical statement of its own. Every factual sentence of the answer is a
sentence copied from a retrieved document, followed by that document's citation number; the
only other text is fixed framing: an opening line, the profile facts the user stated, for a
"what does my value mean" question the user's own stated value in a fixed template
(:func:`value_line`), and the disclaimer. Which sentences are quoted is decided by meaning
(:mod:`core.answer.evidence`): at most :data:`MAX_SENTENCES`, :data:`MAX_PER_DOC` per document, in
document then sentence order; when no sentence clears the relevance floor, it refuses to guess.
"""

from __future__ import annotations

from typing import Any

from core.answer import prompts
from core.answer.evidence import Candidate

MAX_SENTENCES = 5
MAX_PER_DOC = 3

_OPENING = {
    "ko": "찾은 자료에서 질문과 관련된 내용을 정리했어요.",
    "en": "Here is what the retrieved sources say about your question.",
}
_PROFILE = {"ko": "참고한 회원님 정보: {}", "en": "What I took into account about you: {}"}
_VALUE = {"ko": "말씀하신 수치: {}. 아래 자료의 기준과 비교해 보세요.",
          "en": "The value you gave: {}. Compare it with the ranges quoted below."}
_NOTHING = {
    "ko": "죄송해요. 이 질문에 답할 근거 자료를 찾지 못했어요. 추측으로 답하지 않을게요. "
          "질문을 조금 더 구체적으로 해 주시거나 의사·약사와 상담해 주세요.",
    "en": "Sorry, I found no source that answers this question, and I will not guess. "
          "Please rephrase it more specifically, or ask your doctor or pharmacist.",
}
_OTHER_LANG = {"ko": "(영문 자료 인용)", "en": "(quoted from a Korean source)"}
FRAMING_PREFIXES = tuple([*_OPENING.values(), *(t.split("{")[0].strip() for t in (*_PROFILE.values(), *_VALUE.values())),
                          *(t.split(".")[0] for t in _NOTHING.values()), "Compare it with the ranges", "아래 자료의 기준과",
                          *_OTHER_LANG.values()])
"""The beginnings of the fixed lines above: not claims (:mod:`core.verification.claims`)."""


def refusal(lang: str) -> str:
    """The refusal-to-guess reply with the disclaimer (no evidence cleared the floor)."""
    lang = lang if lang in _OPENING else "en"
    return f"{_NOTHING[lang]}\n\n{prompts.DISCLAIMER[lang]}"


def value_line(values: list[str], lang: str) -> str:
    """The fixed template stating the user's own values (e.g. ``혈압 160/100 mmHg``) for a
    ``test_result`` question; ``""`` when there is none. It restates what the user said and
    adds no medical statement."""
    lang = lang if lang in _VALUE else "en"
    return _VALUE[lang].format(", ".join(values)) if values else ""


def compose_answer(picked: list[Candidate], numbers: dict[int, int], lang: str,
                   docs: list[dict[str, Any]], profile_line: str, values_line: str = "") -> str:
    """The offline answer: opening, profile line, the user's value line, cited bullets,
    disclaimer.

    Args:
        picked: the sentences to quote (:meth:`core.answer.evidence.Selection.take`), in reading order.
        numbers: retrieved-document position -> citation number (the evidence documents').
        lang: ``ko`` or ``en``, the user's language (framing text only; quotes stay verbatim).
        docs: the retrieved documents (``lang`` marks a quote from the other language).
        profile_line: the one-line profile summary, or ``""``.
        values_line: :func:`value_line`'s text, or ``""``.
    Returns:
        The answer text; the refusal to guess when ``picked`` is empty.
    """
    lang = lang if lang in _OPENING else "en"
    if not picked:
        return refusal(lang)
    lines = [_OPENING[lang]]
    if profile_line:
        lines.append(_PROFILE[lang].format(profile_line))
    if values_line:
        lines.append(values_line)
    lines.append("")
    for c in picked:
        other = docs[c.doc].get("lang") not in (None, "", lang)
        lines.append(f"- {c.text} [{numbers[c.doc]}]" + (f" {_OTHER_LANG[lang]}" if other else ""))
    lines += ["", prompts.DISCLAIMER[lang]]
    return "\n".join(lines)
