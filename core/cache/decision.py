"""The response cache's learned pair decision: may the cached answer of question ``a`` serve
question ``b``?

The decision reads :func:`core.cache.pair_features.pair_features` of the two questions and
gives P(same answer) from a small gradient-boosted tree ensemble (scikit-learn's
``HistGradientBoostingClassifier``, log loss, depth 2, increasing in the cosine) whose output
is recalibrated by Platt scaling (Platt 1999, "Probabilistic outputs for support vector
machines") fitted on grouped cross-validation predictions (:mod:`core.cache.decision_train`).

A candidate is served when, and only when, no hard veto applies (:func:`hard_vetoes`) and
either

- P ≥ ``threshold`` (the learned branch), or
- the calibrated cosine q(cos) = σ(α·cos + β) ≥ ``threshold`` and either P ≥ ``floor`` (a
  pair the model does not reject) or the two questions are long (a mean of at least
  ``long_words`` words: long, multi-clause patient questions, where the structured features
  are noisy and the e5 cosine was the better evidence in cross-validation).

The single score :meth:`PairModel.score` = max(P, q(cos)) when that gate holds, else P,
orders the pairs for the precision–recall curve; ``threshold`` is the operating point chosen on held-out
folds for a false-hit rate ≤ 0.3 %.

The trained model ships as package data (``core/cache/data/pair_model.npz``: the trees as
plain arrays, never a pickle; ``pair_model.json``: feature names, calibration, operating
point, cross-validation figures, embedder). ``medbot cache train`` rebuilds both
deterministically; nothing is trained at run time.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np

from core.cache.pair_features import FEATURE_NAMES, QuestionView, pair_features

MODEL_NPZ = "pair_model.npz"
MODEL_JSON = "pair_model.json"

VETOES: dict[str, str] = {
    "quantities_differ": "a number with the same unit differs, or the same number has another unit",
    "qwords_differ": "the question words ask for another kind of answer (how much / when / why)",
    "polarity_opposite": "a contrast class takes opposite poles (before/after, more/less, ...)",
    "soft_conflict": "can/cannot, safe/dangerous, acute/chronic on opposite poles",
    "prevention_differ": "one asks about prevention, the other not (primary vs secondary)",
}
"""Hard vetoes after the decision (feature name -> reason): a pair for which the feature is
non-zero is never a hit, whatever P. Measured by grouped cross-validation on the training
pairs (docs/benchmarks.md "Cache pair decision"): these four cost no out-of-fold recall at
≤ 0.3 % false hits; vetoing differing question words or question-type cues as well cost a
fifth of it (0.137 -> 0.108), so those stay features the model weighs."""


class ModelMismatchError(RuntimeError):
    """The artifact was made for other features or another embedder (rebuild it with
    ``medbot cache train``)."""


@dataclass
class Decision:
    """One pair's decision: ``hit``, the calibrated ``probability``, the cosine, the branch
    that decided (``model``/``cosine``/``""``), the vetoes that applied and the features that
    moved P most (name, value, contribution to the log-odds)."""

    hit: bool
    probability: float
    cosine: float
    score: float
    branch: str
    vetoes: list[str] = field(default_factory=list)
    deciding: list[tuple[str, float, float]] = field(default_factory=list)
    llm_p_yes: float | None = None

    def trace(self) -> dict:
        """JSON-ready summary for the turn's trace."""
        extra = {} if self.llm_p_yes is None else {"llm_p_yes": round(self.llm_p_yes, 4)}
        return {**extra, "hit": self.hit, "probability": round(self.probability, 4),
                "cosine": round(self.cosine, 4), "score": round(self.score, 4),
                "branch": self.branch, "vetoes": self.vetoes,
                "deciding": [{"feature": n, "value": round(v, 4), "log_odds": round(c, 4)}
                             for n, v, c in self.deciding]}


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))


