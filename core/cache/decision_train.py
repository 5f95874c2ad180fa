"""Training of the cache pair decision (:mod:`core.cache.decision`): ``medbot cache train``.

Input: the training pairs of :mod:`core.cache.pair_data` (the team's pairs in both languages
and the Medical Question Pairs of doctors 1–4), their e5 vectors, concepts and question types.
Steps (deterministic: fixed seeds, no early stopping):

1. grouped cross-validation (leave one group out: a doctor or a team file) of the tree
   ensemble gives out-of-fold log-odds for every training pair;
2. Platt scaling of those log-odds gives the calibration; a second Platt fit of the cosine
   alone on the MQP pairs gives q(cos);
3. the operating point: over a grid of ``floor`` values, the lowest ``threshold`` whose
   out-of-fold false-hit rate (after the hard vetoes) is ≤ :data:`TARGET_FHR`, keeping the
   floor (and ``long_words``) with the highest out-of-fold recall;
4. the ensemble is refitted on every training pair and written as arrays.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.cache.decision import MODEL_JSON, MODEL_NPZ, VETOES, PairModel, read
from core.cache.pair_data import Pair
from core.cache.pair_features import FEATURE_NAMES, QuestionView, pair_features, view

TARGET_FHR = 0.003
FLOORS = (0.3, 0.5, 0.7, 1.01)
"""Candidate floors of the cosine branch (1.01: no cosine branch, the model alone)."""
LONG_WORDS = (12.0, 16.0, 20.0, 1e9)
"""Candidate mean word counts from which the cosine branch needs no floor (1e9: never)."""
PARAMS = {"max_depth": 2, "max_iter": 150, "learning_rate": 0.05, "l2_regularization": 1.0,
          "early_stopping": False, "random_state": 0}
"""Ensemble settings chosen by grouped cross-validation on the training pairs (depth 2 and
L2 1.0 gave the best out-of-fold recall at ≤ 0.3 % false hits among depth 2–4, 150–400 trees,
monotone or not; docs/benchmarks.md "Cache pair decision")."""


def build_views(pairs: list[Pair], extractor, vectors) -> dict[tuple[str, str], QuestionView]:  # noqa: ANN001
    """Views of every question of ``pairs`` by (text, lang).

    Args:
        extractor: :class:`core.extraction.extractor.Extractor`.
        vectors: ``embed(texts) -> (n, 384)`` e5 query vectors (e.g.
            :class:`core.qtype.train.VectorCache`).
    """
    from core.qtype.model import classify_question

    texts = list(dict.fromkeys((q, p.lang) for p in pairs for q in (p.a, p.b)))
    vecs = vectors.embed([t for t, _ in texts]) if texts else []
    out = {}
    for (t, lang), v in zip(texts, vecs):
        out[(t, lang)] = view(t, lang, v, extractor.extract(t, lang).concepts,
                              classify_question(t, lang, vec=v))
    return out


def feature_matrix(pairs: list[Pair], views: dict) -> np.ndarray:
    """(n, len(FEATURE_NAMES)) features of ``pairs`` (``a`` cached, ``b`` asked)."""
    if not pairs:
        return np.zeros((0, len(FEATURE_NAMES)))
    return np.stack([pair_features(views[(p.a, p.lang)], views[(p.b, p.lang)]) for p in pairs])


def _ensemble():
    from sklearn.ensemble import HistGradientBoostingClassifier

    mono = [1 if n.startswith("cosine") else 0 for n in FEATURE_NAMES]
    return HistGradientBoostingClassifier(monotonic_cst=mono, **PARAMS)


def oof_log_odds(X: np.ndarray, y: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Out-of-fold raw log-odds, one fold per group."""
    from sklearn.model_selection import LeaveOneGroupOut

    z = np.zeros(len(y))
    for tr, te in LeaveOneGroupOut().split(X, y, groups):
        z[te] = _ensemble().fit(X[tr], y[tr]).decision_function(X[te])
    return z


