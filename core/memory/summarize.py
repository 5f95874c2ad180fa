"""Compressed memory: a summary of ≤ 200 tokens per block of five turns (SPEC.md §3.2).

The summary keeps symptoms, conditions, medications, key numbers and the care plan. With an
LLM endpoint it is the model's summary (checked: not empty, within the budget once cut); offline
it is extractive: a structured line of the facts the turns stated (from the extractor, so no
word is invented) followed by the user's own sentences that carry a concept or a number, and
the first sentence of each reply that gives advice, each cut to fit.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from core.extraction import Extractor
from core.llm.client import ChatClient, LLMError
from core.tokens import count_tokens, truncate_tokens

log = logging.getLogger(__name__)

SUMMARY_TOKENS = 200  # SPEC.md §3.2
_PLAN = re.compile(r"권장|하세요|드세요|필요|상의|진료|검사|조절|줄이|늘리|피하|plan|should|recommend|"
                   r"consider|talk to|check|avoid|reduce|increase|take", re.I)
_SENT = re.compile(r"(?<=[.!?。])\s+|\n+")
_LABELS = {"ko": {"symptom": "증상", "condition": "질환", "medication": "약", "allergy": "알레르기",
                  "numbers": "수치", "said": "환자 발화", "plan": "안내"},
           "en": {"symptom": "Symptoms", "condition": "Conditions", "medication": "Medications",
                  "allergy": "Allergies", "numbers": "Numbers", "said": "Patient said",
                  "plan": "Advice"}}
_PROMPT = {
    "ko": "다음은 환자와 상담 도우미의 대화 {n}턴입니다. {limit} 토큰 이내의 한국어 요약을 쓰세요. "
          "증상, 질환, 복용약, 중요한 수치(단위 포함), 치료·관리 계획을 빠짐없이 남기고, 대화에 없는 "
          "사실은 절대 더하지 마세요. 요약만 출력하세요.",
    "en": "Below are {n} turns between a patient and a health assistant. Write an English summary "
          "of at most {limit} tokens. Keep every symptom, condition, medication, key number (with "
          "units) and the care plan; never add a fact that is not in the turns. Output only the "
          "summary.",
}


@dataclass(frozen=True)
class TurnText:
    """One turn as the summarizer sees it: its id, the user's words and the reply."""

    turn_id: int
    user_text: str
    reply: str | None


@dataclass(frozen=True)
class Summary:
    """A block's summary: ``text`` (≤ :data:`SUMMARY_TOKENS` tokens), ``tokens``, ``method``
    (``llm`` or ``extractive``) and the LLM calls it took."""

    text: str
    tokens: int
    method: str
    llm_calls: int = 0


def summarize(turns: list[TurnText], lang: str, extractor: Extractor, llm: ChatClient | None = None,
              limit: int = SUMMARY_TOKENS) -> Summary:
    """Summarise a block of turns.

    Args:
        turns: the block, oldest first (normally five).
        lang: ``ko`` or ``en``: the summary's language.
        extractor: finds the facts the extractive summary lists.
        llm: the chat client; ``None`` offline. An LLM failure falls back to extractive.
        limit: maximum tokens (cl100k_base).
    Returns:
        :class:`Summary`; its text may be ``""`` when the turns hold nothing (the caller must
        then not mark them compressed).
    """
    lang = lang if lang in _LABELS else "en"
    if llm is not None:
        try:
            text = _llm_summary(turns, lang, llm, limit)
            if text:
                return Summary(text, count_tokens(text), "llm", 1)
        except LLMError as exc:
            log.warning("LLM summary failed, using the extractive one: %s", exc)
    text = extractive_summary(turns, lang, extractor, limit)
    return Summary(text, count_tokens(text), "extractive", 1 if llm is not None else 0)


def _llm_summary(turns: list[TurnText], lang: str, llm: ChatClient, limit: int) -> str:
    convo = "\n".join(f"[{t.turn_id}] user: {t.user_text}\n[{t.turn_id}] assistant: "
                      f"{truncate_tokens(t.reply or '', 200)}" for t in turns)
    messages = [{"role": "system", "content": _PROMPT[lang].format(n=len(turns), limit=limit)},
                {"role": "user", "content": convo}]
    return truncate_tokens(llm.complete(messages).text.strip(), limit)


def extractive_summary(turns: list[TurnText], lang: str, extractor: Extractor,
                       limit: int = SUMMARY_TOKENS) -> str:
    """The offline summary: facts line, then the user's informative sentences, then advice.

    Only words of the turns and the extractor's concept names appear; the result is cut to
    ``limit`` tokens at a line boundary where possible.
    """
    labels = _LABELS[lang]
    found: dict[str, list[str]] = {}
    said: list[str] = []
    for t in turns:
        slots = extractor.extract(t.user_text, lang)
        for c in slots.concepts:
            if c.status == "active":
                found.setdefault(c.slot, []).append(c.name)
        nums = [_measure(m) for m in slots.vitals + slots.labs + slots.body]
        found.setdefault("numbers", []).extend(nums)
        if slots.concepts or nums or slots.demographics:
            said.append(t.user_text.strip())
    head = " | ".join(f"{labels[k]}: {', '.join(dict.fromkeys(v))}"
                      for k in ("condition", "symptom", "medication", "allergy", "numbers")
                      if (v := found.get(k)))
    lines = [f"[{turns[0].turn_id}–{turns[-1].turn_id}] {head}".strip()] if turns else []
    lines += [f"- {labels['said']}: {s}" for s in said]
    plans = [_first_advice(t.reply) for t in turns if t.reply]
    lines += [f"- {labels['plan']}: {p}" for p in plans if p]
    if not (head or said or any(plans)):  # small talk only: keep what was said, briefly
        lines += [f"- {labels['said']}: {t.user_text.strip()}" for t in turns if t.user_text.strip()]
    return _fit(lines, limit) if len(lines) > 1 or head else ""


def _measure(m) -> str:  # noqa: ANN001 (core.extraction.slots.Measurement)
    value = f"{m.value:g}" + (f"/{m.value2:g}" if m.value2 is not None else "")
    return f"{m.name} {value} {m.unit}"


def _first_advice(reply: str) -> str:
    for sent in _SENT.split(reply):
        s = sent.strip(" -•\t")
        if _PLAN.search(s) and 8 <= len(s) <= 300:
            return s
    return ""


def _fit(lines: list[str], limit: int) -> str:
    out: list[str] = []
    for line in lines:
        candidate = "\n".join(out + [line])
        if count_tokens(candidate) > limit:
            if not out:
                return truncate_tokens(line, limit)
            break
        out.append(line)
    return "\n".join(out)
