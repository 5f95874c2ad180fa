"""The offline back end: calibrated P(supported) from evidence features, no model call."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from core.retrieval.sentences import sentence_key
from core.verification import calibration as cal
from core.verification.claims import Claim, evidence_for, split_claims
from core.verification.features import Features, concept_check, evidence_sentences, extract, number_checks
from core.verification.result import SentenceVerdict, Verification

log = logging.getLogger(__name__)


class OfflineChecker:
    """Checks claims with :mod:`core.verification.features` and the offline calibration.

    Args:
        embedder: has ``embed_passages(texts) -> (n, dim)`` (the bundled e5); ``None``:
            lexical similarity only (the shipped calibration assumes e5, so scores are then
            less reliable and the verification's note says so).
        calibration: the model (default: the shipped ``offline`` one).
        lookup: stored passage vectors by :func:`core.retrieval.sentences.sentence_key` (the
            index's sentence vectors, the same e5 model): a sentence found there is not embedded
            again (the offline answer's quotes and the evidence sentences always are).
    """

    backend = "offline"

    def __init__(self, embedder: Any | None, calibration: cal.Calibration | None = None,
                 lookup: Any | None = None) -> None:
        self.embedder = embedder
        self.calibration = calibration or cal.load("offline")
        self.lookup = lookup

    def features(self, claims: list[Claim], documents: list[str], user_context: str = "") -> list[Features]:
        """The features of every claim against the documents it cites (one embedding batch);
        ``user_context``: see :func:`core.verification.features.extract`."""
        cited = [evidence_for(c, documents) for c in claims]
        sents = [evidence_sentences(ev) for ev in cited]
        vecs = self._embed([c.plain for c in claims], sorted({s for ss in sents for s in ss}))
        out = []
        for c, ev, ss in zip(claims, cited, sents):
            if vecs is None:
                out.append(extract(c.plain, ev, None, user_context=user_context))
            else:
                mine, table = vecs
                evs = np.stack([table[s] for s in ss]) if ss else None
                out.append(extract(c.plain, ev, None, mine[c.index], evs, user_context))
        return out

    def _embed(self, claims: list[str], sents: list[str]):
        if self.embedder is None or not claims:
            return None
        texts = [*claims, *sents]
        try:
            known = self.lookup([sentence_key(t) for t in texts]) if self.lookup is not None else {}
            missing = list(dict.fromkeys(t for t in texts if sentence_key(t) not in known))
            fresh = dict(zip(missing, self.embedder.embed_passages(missing))) if missing else {}
        except Exception as exc:  # the check must never cost the user the answer
            log.warning("verification: embedding failed, lexical similarity used: %s", exc)
            return None
        vecs = [known[k] if (k := sentence_key(t)) in known else fresh[t] for t in texts]
        return np.stack(vecs[:len(claims)]), dict(zip(sents, vecs[len(claims):]))

    def verdict(self, claim: Claim, f: Features, documents: list[str],
                calibration: cal.Calibration | None = None, llm: float | None = None,
                llm_logit: float | None = None) -> SentenceVerdict:
        """One claim's calibrated verdict from its features (and the endpoint's log-odds)."""
        model = calibration or self.calibration
        x = feature_vector(model, f, self.calibration, llm_logit)
        p = model.probability(x)
        supported = p >= model.floor
        missing = not supported and _missing_everywhere(claim.plain, documents) and not (
            f.num_unmatched == 0 and f.concept_unmatched == 0)
        return SentenceVerdict(claim.index, claim.text, claim.cited, p, supported,
                               [] if supported else f.reasons(), missing, llm)

    def check(self, answer: str | list[Claim], documents: list[str], user_context: str = "") -> Verification:
        """Check every claim of ``answer`` against ``documents`` (citation order);
        ``user_context``: the user's own words, see :func:`core.verification.features.extract`.

        Returns:
            :class:`Verification` with one verdict per claim, no call made.
        """
        claims = split_claims(answer) if isinstance(answer, str) else answer
        feats = self.features(claims, documents, user_context)
        out = Verification(self.backend, self.calibration.floor,
                           [self.verdict(c, f, documents) for c, f in zip(claims, feats)])
        if self.embedder is None:
            out.note = "no embedder: lexical similarity stood in for the cosine"
        return out


def feature_vector(model: cal.Calibration, f: Features, offline: cal.Calibration,
                   llm_logit: float | None = None) -> np.ndarray:
    """``model``'s inputs for one claim: offline features by name, the endpoint's log-odds
    (``llm_logit``, 0 when absent, with ``llm_missing`` 1) and ``offline_logit``, the offline
    model's logit of the same features."""
    values = {"llm_logit": llm_logit or 0.0, "llm_missing": float(llm_logit is None)}
    if "offline_logit" in model.features:
        values["offline_logit"] = offline.logit(f.vector(offline.features))
    return np.array([values[n] if n in values else f.vector((n,))[0] for n in model.features])


def _missing_everywhere(sentence: str, documents: list[str]) -> bool:
    """True when no evidence document at all names the claim's drug or condition or states
    its number: more evidence, not a rewrite, could support it."""
    joined = "\n".join(documents)
    return bool(joined) and (concept_check(sentence, joined) > 0 or number_checks(sentence, joined)[0] > 0)