def platt(z: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(a, b) of P = σ(a·z + b) fitted by logistic regression (Platt 1999)."""
    from sklearn.linear_model import LogisticRegression

    lr = LogisticRegression(C=1e6, max_iter=1000).fit(z.reshape(-1, 1), y)
    return float(lr.coef_[0, 0]), float(lr.intercept_[0])


def _sig(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(x, -50, 50)))


def scores(p: np.ndarray, q: np.ndarray, floor: float, log_words: np.ndarray | None = None,
           long_words: float = 1e9) -> np.ndarray:
    """The decision's score per pair: max(P, q) where P ≥ floor or the pair's
    log(1 + mean words) ≥ log(1 + long_words), else P."""
    gate = p >= floor
    if log_words is not None:
        gate = gate | (log_words >= np.log1p(long_words))
    return np.where(gate, np.maximum(p, q), p)


def lowest_threshold(s: np.ndarray, y: np.ndarray, vetoed: np.ndarray, fhr: float) -> float:
    """The lowest threshold on ``s`` whose false-hit rate (vetoed pairs never hit) is ≤ ``fhr``."""
    neg = np.sort(s[~y & ~vetoed])[::-1]
    allowed = int(math.floor(fhr * int((~y).sum())))
    if allowed >= len(neg):
        return 0.0
    return float(np.nextafter(neg[allowed], 1.0))


def rates(hit: np.ndarray, y: np.ndarray) -> dict:
    """Precision, recall, false hits and false-hit rate of boolean ``hit`` against ``y``."""
    tp, fp = int((hit & y).sum()), int((hit & ~y).sum())
    return {"pairs": len(y), "paraphrases": int(y.sum()), "precision": round(tp / (tp + fp), 4) if tp + fp else 1.0,
            "recall": round(tp / max(int(y.sum()), 1), 4), "false_hits": fp,
            "false_hit_rate": round(fp / max(int((~y).sum()), 1), 4)}


def vetoed(X: np.ndarray, names=tuple(VETOES)) -> np.ndarray:  # noqa: ANN001
    """Boolean (n,): a hard veto applies."""
    idx = [FEATURE_NAMES.index(n) for n in names]
    return (X[:, idx] > 0).any(axis=1) if idx else np.zeros(len(X), bool)


@dataclass
class Trained:
    """A fitted ensemble, its calibration, operating point and cross-validation report."""

    model: object
    platt: tuple[float, float]
    cosine_platt: tuple[float, float]
    threshold: float
    floor: float
    long_words: float
    cv: dict


def train(pairs: list[Pair], X: np.ndarray) -> Trained:
    """Steps 1–4 of the module docstring on ``pairs`` and their features ``X``."""
    from sklearn.metrics import brier_score_loss, roc_auc_score

    y = np.array([p.same for p in pairs])
    groups = np.array([p.group for p in pairs])
    z = oof_log_odds(X, y, groups)
    a, b = platt(z, y)
    mqp = np.char.startswith(groups.astype(str), "mqp")
    ca, cb = platt(X[mqp, 0] if mqp.any() else X[:, 0], y[mqp] if mqp.any() else y)
    p, q, vet = _sig(a * z + b), _sig(ca * X[:, 0] + cb), vetoed(X)
    lw = X[:, FEATURE_NAMES.index("log_words")]
    best = None
    for floor in FLOORS:
        for long_words in LONG_WORDS:
            s = scores(p, q, floor, lw, long_words)
            t = lowest_threshold(s, y, vet, TARGET_FHR)
            r = rates((s >= t) & ~vet, y)
            if best is None or r["recall"] > best[3]["recall"]:
                best = (floor, long_words, t, r)
    floor, long_words, t, r = best
    hit = (scores(p, q, floor, lw, long_words) >= t) & ~vet
    cv = {"folds": sorted(set(groups.tolist())), "oof_auc": round(float(roc_auc_score(y, z)), 4),
          "oof_auc_cosine": round(float(roc_auc_score(y, X[:, 0])), 4),
          "brier_raw": round(float(brier_score_loss(y, _sig(z))), 4),
          "brier_platt": round(float(brier_score_loss(y, p)), 4), "at_threshold": r,
          "by_group": {g: rates(hit[groups == g], y[groups == g]) for g in sorted(set(groups.tolist()))}}
    model = _ensemble().fit(X, y)
    return Trained(model, (a, b), (ca, cb), t, floor, long_words, cv)


def export_trees(model) -> dict[str, np.ndarray]:  # noqa: ANN001
    """The fitted ensemble's trees as concatenated node arrays (``feature``, ``threshold``,
    ``left``, ``right``, ``value``, ``is_leaf``, ``roots``). Internal nodes get the
    count-weighted mean of their leaves' values (for path attributions). Reads
    scikit-learn's ``_predictors`` (one ``TreePredictor`` per boosting round)."""
    cols = {k: [] for k in ("feature", "threshold", "left", "right", "value", "is_leaf")}
    roots, offset = [], 0
    for (pred,) in model._predictors:
        nodes = pred.nodes
        value = nodes["value"].astype(np.float64).copy()
        for i in sorted(range(len(nodes)), key=lambda i: -int(nodes["depth"][i])):
            if not nodes["is_leaf"][i]:
                lft, rgt = int(nodes["left"][i]), int(nodes["right"][i])
                cl, cr = float(nodes["count"][lft]), float(nodes["count"][rgt])
                value[i] = (cl * value[lft] + cr * value[rgt]) / max(cl + cr, 1.0)
        roots.append(offset)
        cols["feature"].append(nodes["feature_idx"].astype(np.int32))
        cols["threshold"].append(nodes["num_threshold"].astype(np.float64))
        cols["left"].append(nodes["left"].astype(np.int32) + offset)
        cols["right"].append(nodes["right"].astype(np.int32) + offset)
        cols["value"].append(value)
        cols["is_leaf"].append(nodes["is_leaf"].astype(np.uint8))
        offset += len(nodes)
    out = {k: np.concatenate(v) for k, v in cols.items()}
    out["roots"] = np.asarray(roots, dtype=np.int32)
    return out


