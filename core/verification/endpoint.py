"""The endpoint back end: one short call judges every claim of an answer at once.

The request extends the answer call's messages unchanged (system, quoted evidence and memory,
question, then the answer as the assistant's turn) with one user message: the verification
instruction (:data:`core.answer.prompts.VERIFY`) and the numbered claims, quoted. A server with a
prompt cache therefore processes only that message. The reply is constrained by a JSON schema
(``{"supported": [bool × n]}``; llama.cpp turns it into a grammar) and read with the tokens'
log-probabilities: at each boolean the model's P(true) against P(false) among its top
candidates, so a verdict is graded, not just yes or no. The endpoint's log-odds then enter a
logistic model with the offline features (:mod:`core.verification.calibration`, ``endpoint``),
fitted on the labelled development split: the model's judgement and the explicit checks of
numbers, names and negation each count where they are reliable.
"""

from __future__ import annotations

import json
import logging
import math
import re
from typing import Any

from core.answer import prompts
from core.privacy.injection import escape_quoted
from core.llm.client import ChatClient, LLMError, LLMReply
from core.verification import calibration as cal
from core.verification.claims import Claim, split_claims
from core.verification.offline import OfflineChecker
from core.verification.result import Verification

log = logging.getLogger(__name__)
TOP_LOGPROBS = 5
LOGIT_CLIP = 10.0


def schema(n: int) -> dict[str, Any]:
    """The reply's JSON schema: exactly ``n`` booleans under ``supported``."""
    return {"type": "object", "properties": {"supported": {
        "type": "array", "items": {"type": "boolean"}, "minItems": n, "maxItems": n}},
        "required": ["supported"]}


def verify_message(claims: list[Claim], lang: str) -> dict[str, str]:
    """The user message appended after the answer: instruction, then the claims quoted."""
    numbered = "\n".join(f"{i}. {c.text}" for i, c in enumerate(claims, 1))
    text = f"{prompts.VERIFY.get(lang, prompts.VERIFY['en'])}\n<sentences>\n{escape_quoted(numbered)}\n</sentences>"
    return {"role": "user", "content": text}


def verify_messages(answer_messages: list[dict[str, str]], answer: str, claims: list[Claim],
                    lang: str) -> list[dict[str, str]]:
    """``answer_messages`` unchanged, the answer as the assistant's turn, the request."""
    return [*answer_messages, {"role": "assistant", "content": answer}, verify_message(claims, lang)]


def boolean_odds(reply: LLMReply, n: int) -> list[float | None]:
    """The model's log-odds log P(true)/P(false) at each of the first ``n`` booleans it wrote.

    Read from each boolean token's top candidates (the server reports the model's own
    distribution before the grammar); a side missing from the candidates is bounded by the
    smallest listed log-probability. ``None`` for a boolean whose candidates were not sent.
    """
    if not reply.tokens or not reply.top_logprobs:
        return [None] * n
    odds: list[float | None] = []
    for token, top in zip(reply.tokens, reply.top_logprobs):
        word = token.strip().lower()
        if word not in ("true", "false"):
            continue
        if not top:
            odds.append(None)
        else:
            floor = min(top.values()) - 1.0
            t = _mass(top, "true", floor)
            f = _mass(top, "false", floor)
            odds.append(max(-LOGIT_CLIP, min(LOGIT_CLIP, t - f)))
        if len(odds) == n:
            break
    return odds + [None] * (n - len(odds))


def _mass(top: dict[str, float], word: str, floor: float) -> float:
    """log Σ exp(logprob) over candidates spelling ``word`` (any case or leading space)."""
    found = [lp for tok, lp in top.items() if tok.strip().lower() == word]
    return math.log(sum(math.exp(lp) for lp in found)) if found else floor


def parse_verdicts(text: str, n: int) -> list[bool] | None:
    """The ``supported`` list of a reply (also inside a code fence); ``None`` when absent or of
    the wrong length."""
    match = re.search(r"\{.*\}", text, re.S)
    try:
        data = json.loads(match.group(0)) if match else None
    except json.JSONDecodeError:
        return None
    flags = data.get("supported") if isinstance(data, dict) else None
    if not isinstance(flags, list) or len(flags) != n or not all(isinstance(f, bool) for f in flags):
        return None
    return flags


class EndpointChecker:
    """One verification call per answer, calibrated with the offline features.

    Args:
        llm: the chat client (the same endpoint as the answer, so its prompt cache applies).
        offline: the offline checker whose features the calibration also reads.
        calibration: the model (default: the shipped ``endpoint`` one).
    """

    backend = "endpoint"

    def __init__(self, llm: ChatClient, offline: OfflineChecker,
                 calibration: cal.Calibration | None = None) -> None:
        self.llm, self.offline = llm, offline
        self.calibration = calibration or cal.load("endpoint")

    def check(self, answer_messages: list[dict[str, str]], answer: str, documents: list[str],
              lang: str, user_context: str = "") -> tuple[Verification, list[dict[str, str]]]:
        """Judge every claim of ``answer`` in one call.

        Args:
            answer_messages: the messages of the answer call, unchanged.
            answer: the answer as the model wrote it (before any disclaimer was added).
            documents: the evidence texts in citation order.
            lang: the answer's language (the instruction's language).
            user_context: the user's own words (question, profile line) for the offline features.
        Returns:
            (the verification, the messages including the reply: what a repair call extends).
            When the call fails the offline verdicts stand in (``backend`` ``offline``, a note).
        """
        claims = split_claims(answer)
        if not claims:
            return Verification(self.backend, self.calibration.floor), []
        feats = self.offline.features(claims, documents, user_context)
        messages = verify_messages(answer_messages, answer, claims, lang)
        try:
            reply = self.llm.complete(messages, json_schema=schema(len(claims)), temperature=0.0,
                                      max_tokens=12 + 4 * len(claims), top_logprobs=TOP_LOGPROBS)
        except LLMError as exc:
            out = self.offline.check(claims, documents, user_context)
            out.note = f"verification call failed, offline verdicts: {exc}"
            return out, []
        odds = boolean_odds(reply, len(claims))
        flags = parse_verdicts(reply.text, len(claims))
        if flags is not None:  # a verdict without candidates: its sign at full confidence
            odds = [o if o is not None else (LOGIT_CLIP if f else -LOGIT_CLIP) for o, f in zip(odds, flags)]
        verdicts = [self.offline.verdict(c, f, documents, self.calibration,
                                         llm=None if o is None else 1 / (1 + math.exp(-o)), llm_logit=o)
                    for c, f, o in zip(claims, feats, odds)]
        usage = {"prompt_tokens": reply.prompt_tokens, "cached_tokens": reply.cached_tokens,
                 "completion_tokens": reply.completion_tokens, "ms": round(reply.ms, 1)}
        note = "" if flags is not None else "verification reply malformed: model log-odds where read, else offline features"
        return (Verification(self.backend, self.calibration.floor, verdicts, 1, usage, note),
                [*messages, {"role": "assistant", "content": reply.text}])
