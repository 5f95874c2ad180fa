"""Emergency triage: three layers, checked before anything else runs (SPEC.md §11 "Emergency triage").

1. **Clinical discriminators** over the findings of the message (:mod:`core.safety.findings`,
   :mod:`core.safety.rules`): signs in context, numbers, age, pregnancy, medication.
2. **A learned safety net** (:mod:`core.safety.classifier`) over the e5 query vector and
   character n-grams, for phrasing the rules do not know.
3. **An LLM second opinion** (:mod:`core.safety.second_opinion`), only with an endpoint
   configured and only for a message with a symptom that layers 1-2 did not flag; it can add a
   flag, never clear one.

Every flag keeps its category and the layer that raised it. Layers 1-2 run offline, call no
model but the bundled e5 embedder, and take well under the 10 ms target per message once the
vector is computed (``medbot bench triage``).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from core.safety.classifier import ModelMismatchError, Prediction, TriageClassifier, load_classifier
from core.safety.findings import Findings, add_slots, extract_findings
from core.safety.rules import layer1
from core.safety.taxonomy import BY_ID, IDS
from core.safety.urgent import Urgent, urgent_findings

log = logging.getLogger(__name__)

CATEGORIES = IDS
"""Category ids in the order a reply addresses them (crisis line first)."""

LAYER2_EXTRA_MIN = 0.5
"""When layer 1 already flagged, a layer-2 category is added only at this probability or more
(so a confident second category, e.g. self-harm beside bleeding, is not lost)."""


@dataclass(frozen=True)
class RedFlag:
    """One flag: its category id, the evidence (matched text, rule or probability) and the
    layer that raised it (1 rules, 2 classifier, 3 LLM second opinion)."""

    category: str
    matched: str
    layer: int = 1


@dataclass
class TriageResult:
    """The outcome of triage for one message.

    Attributes:
        flags: one :class:`RedFlag` per category, ordered by :data:`CATEGORIES`.
        urgent: urgent-tier findings (only when there is no flag).
        findings: what layer 1 read.
        layer2: the classifier's prediction (``None`` without a model).
        notes: what was degraded (no model, no vector).
    """

    flags: list[RedFlag]
    urgent: list[Urgent]
    findings: Findings
    layer2: Prediction | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def emergency(self) -> bool:
        """True when any layer flagged the message."""
        return bool(self.flags)

    def trace(self) -> dict[str, Any]:
        """JSON-serialisable summary for the turn's trace."""
        return {"flags": [asdict(f) for f in self.flags], "urgent": [u.rule for u in self.urgent],
                "p_emergency": None if self.layer2 is None else round(self.layer2.p_emergency, 4),
                "layer2_categories": [] if self.layer2 is None else
                [[c, round(p, 4)] for c, p in self.layer2.categories],
                "findings": self.findings.evidence(), "notes": self.notes}


def _ordered(flags: dict[str, RedFlag]) -> list[RedFlag]:
    return [flags[c] for c in CATEGORIES if c in flags]


def assess(text: str, lang: str, slots: Any = None, vec: np.ndarray | None = None,
           classifier: TriageClassifier | None = None) -> TriageResult:
    """Layers 1 and 2 on one message (no network, no LLM).

    Args:
        text: the sanitised message.
        lang: ``ko`` or ``en``.
        slots: the extractor's slots of this message (optional, see :func:`extract_findings`).
        vec: the e5 query vector of the message (optional; layer 2 then uses n-grams only).
        classifier: layer 2 (``None``: layer 1 alone).
    Returns:
        :class:`TriageResult`.
    """
    f = extract_findings(text, lang)
    pred, notes = None, []
    if classifier is not None:
        pred = classifier.predict(text, vec, f)  # trained on findings without the slots
    found = {h.category: RedFlag(h.category, h.evidence, 1) for h in layer1(add_slots(f, slots))}
    if classifier is not None:
        if vec is None:
            notes.append("layer 2 ran without the e5 vector (character n-grams only)")
        if pred.flagged:
            for i, (cat, p) in enumerate(pred.categories):
                if cat in BY_ID and cat not in found and (not found and i == 0 or p >= LAYER2_EXTRA_MIN):
                    found[cat] = RedFlag(cat, f"P(emergency) {pred.p_emergency:.2f}, P({cat}) {p:.2f}", 2)
    else:
        notes.append("layer 2 unavailable: rules only")
    flags = _ordered(found)
    return TriageResult(flags, [] if flags else urgent_findings(f), f, pred, notes)


_DEFAULT_LOCK = threading.Lock()
_DEFAULT: dict[str, Any] = {}


def default_models() -> tuple[Any, TriageClassifier | None]:
    """The bundled e5 embedder and the shipped classifier, loaded once per process (an
    explicitly cached resource). The classifier is ``None`` (with a logged error) when its
    stamp does not match, so triage falls back to layer 1 rather than failing."""
    with _DEFAULT_LOCK:
        if "embedder" not in _DEFAULT:
            from core.language.embedding import E5Embedder

            _DEFAULT["embedder"] = E5Embedder()
            try:
                _DEFAULT["classifier"] = load_classifier(_DEFAULT["embedder"].name)
            except (ModelMismatchError, FileNotFoundError) as exc:
                log.error("triage layer 2 disabled: %s", exc)
                _DEFAULT["classifier"] = None
        return _DEFAULT["embedder"], _DEFAULT["classifier"]


def red_flags(text: str, lang: str | None = None, slots: Any = None) -> list[RedFlag]:
    """Emergency flags of a message with layers 1-2 and the bundled models (convenience for
    benchmarks and tests; the graph's node passes the turn's own slots and vector).

    Args:
        text: the message; lang: ``ko`` / ``en`` (detected when ``None``).
        slots: the extractor's slots (optional).
    Returns:
        The flags, an empty list when nothing suggests an emergency now.
    """
    from core.language.text import detect_lang

    embedder, clf = default_models()
    vec = embedder.embed_query(text) if clf is not None else None
    return assess(text, lang or detect_lang(text, "ko"), slots, vec, clf).flags