def pairs_hash(pairs: list[Pair]) -> str:
    """SHA-256 of the training pairs (text, label, group), in order."""
    h = hashlib.sha256()
    for p in pairs:
        h.update(f"{p.a}\x1f{p.b}\x1f{int(p.same)}\x1f{p.lang}\x1f{p.group}\n".encode("utf-8"))
    return h.hexdigest()


def save(trained: Trained, pairs: list[Pair], embedder: str, out_dir: Path) -> PairModel:
    """Write ``pair_model.npz`` and ``pair_model.json`` to ``out_dir``; returns the model as
    read back."""
    out_dir.mkdir(parents=True, exist_ok=True)
    arrays = export_trees(trained.model)
    np.savez_compressed(out_dir / MODEL_NPZ, **arrays)
    meta = {"feature_names": list(FEATURE_NAMES), "embedder": embedder,
            "baseline": float(np.ravel(trained.model._baseline_prediction)[0]),
            "platt": list(trained.platt), "cosine_platt": list(trained.cosine_platt),
            "threshold": trained.threshold, "floor": trained.floor,
            "long_words": trained.long_words, "vetoes": list(VETOES),
            "params": PARAMS, "target_false_hit_rate": TARGET_FHR, "cv": trained.cv,
            "training_pairs": len(pairs), "training_sha256": pairs_hash(pairs),
            "groups": sorted({p.group for p in pairs})}
    (out_dir / MODEL_JSON).write_text(json.dumps(meta, ensure_ascii=False, indent=1) + "\n", "utf-8")
    return read(out_dir)
