"""Calibrated probabilities from features: a logistic model whose parameters ship as package
data (``core/verification/data/<backend>.json``).

The model is Platt scaling generalised to several features (Platt 1999, "Probabilistic outputs
for support vector machines"): ``P(supported) = 1 / (1 + exp(-(b + Σ wᵢ·xᵢ)))``, fitted offline
by :mod:`core.verification.fit` (scikit-learn, the ``train`` extra) on the labelled development
split; the runtime only reads numbers. Each file records the SHA-256 of the training data, how
many items it had and its Brier score, so a shipped model can be traced to what it learnt from.

When no file is shipped for a back end, :data:`PRIORS` are used: weights set by hand before
any data was seen (the "untuned checker" of the first held-out run), with the sign each feature
must have.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

OFFLINE_FEATURES = ("cos_max", "lex", "novel", "verbatim", "num_unmatched", "unit_mismatch",
                    "concept_unmatched", "negation_mismatch", "hedge_dropped", "absolute_added",
                    "has_evidence")
ENDPOINT_FEATURES = ("llm_logit", "llm_missing", "offline_logit")
"""The endpoint's model stacks the model's own log-odds on the offline model's logit (few
parameters: the endpoint's labelled development run is small, each item costs a call)."""


@dataclass
class Calibration:
    """A logistic model over named features.

    Attributes:
        backend: ``offline`` or ``endpoint``.
        features: feature names, in ``coef`` order.
        coef: one weight per feature.
        intercept: the bias b.
        floor: the support floor: a sentence with P below it fails.
        trained_on: SHA-256 of the training JSONL (``""`` for a prior), ``n`` items, Brier
            score on the training data; ``model`` names the endpoint's model for ``endpoint``.
    """

    backend: str
    features: tuple[str, ...]
    coef: tuple[float, ...]
    intercept: float
    floor: float = 0.5
    trained_on: dict[str, Any] = field(default_factory=dict)

    def logit(self, x: np.ndarray) -> float:
        """b + Σ wᵢ·xᵢ for one feature vector (``features`` order)."""
        return self.intercept + float(np.dot(np.asarray(self.coef), x))

    def probability(self, x: np.ndarray) -> float:
        """P(supported) for one feature vector (``features`` order)."""
        z = self.logit(x)
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))

    def to_json(self) -> str:
        """The file format (what :func:`load` reads)."""
        d = asdict(self)
        d["features"], d["coef"] = list(self.features), [round(c, 6) for c in self.coef]
        return json.dumps(d, indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Calibration":
        """Build from :meth:`to_json`'s dict.

        Raises:
            ValueError: feature names and weights differ in number.
        """
        if len(d["features"]) != len(d["coef"]):
            raise ValueError("calibration: features and coef differ in length")
        return cls(d["backend"], tuple(d["features"]), tuple(float(c) for c in d["coef"]),
                   float(d["intercept"]), float(d.get("floor", 0.5)), dict(d.get("trained_on") or {}))


# Hand-set before any labelled item was seen: a close paraphrase (cosine 0.9, all terms found)
# scores about 0.9; each explicit mismatch (number, unit, name, negation) costs more than the
# similarity can give back.
_PRIOR_OFFLINE = dict(zip(OFFLINE_FEATURES, (12.0, 3.0, -0.3, 1.0, -2.5, -2.5, -2.5, -2.0, -1.0, -1.0, 3.0)))
PRIORS: dict[str, Calibration] = {
    "offline": Calibration("offline", OFFLINE_FEATURES, tuple(_PRIOR_OFFLINE.values()), -13.0),
    # the model's own log-odds, nothing else: P = P(true) / (P(true) + P(false))
    "endpoint": Calibration("endpoint", ENDPOINT_FEATURES, (1.0, 0.0, 0.0), 0.0),
}


@lru_cache(maxsize=8)
def load(backend: str, path: str | None = None) -> Calibration:
    """The shipped calibration of ``backend`` (``offline`` / ``endpoint``), or ``path``; the
    prior of :data:`PRIORS` when nothing is shipped.

    Raises:
        KeyError: an unknown back end with no file.
        ValueError: a malformed file.
    """
    if path is not None:
        return Calibration.from_dict(json.loads(Path(path).read_text("utf-8")))
    res = resources.files("core.verification").joinpath(f"data/{backend}.json")
    if res.is_file():
        return Calibration.from_dict(json.loads(res.read_text("utf-8")))
    return PRIORS[backend]
