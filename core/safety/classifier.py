"""Triage layer 2: a learned safety net over the e5 query vector, character n-grams and the
context the findings carry.

Three logistic regressions (scikit-learn, ``lbfgs``, balanced class weights) read one input:
the L2-normalised multilingual-e5-small query vector the turn computes anyway (384 dimensions,
scaled by ``e5_weight``), hashed character n-grams of the message (scikit-learn's
``HashingVectorizer``, ``char_wb``, so typos, slang and mixed Korean/English share most of
their n-grams with the spelled-out words) and a short vector of layer-1 findings
(:func:`finding_vector`: which signs are present, how many were dropped as negated, past,
asked about or hypothetical, whose message it is, numbers past their thresholds). Two
**binary heads** give P(emergency): one over all three parts, one over the text alone (e5 and
n-grams, blind to the findings); the message's P(emergency) is the larger of the two, and it is
flagged when that reaches ``threshold``, chosen on out-of-fold predictions of the training
messages (stratified 5-fold cross-validation): the highest value that keeps their recall at
``target_recall``, or lower, down to the value whose out-of-fold false alarms reach
``fa_budget`` (:func:`train`). Two **category heads** (multinomial over the 20 categories,
trained on the emergencies; again one over all parts, one over the text alone) name the
category by their mean probability: the most probable one and any other within ``second_ratio``
of it.

Why this shape (``docs/benchmarks.md``, "Triage"): the findings head is precise on phrasing the
rules know (cross-validated ROC AUC 0.997) but, since the rules were written on the same
messages, it leans on them and misses what they miss: on 44 new messages written after
training it caught 8 of 20 emergencies. The text-only head generalises (20 of 20 at its own
threshold) but alone needs 12 % false alarms for 97 % recall. Their maximum keeps both: 1.8 %
out-of-fold false alarms at 97 % recall, and 18 of 20 of the new emergencies with none of the 24
new hard negatives flagged (after 418 more messages, 4,005 in all: 2.2 %
at 97.0 %, ROC AUC 0.997, the ``cv`` block of ``triage_model.json``).

The trained model ships as package data (``core/safety/data/triage_model.npz`` with its
metadata in ``triage_model.json``): coefficients as arrays, never a pickle. It is stamped with
the embedder's name and the SHA-256 of the training files; :func:`load_classifier` refuses an
artifact whose stamp does not match (:class:`ModelMismatchError`, with the command that
rebuilds it: ``medbot triage train``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from core.safety.dataset import Example, load_training, training_hash
from core.safety.findings import Findings, extract_findings
from core.safety.signs import SIGNS


log = logging.getLogger(__name__)

MODEL_NPZ = "triage_model.npz"
MODEL_JSON = "triage_model.json"
FORMAT = 3

_SIGN_NAMES = tuple(sorted([*SIGNS, "fever"]))
_REASONS = ("negated", "reassured", "past", "question", "hypothetical", "family_history", "mild", "joke",
            "recovered", "routine")
_FLAGS = ("question", "hypothetical", "child", "third_person", "pregnant", "infant", "fever", "symptom", "diabetic",
          "minimised", "figurative")
_MEDS = ("anticoagulant", "insulin_or_su", "chemotherapy", "immunosuppressed")
FINDING_NAMES: tuple[str, ...] = (tuple(f"sign:{n}" for n in _SIGN_NAMES) + tuple(f"dropped:{r}" for r in _REASONS)
                                  + _FLAGS + tuple(f"med:{m}" for m in _MEDS))
"""Names of :func:`finding_vector`'s entries (stored in the model's metadata and checked)."""


def finding_vector(f: Findings) -> np.ndarray:
    """Layer-1 findings as features (len(:data:`FINDING_NAMES`),) float32 in [0, 1]: each sign
    present now; per suppression reason, the number of signs dropped for it (capped at 3, / 3);
    message flags (question, hypothetical, child, third person, pregnant, infant under 3 months,
    fever ≥ 38 °C, a symptom now, diabetes, played down, a figure of speech); medication classes."""
    dropped = dict.fromkeys(_REASONS, 0)
    for reason in f.suppressed.values():
        dropped[reason] = dropped.get(reason, 0) + 1
    flags = {"question": f.question, "hypothetical": f.hypothetical, "child": f.child,
             "third_person": f.third_person, "pregnant": f.pregnant,
             "infant": f.age_months is not None and f.age_months < 3, "fever": f.fever,
             "symptom": f.symptom, "diabetic": f.diabetic, "minimised": f.minimised, "figurative": f.figurative}
    v = [1.0 if n in f.signs else 0.0 for n in _SIGN_NAMES]
    v += [min(dropped[r], 3) / 3 for r in _REASONS]
    v += [1.0 if flags[k] else 0.0 for k in _FLAGS]
    v += [1.0 if m in f.meds else 0.0 for m in _MEDS]
    return np.asarray(v, dtype=np.float32)


class ModelMismatchError(RuntimeError):
    """The shipped model was trained on other data, with another embedder or another feature
    set than this process uses; the message says how to rebuild it."""


@dataclass
class Config:
    """Training hyper-parameters (chosen by cross-validation on the training messages and the
    development sets, see ``docs/benchmarks.md``, "Triage")."""

    e5_weight: float = 1.0
    char_weight: float = 1.0
    findings_weight: float = 1.0
    ngram_min: int = 1
    ngram_max: int = 4
    n_features_log2: int = 16
    C: float = 10.0
    target_recall: float = 0.97
    fa_budget: float = 0.02
    second_ratio: float = 0.5
    folds: int = 5
    seed: int = 0


@dataclass
class Head:
    """One linear head: weights on the e5 vector (k, dim), on the kept n-gram columns (k, c),
    on the findings vector (k, m), and intercepts (k,)."""

    e5: np.ndarray
    char: np.ndarray
    find: np.ndarray
    intercept: np.ndarray

    def logits(self, cfg: Config, vec: np.ndarray | None, cols: np.ndarray, vals: np.ndarray,
               fv: np.ndarray) -> np.ndarray:
        out = self.intercept.astype(np.float64).copy()
        if vec is not None:
            out += cfg.e5_weight * (self.e5 @ np.asarray(vec, dtype=np.float32))
        if len(cols):
            out += cfg.char_weight * (self.char[:, cols] @ vals)
        return out + cfg.findings_weight * (self.find @ fv)


@dataclass
class TriageClassifier:
    """A trained layer-2 model.

    Attributes:
        categories: the category head's classes (category ids).
        char_cols: (c,) int32 hashed n-gram columns with a weight in either head.
        binary: the emergency head over text and findings (one row); binary_text: the
            emergency head over the text alone (its findings weights are zero); category: the
            category head over text and findings and category_text the one over the text alone
            (one row per id each).
        threshold: minimum P(emergency) to flag.
        meta: embedder name, training hash, config, feature names, cross-validated figures.
    """

    categories: list[str]
    char_cols: np.ndarray
    binary: Head
    binary_text: Head
    category: Head
    category_text: Head
    threshold: float
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        cfg = self.meta.get("config", {})
        self.config = Config(**cfg) if cfg else Config()
        self._vectorizer = _vectorizer(self.config)
        self._col_index = np.full(2 ** self.config.n_features_log2, -1, dtype=np.int64)
        self._col_index[self.char_cols] = np.arange(len(self.char_cols))

    @property
    def embedder(self) -> str:
        """The embedder whose vectors the model was trained on (``Embedder.name``)."""
        return str(self.meta.get("embedder", ""))

    def _inputs(self, text: str, findings: Findings | None, lang: str):
        x = self._vectorizer.transform([text])
        cols = self._col_index[x.indices]
        keep = cols >= 0
        f = findings if findings is not None else extract_findings(text, lang)
        return cols[keep], x.data[keep].astype(np.float32), finding_vector(f)

    def predict(self, text: str, vec: np.ndarray | None, findings: Findings | None = None,
                lang: str = "ko") -> "Prediction":
        """P(emergency), whether it reaches the threshold, and the likely categories.

        Args:
            text: the message.
            vec: its e5 query vector (dim,), L2-normalised; ``None`` when embedding failed (the
                e5 part then contributes nothing and recall is lower: the trace says so).
            findings: the message's findings *before* the extractor's slots were added
                (:func:`core.safety.findings.extract_findings` without slots), as in training;
                computed from ``text`` and ``lang`` when ``None``.
        """
        cols, vals, fv = self._inputs(text, findings, lang)
        z = max(float(h.logits(self.config, vec, cols, vals, fv)[0]) for h in (self.binary, self.binary_text))
        p_em = float(1.0 / (1.0 + np.exp(-z)))
        p = np.zeros(len(self.categories))
        for head in (self.category, self.category_text):
            logits = head.logits(self.config, vec, cols, vals, fv)
            q = np.exp(logits - logits.max())
            p += q / q.sum() / 2
        order = np.argsort(-p)
        cats = [(self.categories[i], float(p[i])) for i in order if p[i] >= self.config.second_ratio * p[order[0]]][:3]
        return Prediction(p_em, p_em >= self.threshold, cats)


@dataclass(frozen=True)
class Prediction:
    """Layer 2's output: ``p_emergency`` in [0, 1], ``flagged`` (≥ threshold) and up to three
    ``(category, P(category | emergency))`` pairs, most likely first."""

    p_emergency: float
    flagged: bool
    categories: list[tuple[str, float]]


def _vectorizer(cfg: Config):
    from sklearn.feature_extraction.text import HashingVectorizer

    return HashingVectorizer(analyzer="char_wb", ngram_range=(cfg.ngram_min, cfg.ngram_max),
                             n_features=2 ** cfg.n_features_log2, alternate_sign=False, norm="l2",
                             lowercase=True, dtype=np.float32)


def _features(texts: list[str], vecs: np.ndarray, finds: np.ndarray, cfg: Config):
    from scipy import sparse

    chars = _vectorizer(cfg).transform(texts) * cfg.char_weight
    return sparse.hstack([sparse.csr_matrix(vecs * cfg.e5_weight), chars,
                          sparse.csr_matrix(finds * cfg.findings_weight)]).tocsr()


def _fit(X, y: np.ndarray, cfg: Config):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=cfg.C, max_iter=5000, class_weight="balanced").fit(X, y)


def choose_threshold(p_emergency: np.ndarray, is_emergency: np.ndarray, target_recall: float) -> float:
    """The highest threshold whose recall on ``p_emergency`` is at least ``target_recall``.

    Args:
        p_emergency: (n,) probabilities; is_emergency: (n,) bool labels.
    Raises:
        ValueError: no emergency in the labels.
    """
    pos = np.sort(p_emergency[is_emergency])
    if len(pos) == 0:
        raise ValueError("no emergency among the labels")
    k = int(np.floor((1.0 - target_recall) * len(pos)))
    return float(pos[min(k, len(pos) - 1)])


def spend_false_alarm_budget(p_emergency: np.ndarray, is_emergency: np.ndarray, budget: float) -> float:
    """The lowest threshold whose false-alarm rate on ``p_emergency`` stays at most ``budget``.

    Args:
        p_emergency: (n,) probabilities; is_emergency: (n,) bool labels; budget: in [0, 1].
    Returns:
        A threshold just above the ``floor(budget * negatives) + 1``-th highest non-emergency
        probability (1.0 with no non-emergency, 0.0 when the budget covers them all).
    """
    neg = np.sort(p_emergency[~is_emergency])[::-1]
    if len(neg) == 0:
        return 1.0
    k = int(np.floor(budget * len(neg)))
    return 0.0 if k >= len(neg) else float(np.nextafter(neg[k], 1.0))


def train(examples: list[Example], vecs: np.ndarray, embedder: str, cfg: Config | None = None,
          data_hash: str | None = None) -> TriageClassifier:
    """Train layer 2 and choose its threshold by cross-validation.

    Args:
        examples: labelled messages (:func:`core.safety.dataset.load_training`).
        vecs: (n, dim) e5 query vectors of their texts, in the same order.
        embedder: the embedder's name (stamped into the model).
        cfg: hyper-parameters (defaults: :class:`Config`).
        data_hash: the training files' SHA-256 (defaults to the package's).
    Returns:
        The model trained on every example, with ``meta["cv"]``: out-of-fold recall, false-alarm
        rate and ROC AUC of P(emergency) (the larger of the two binary heads) at the chosen
        threshold: the lower of the highest one that keeps ``cfg.target_recall`` and the lowest
        one whose out-of-fold false alarms stay within ``cfg.fa_budget`` (a better model spends
        the false-alarm budget on recall instead of raising the threshold).
    Raises:
        ValueError: no emergency or no non-emergency among the examples.
    """
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import StratifiedKFold

    cfg = cfg or Config()
    finds = np.stack([finding_vector(extract_findings(e.text, e.lang)) for e in examples])
    X = _features([e.text for e in examples], vecs, finds, cfg)
    y = np.array([e.emergency for e in examples])
    if y.all() or not y.any():
        raise ValueError("training needs emergencies and non-emergencies")
    strata = np.array([e.category for e in examples])
    Xt = _features([e.text for e in examples], vecs, np.zeros_like(finds), cfg)  # the text alone
    oof = np.zeros(len(y))
    for trn, tst in StratifiedKFold(cfg.folds, shuffle=True, random_state=cfg.seed).split(X, strata):
        oof[tst] = np.maximum(_fit(X[trn], y[trn], cfg).predict_proba(X[tst])[:, 1],
                              _fit(Xt[trn], y[trn], cfg).predict_proba(Xt[tst])[:, 1])
    threshold = min(choose_threshold(oof, y, cfg.target_recall), spend_false_alarm_budget(oof, y, cfg.fa_budget))
    binary, binary_text = _fit(X, y, cfg), _fit(Xt, y, cfg)
    categories = sorted({e.category for e in examples if e.emergency})
    yc = np.array([categories.index(e.category) for e in examples if e.emergency])
    cats = [_fit(M[y], yc, cfg) if len(categories) > 1 else None for M in (X, Xt)]
    cols, heads = _heads([binary, binary_text, *cats], len(categories), vecs.shape[1], X.shape[1], cfg)
    cv = {"folds": cfg.folds, "recall": round(float((oof[y] >= threshold).mean()), 4),
          "false_alarm_rate": round(float((oof[~y] >= threshold).mean()), 4),
          "roc_auc": round(float(roc_auc_score(y, oof)), 4), "messages": int(len(y)),
          "emergencies": int(y.sum())}
    meta = {"format": FORMAT, "embedder": embedder, "training_sha256": data_hash or training_hash(),
            "config": cfg.__dict__.copy(), "cv": cv, "threshold": threshold, "findings": list(FINDING_NAMES)}
    return TriageClassifier(categories if cats[0] is not None else categories[:1], cols, *heads, threshold, meta)


def _heads(models: list, n_categories: int, dim: int, width: int, cfg: Config) -> tuple[np.ndarray, list[Head]]:
    """Split fitted models (binary, binary text-only, category, category text-only; a category
    model is ``None`` with one category) into :class:`Head` s over the kept n-gram columns.

    Returns:
        (kept column indices (c,), the four heads).
    """
    rows_w, rows_b = [], []
    for i, m in enumerate(models):
        w, c = (m.coef_, m.intercept_) if m is not None else (np.zeros((1, width)), np.zeros(1))
        if i >= 2 and w.shape[0] == 1 and n_categories == 2:  # scikit-learn keeps one row for two classes
            w, c = np.vstack([-w / 2, w / 2]), np.array([-c[0] / 2, c[0] / 2])
        rows_w.append(w)
        rows_b.append(c)
    W, b = np.vstack(rows_w).astype(np.float32), np.concatenate(rows_b).astype(np.float32)
    k = n_categories if models[2] is not None else 1
    nchar = 2 ** cfg.n_features_log2
    char = W[:, dim:dim + nchar]
    cols = np.flatnonzero(np.abs(char).max(axis=0) > 0).astype(np.int32)
    return cols, [Head(W[rows, :dim], char[rows][:, cols], W[rows, dim + nchar:], b[rows])
                  for rows in (slice(0, 1), slice(1, 2), slice(2, 2 + k), slice(2 + k, 2 + 2 * k))]


def save(model: TriageClassifier, directory: Path) -> tuple[Path, Path]:
    """Write ``triage_model.npz`` (float16 n-gram weights, float32 the rest) and
    ``triage_model.json`` into ``directory``. Returns both paths."""
    directory.mkdir(parents=True, exist_ok=True)
    npz, js = directory / MODEL_NPZ, directory / MODEL_JSON
    arrays = {"char_cols": model.char_cols}
    for name, head in (("binary", model.binary), ("binary_text", model.binary_text), ("category", model.category),
                       ("category_text", model.category_text)):
        arrays.update({f"{name}_e5": head.e5, f"{name}_char": head.char.astype(np.float16),
                       f"{name}_find": head.find, f"{name}_intercept": head.intercept})
    with open(npz, "wb") as fh:
        np.savez_compressed(fh, **arrays)
    meta = {**model.meta, "categories": model.categories, "threshold": model.threshold,
            "npz_sha256": hashlib.sha256(npz.read_bytes()).hexdigest()}
    js.write_text(json.dumps(meta, ensure_ascii=False, indent=1) + "\n", "utf-8")
    return npz, js


def read(directory: Path | None = None) -> TriageClassifier:
    """Load a saved model (the package's when ``directory`` is ``None``).

    Raises:
        FileNotFoundError: no model there.
        ModelMismatchError: the arrays do not match the metadata's checksum, or the model was
            made by another format or feature set than this code's.
    """
    base = Path(directory) if directory else Path(str(resources.files("core.safety").joinpath("data")))
    meta = json.loads((base / MODEL_JSON).read_text("utf-8"))
    raw = (base / MODEL_NPZ).read_bytes()
    if hashlib.sha256(raw).hexdigest() != meta.get("npz_sha256"):
        raise ModelMismatchError(f"{base / MODEL_NPZ} does not match {MODEL_JSON}: rebuild with `medbot triage train`")
    if meta.get("format") != FORMAT or meta.get("findings") != list(FINDING_NAMES):
        raise ModelMismatchError("triage model was made by another version of the features: "
                                 "rebuild with `medbot triage train`")
    with np.load(base / MODEL_NPZ, allow_pickle=False) as z:
        a = {k: z[k] for k in z.files}
    heads = [Head(a[f"{n}_e5"].astype(np.float32), a[f"{n}_char"].astype(np.float32),
                  a[f"{n}_find"].astype(np.float32), a[f"{n}_intercept"].astype(np.float32))
             for n in ("binary", "binary_text", "category", "category_text")]
    return TriageClassifier(meta["categories"], a["char_cols"], *heads, float(meta["threshold"]), meta)


def check_stamp(model: TriageClassifier, embedder: str, data_hash: str | None = None) -> None:
    """Refuse a model trained with another embedder or on other training data.

    Raises:
        ModelMismatchError: naming what differs and the command that rebuilds the model.
    """
    problems = []
    if model.embedder != embedder:
        problems.append(f"embedder {model.embedder!r} != {embedder!r}")
    expected = data_hash or training_hash()
    if model.meta.get("training_sha256") != expected:
        problems.append("the training messages changed since it was trained")
    if problems:
        raise ModelMismatchError("triage model is stale (" + "; ".join(problems) +
                                 "): run `medbot triage train` (or `make triage-model`)")


_LOCK = threading.Lock()
_CACHE: dict[str, TriageClassifier | Exception] = {}


def load_classifier(embedder: str) -> TriageClassifier:
    """The shipped model, loaded once per process and checked against ``embedder`` (an
    :class:`core.language.embedding.Embedder`'s ``name``) and the shipped training data.

    Raises:
        ModelMismatchError: see :func:`check_stamp`.
        FileNotFoundError: the package has no model (run ``medbot triage train``).
    """
    with _LOCK:
        if embedder not in _CACHE:
            try:
                model = read()
                check_stamp(model, embedder)
                _CACHE[embedder] = model
            except (ModelMismatchError, FileNotFoundError) as exc:
                _CACHE[embedder] = exc  # checked once per process, not on every turn
        hit = _CACHE[embedder]
        if isinstance(hit, Exception):
            raise hit
        return hit


def embed_texts(texts: list[str], embedder, cache_file: Path | None = None) -> np.ndarray:
    """e5 query vectors (n, dim) of ``texts``, reusing a cache keyed by SHA-256 of the text
    (``cache_file``, an ``.npz`` of keys and vectors; written back when new texts were embedded)."""
    cache: dict[str, np.ndarray] = {}
    if cache_file and cache_file.exists():
        with np.load(cache_file, allow_pickle=False) as z:
            if str(z["embedder"]) == embedder.name:
                cache = dict(zip(z["keys"].tolist(), z["vecs"]))
    keys = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
    missing = [i for i, k in enumerate(keys) if k not in cache]
    for i in missing:
        cache[keys[i]] = embedder.embed_query(texts[i])
    if cache_file and missing:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        np.savez(cache_file, keys=np.array(list(cache)), vecs=np.stack(list(cache.values())),
                 embedder=np.array(embedder.name))
    return np.stack([cache[k] for k in keys]) if keys else np.zeros((0, embedder.dim), np.float32)


def train_package_model(embedder, out_dir: Path, cache_file: Path | None = None,
                        cfg: Config | None = None) -> TriageClassifier:
    """Train on the package's training messages and save next to them (``medbot triage train``)."""
    examples = load_training()
    vecs = embed_texts([e.text for e in examples], embedder, cache_file)
    model = train(examples, vecs, embedder.name, cfg)
    save(model, out_dir)
    log.info("triage model: %s", model.meta["cv"])
    return model
