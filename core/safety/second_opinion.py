"""Triage layer 3: an LLM second opinion (SPEC.md §11 "Emergency triage").

Runs only when an OpenAI-compatible endpoint is configured and only on a message that states
a symptom now and that layers 1-2 did not flag. The model sees the category list and the
message as quoted JSON data in the user turn (never in the system message, SPEC.md §11); it
answers ``{"emergency": bool, "categories": [...], "reason": "..."}``. It can add a flag,
never clear one: an unknown category, a malformed reply or a failed request adds nothing.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

from core.llm.client import ChatClient, LLMError
from core.privacy.injection import escape_quoted
from core.safety.taxonomy import CATEGORIES

log = logging.getLogger(__name__)

SYSTEM = (
    "You are the safety check of a medical chatbot. Decide whether the user's message describes an "
    "emergency happening now that needs an ambulance or the emergency department (Korean Triage and "
    "Acuity Scale level 1-2; NHS 111 would send it to 999 or A&E), for the writer or someone they "
    "describe. General questions, past events, negated or mild symptoms are not emergencies. "
    "Reply with a JSON object only: {\"emergency\": true|false, \"categories\": [ids], \"reason\": "
    "\"short\"}. Use only these category ids:\n"
    + "\n".join(f"- {c.id}: {c.en}" for c in CATEGORIES)
)
"""The system prompt: task, the taxonomy's ids and the reply format (no user text)."""


@dataclass(frozen=True)
class SecondOpinion:
    """What the LLM added: category ids (known ones only), its reason, a note when the call
    failed or the reply could not be read, and whether it judged the message an emergency."""

    categories: list[str]
    reason: str = ""
    note: str = ""
    emergency: bool = False


def messages(text: str, lang: str) -> list[dict[str, str]]:
    """The chat messages of the request: system prompt, then the message as JSON data, every
    ``<`` that could open a tag or special token escaped (:func:`core.privacy.injection
    .escape_quoted`), as in every other prompt that quotes user text."""
    data = {"message": escape_quoted(text), "language": lang}
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": json.dumps(data, ensure_ascii=False)}]


def parse(reply: str) -> SecondOpinion:
    """Read the model's JSON reply; anything else adds nothing (with a note)."""
    try:
        data = json.loads(reply)
    except (json.JSONDecodeError, TypeError):
        return SecondOpinion([], note="second opinion: reply was not JSON")
    if not isinstance(data, dict) or data.get("emergency") is not True:
        return SecondOpinion([], reason=str(data.get("reason", "")) if isinstance(data, dict) else "")
    known = {c.id for c in CATEGORIES}
    raw = data.get("categories") or []
    cats = [c for c in raw if isinstance(c, str) and c in known] if isinstance(raw, list) else []
    note = "" if cats else "second opinion: emergency without a known category"
    return SecondOpinion(list(dict.fromkeys(cats)), str(data.get("reason", ""))[:200], note, True)


def second_opinion(llm: ChatClient, text: str, lang: str) -> SecondOpinion:
    """Ask the LLM once (JSON mode, temperature 0, ≤ 200 completion tokens).

    Returns:
        :class:`SecondOpinion`; on :class:`core.llm.client.LLMError` no category and a note.
    """
    try:
        reply = llm.complete(messages(text, lang), json_mode=True, max_tokens=200, temperature=0.0)
    except LLMError as exc:
        log.warning("triage second opinion failed: %s", exc)
        return SecondOpinion([], note=f"second opinion failed: {exc}")
    return parse(reply.text)