@dataclass
class PairModel:
    """The trees (one array per node field, trees concatenated; ``roots`` index each tree's
    first node), the raw baseline log-odds, Platt (``a``, ``b``) and the operating point."""

    feature_names: tuple[str, ...]
    feature: np.ndarray
    threshold_value: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    is_leaf: np.ndarray
    roots: np.ndarray
    baseline: float
    platt: tuple[float, float]
    cosine_platt: tuple[float, float]
    threshold: float
    floor: float
    long_words: float
    vetoes: tuple[str, ...]
    meta: dict

    def raw(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """(log-odds of the trees, per-feature contributions (Saabas 2014 path attribution:
        each split's change of the expected value goes to its feature)). All trees are walked
        together, one level at a time (NumPy; about 0.05 ms for 150 trees)."""
        x = np.asarray(x, dtype=np.float64)
        node = self.roots.astype(np.int64)
        total = self.baseline + float(self.value[node].sum())
        contrib = np.zeros(len(self.feature_names))
        inner = ~self.is_leaf[node]
        while inner.any():
            cur = node[inner]
            go_left = x[self.feature[cur]] <= self.threshold_value[cur]
            nxt = np.where(go_left, self.left[cur], self.right[cur])
            delta = self.value[nxt] - self.value[cur]
            np.add.at(contrib, self.feature[cur], delta)
            total += float(delta.sum())
            node[inner] = nxt
            inner = ~self.is_leaf[node]
        return total, contrib

    def probability(self, x: np.ndarray) -> float:
        """Calibrated P(same answer) of a feature vector (len(:data:`FEATURE_NAMES`),)."""
        z, _ = self.raw(x)
        return _sigmoid(self.platt[0] * z + self.platt[1])

    def cosine_probability(self, cos: float) -> float:
        """q(cos): P(same) from the cosine alone (Platt-scaled on the training pairs)."""
        return _sigmoid(self.cosine_platt[0] * cos + self.cosine_platt[1])

    def score(self, p: float, cos: float, log_words: float) -> float:
        """max(P, q(cos)) when P ≥ floor or log(1 + mean words) ≥ log(1 + long_words), else P
        (see the module docstring)."""
        gate = p >= self.floor or log_words >= math.log1p(self.long_words)
        return max(p, self.cosine_probability(cos)) if gate else p

    def decide_features(self, x: np.ndarray, top: int = 4) -> Decision:
        """The :class:`Decision` for one feature vector."""
        z, contrib = self.raw(x)
        p = _sigmoid(self.platt[0] * z + self.platt[1])
        cos = float(x[0])
        s = self.score(p, cos, float(x[self.feature_names.index("log_words")]))
        vetoes = [v for v in self.vetoes if x[self.feature_names.index(v)] > 0]
        branch = "model" if p >= self.threshold else ("cosine" if s >= self.threshold else "")
        order = np.argsort(-np.abs(contrib))[:top]
        deciding = [(self.feature_names[i], float(x[i]), float(contrib[i] * self.platt[0]))
                    for i in order if contrib[i] != 0]
        return Decision(bool(branch) and not vetoes, p, cos, s, branch, vetoes, deciding)

    def decide(self, a: QuestionView, b: QuestionView) -> Decision:
        """The :class:`Decision` for cached question ``a`` and new question ``b``."""
        return self.decide_features(pair_features(a, b))


def _data_dir() -> Path:
    return Path(str(resources.files("core.cache").joinpath("data")))


def read(directory: Path | None = None) -> PairModel:
    """The model in ``directory`` (default: the package's ``core/cache/data``).

    Raises:
        FileNotFoundError: a file is missing.
        ModelMismatchError: the artifact's feature names are not this code's.
    """
    d = directory or _data_dir()
    meta = json.loads((d / MODEL_JSON).read_text("utf-8"))
    if tuple(meta["feature_names"]) != FEATURE_NAMES:
        raise ModelMismatchError("the cache pair model was trained on other features: "
                                 "run `medbot cache train`")
    with np.load(d / MODEL_NPZ, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    return PairModel(
        FEATURE_NAMES, arrays["feature"], arrays["threshold"], arrays["left"], arrays["right"],
        arrays["value"], arrays["is_leaf"].astype(bool), arrays["roots"], float(meta["baseline"]),
        tuple(meta["platt"]), tuple(meta["cosine_platt"]), float(meta["threshold"]),
        float(meta["floor"]), float(meta["long_words"]), tuple(meta["vetoes"]), meta)


@lru_cache(maxsize=1)
def default_model() -> PairModel:
    """The shipped model (read once per process)."""
    return read()
