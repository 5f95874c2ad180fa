"""Repairing an answer: rewrite or drop exactly the sentences the checker failed.

With an endpoint, one call extends the verification call's messages (so the server's prompt
cache holds the answer prompt, the answer and the verdicts) with :data:`core.answer.prompts.REPAIR`
(after an offline verification: the answer call's messages and the answer, with
:data:`core.answer.prompts.REPAIR_QUOTED`, which quotes the failed sentences),
optionally preceded by more evidence from a re-retrieval; the reply is
``{"rewrites": [str × k]}`` under a JSON schema. Each rewrite replaces its sentence in the
answer text; an empty rewrite drops it. Rewrites are then checked by the offline checker and
any still below the floor is dropped: the answer never ships a sentence the checker failed.
Offline there is nothing to rewrite with, so the failed sentences are dropped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from core.answer import prompts
from core.privacy.injection import escape_quoted
from core.llm.client import ChatClient, LLMError
from core.verification.claims import Claim, split_claims
from core.verification.offline import OfflineChecker
from core.verification.result import Verification


def schema(k: int) -> dict[str, Any]:
    """The repair reply's schema: exactly ``k`` strings under ``rewrites``."""
    return {"type": "object", "properties": {"rewrites": {
        "type": "array", "items": {"type": "string"}, "minItems": k, "maxItems": k}},
        "required": ["rewrites"]}


def splice(answer: str, replacements: dict[str, str]) -> str:
    """``answer`` with each sentence of ``replacements`` (as written) replaced by its value; an
    empty value removes the sentence (and a list line it leaves empty)."""
    out = answer
    for old, new in replacements.items():
        out = out.replace(old, new.strip(), 1)
    out = re.sub(r"(?m)^\s*(?:[-*•]|\d+[.)])\s*$\n?", "", out)
    return re.sub(r"[ \t]{2,}", " ", re.sub(r"\n{3,}", "\n\n", out)).strip()


@dataclass
class Repair:
    """What a repair did: ``answer`` after it, how many sentences were rewritten or dropped,
    calls made (0 or 1), the call's usage and a note."""

    answer: str
    rewritten: int = 0
    dropped: int = 0
    calls: int = 0
    usage: dict[str, Any] = field(default_factory=dict)
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for the trace."""
        return {"rewritten": self.rewritten, "dropped": self.dropped, "calls": self.calls,
                "usage": self.usage, "note": self.note}


def drop_failed(answer: str, verification: Verification) -> Repair:
    """The offline repair: remove every failed sentence."""
    failed = verification.failed
    return Repair(splice(answer, {v.sentence: "" for v in failed}), dropped=len(failed))


def repair_request(failed: list, backend: str, lang: str) -> str:
    """The repair instruction for the ``failed`` verdicts: after an endpoint verification it
    names them by the numbers that call gave them (:data:`core.answer.prompts.REPAIR`); after an offline
    one (no call numbered them) it quotes them (:data:`core.answer.prompts.REPAIR_QUOTED`)."""
    if backend == "endpoint":
        numbers = ", ".join(str(v.index + 1) for v in failed)
        return prompts.REPAIR.get(lang, prompts.REPAIR["en"]).format(numbers=numbers)
    quoted = "\n".join(f"{i}. {v.sentence}" for i, v in enumerate(failed, 1))
    return prompts.REPAIR_QUOTED.get(lang, prompts.REPAIR_QUOTED["en"]).format(sentences=escape_quoted(quoted))


def repair_call(llm: ChatClient, verify_messages: list[dict[str, str]], answer: str,
                verification: Verification, documents: list[str], offline: OfflineChecker,
                lang: str, more_evidence: str = "", user_context: str = "") -> Repair:
    """Rewrite or drop the failed sentences in one call (see the module docstring).

    Args:
        llm: the endpoint.
        verify_messages: the messages extended unchanged: the verification call's with its reply
            (endpoint back end) or the answer call's with the answer (offline back end).
        answer: the answer text the verification judged.
        verification: its verdicts.
        documents: every evidence text in citation order (the new ones appended).
        offline: checks the rewrites.
        lang: the instruction's language.
        more_evidence: a rendered ``<evidence>`` section of re-retrieved documents, or ``""``.
        user_context: the user's own words, for the offline check of the rewrites.
    Returns:
        :class:`Repair`; when the call fails, the failed sentences are dropped (a note says so).
    """
    failed = verification.failed
    if not failed:
        return Repair(answer)
    text = repair_request(failed, verification.backend, lang)
    if more_evidence:
        text = f"{prompts.MORE_EVIDENCE.get(lang, prompts.MORE_EVIDENCE['en'])}\n{more_evidence}\n\n{text}"
    messages = [*verify_messages, {"role": "user", "content": text}]
    try:
        reply = llm.complete(messages, json_schema=schema(len(failed)), temperature=0.0,
                             max_tokens=60 + 60 * len(failed))
        rewrites = _parse(reply.text, len(failed))
    except LLMError as exc:
        out = drop_failed(answer, verification)
        out.note = f"repair call failed, failed sentences dropped: {exc}"
        return out
    usage = {"prompt_tokens": reply.prompt_tokens, "cached_tokens": reply.cached_tokens,
             "completion_tokens": reply.completion_tokens, "ms": round(reply.ms, 1)}
    if rewrites is None:
        out = drop_failed(answer, verification)
        out.calls, out.usage, out.note = 1, usage, "repair reply malformed, failed sentences dropped"
        return out
    return _apply(answer, failed, rewrites, documents, offline, usage, user_context)


def _apply(answer: str, failed: list, rewrites: list[str], documents: list[str],
           offline: OfflineChecker, usage: dict[str, Any], user_context: str = "") -> Repair:
    """Splice the rewrites that the offline checker supports; drop the rest."""
    replacements, rewritten, dropped = {}, 0, 0
    for v, new in zip(failed, rewrites):
        claims = split_claims(new) if new.strip() else []
        ok = bool(claims) and all(x.supported for x in offline.check(
            [Claim(i, c.text, c.plain, c.cited or v.cited) for i, c in enumerate(claims)], documents,
            user_context).verdicts)
        replacements[v.sentence] = new if ok else ""
        rewritten, dropped = rewritten + ok, dropped + (not ok)
    return Repair(splice(answer, replacements), rewritten, dropped, 1, usage)


def _parse(text: str, k: int) -> list[str] | None:
    match = re.search(r"\{.*\}", text, re.S)
    try:
        data = json.loads(match.group(0)) if match else None
    except json.JSONDecodeError:
        return None
    rows = data.get("rewrites") if isinstance(data, dict) else None
    if not isinstance(rows, list) or len(rows) != k:
        return None
    return [str(r) for r in rows]
