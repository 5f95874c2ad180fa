"""The instruction screen of retrieved documents (SPEC.md §11: corpus text is quoted, never
obeyed): every sentence of a document's text that carries an instruction to the assistant or
the reader (:func:`core.privacy.injection.evidence_instruction_spans`) is removed before the document
is selected from, quoted by the offline generator, compressed or put in a prompt; a title that
carries one is replaced by the document's source. ``medbot ingest`` skips such records
(:func:`record_instruction`), and this screen covers indexes built before it, or by other
tools."""

from __future__ import annotations

import re
from typing import Any

from core.privacy.injection import evidence_instruction_spans

_SEGMENT = re.compile(r".+?(?:(?<=[.!?。])\s+|\n+|$)", re.S)
"""Sentence-sized pieces with their trailing separator, cut where
:func:`core.language.text.split_sentences` cuts, so that the kept text splits into the same sentences
(whose stored vectors are found by their text)."""


def screen_text(text: str) -> tuple[str, int]:
    """``text`` without the sentences that overlap an instruction span, and how many were
    removed (0: ``text`` is returned unchanged)."""
    spans = evidence_instruction_spans(text)
    if not spans:
        return text, 0
    kept, dropped = [], 0
    for m in _SEGMENT.finditer(text):
        a, b = m.span()
        if any(s < b and a < e for _, s, e in spans):
            dropped += 1
        elif m.group(0).strip():
            kept.append(m.group(0).strip())
    return "\n".join(kept), dropped


def screen_document(doc: dict[str, Any]) -> dict[str, Any]:
    """A retrieved document (``to_dict`` form) with its instruction sentences removed; the
    same dict when it has none, else a copy with ``screened`` = sentences removed."""
    text, dropped = screen_text(str(doc.get("text") or ""))
    title = str(doc.get("title") or "")
    bad_title = bool(evidence_instruction_spans(title))
    if not dropped and not bad_title:
        return doc
    return {**doc, "text": text, "title": str(doc.get("source") or "") if bad_title else title,
            "screened": dropped + bad_title}


def record_instruction(title: str, text: str) -> str | None:
    """Why a corpus record is refused at ingest (``instruction to the assistant or the reader
    (override): "ignore previous instructions and …"``), or ``None`` for a clean record."""
    body = f"{title}\n{text}"
    spans = evidence_instruction_spans(body)
    if not spans:
        return None
    kind, a, b = spans[0]
    excerpt = " ".join(body[a:b].split())[:80]
    return f"instruction to the assistant or the reader ({kind}): {excerpt!r}"
