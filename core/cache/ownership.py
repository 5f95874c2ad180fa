"""Who may be served a cached answer (SPEC.md §11 "Privacy": an answer is shared only when
nothing user-specific can be in it).

An answer whose prompt held *any* user-specific content is owned by that user and never served
to another. User content is

- every prompt section that is not the team's own (the system prompt, the evidence documents,
  the question), so a section added later is personal by default;
- a retrieval query rewritten with the user's facts;
- a self-referential question that names nothing of its own ("my medication"), whose answer
  depends on who asks;
- **the question itself** whenever anything in it may be specific to a person
  (:func:`core.privacy.personal_findings`: names, IDs mixing letters and digits, phone numbers,
  e-mail addresses, record, insurance and national-ID numbers, dates, addresses, a stated age,
  sex or pregnancy, first-person statements, words outside the team's and common vocabulary,
  instructions to the assistant). The prompt quotes the question, so an answer may repeat any
  of it; in doubt, the answer is owned.

Only answers built from an impersonal question and the knowledge documents alone are shared.

An owned answer is served to its owner only while the user content it used is unchanged: its
fingerprint is the MD5 of that content (section name and text, and the profile terms a query
rewrite may add), compared against the same fingerprint of the owner's prompt as it would be
built now (after ``assemble_context``).
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from typing import Any

from core.cache.facets import facets
from core.privacy import personal_findings
from core.language.text import is_self_referential

TEAM_SECTIONS = frozenset({"system", "question", "documents", "evidence"})
"""Prompt sections written by the team or taken from the knowledge corpus; every other section
key of ``state["sections"]`` is user content."""


def personal_sections(sections: dict[str, Any] | None) -> dict[str, str]:
    """The non-empty sections that are not the team's (:data:`TEAM_SECTIONS`)."""
    return {k: str(v) for k, v in (sections or {}).items()
            if k not in TEAM_SECTIONS and str(v or "").strip()}


def depends_on_asker(state: dict[str, Any]) -> bool:
    """True for a self-referential question that names nothing of its own (``제가 먹는 약의
    부작용``, "what about my medication"): its answer is about the asker's facts. A question
    that names its concepts ("can I take ibuprofen?") does not, unless they are the asker's
    own (see :func:`core.nodes.cache.about_own_facts`)."""
    question = state.get("question", "")
    if not is_self_referential(question):
        return False
    slots = state.get("slots")
    return not ((slots is not None and slots.concepts) or facets(question))


def question_personal(question: str) -> str:
    """The parts of ``question`` that may be specific to its asker
    (:func:`core.privacy.personal_findings`), as one canonical string (kind and text of each
    finding, sorted); ``""`` when the question is impersonal. Remembered for the last 1,024
    questions: ownership reads it at the lookup and again when the answer is stored."""
    return _question_personal(question or "")


@lru_cache(maxsize=1024)
def _question_personal(question: str) -> str:
    found = {f"{f.kind}:{f.text}" for f in personal_findings(question)}
    return "\x1f".join(sorted(found))


def forget_findings() -> None:
    """Empty the memory of recent questions' findings (an erasure calls it)."""
    _question_personal.cache_clear()


def personal_content(state: dict[str, Any]) -> dict[str, str]:
    """Everything of the user that went into this turn's answer: the personal sections, the
    retrieval query when it differs from the question (rewritten with the user's facts, in
    ``assemble_context`` or by the refine loop), the question's personal parts
    (:func:`question_personal`) and, for a self-referential question, a marker (its answer
    depends on the asker)."""
    parts = personal_sections(state.get("sections"))
    query = state.get("retrieval_query")
    if query and query != state.get("question"):
        parts["retrieval_query"] = str(query)
    if (found := question_personal(state.get("question", ""))):
        parts["question_personal"] = found
    if depends_on_asker(state):
        parts["self_reference"] = "1"
    return parts


def is_personal(state: dict[str, Any]) -> bool:
    """True when the answer held anything of the user (:func:`personal_content`): it is then
    owned by the user and never served to another."""
    return bool(personal_content(state))


def personal_fingerprint(state: dict[str, Any]) -> str:
    """MD5 hex of the user content a turn can use, as known right after ``assemble_context``:
    the personal sections, the profile terms a query rewrite draws on (even when the refine
    loop rewrites later), the question's personal parts and the self-reference marker. Equal before the answer is generated
    and when it is stored, so an owned entry is recognised while that content is unchanged.
    Requires ``state["sections"]``."""
    parts = personal_sections(state.get("sections"))
    terms = state.get("profile_terms_all") or []
    if terms:
        parts["profile_terms"] = "|".join(sorted(set(terms)))
    if (found := question_personal(state.get("question", ""))):
        parts["question_personal"] = found
    if depends_on_asker(state):
        parts["self_reference"] = "1"
    raw = json.dumps(sorted(parts.items()), ensure_ascii=False)
    return hashlib.md5(raw.encode("utf-8")).hexdigest()
