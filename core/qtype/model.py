"""Consumer-health question types (Korean and English): what a question asks about its concepts.

The label set (``QTYPES``) follows MedQuAD's ``qtype`` labels (Ben Abacha & Demner-Fushman 2019,
"A question-entailment approach to question answering", BMC Bioinformatics 20:511) plus the drug
question types of the NLM consumer health question taxonomy (Kilicoglu et al. 2018, "Semantic
annotation of consumer health questions", BMC Bioinformatics 19:34; the TREC 2017 LiveQA medical
track): side effects, dosage, interactions, contraindications, usage; and ``test_result`` (what a
measured value means), ``lifestyle`` (diet, exercise, daily life) and ``other``. The ids are fixed
by the team's taxonomy brief; MedQuAD's ``exams and tests`` is ``exams_and_tests``, ``genetic
changes`` is ``genetic_changes`` and its one ``support groups`` row is ``information``.

The model is a multinomial logistic regression over the question's multilingual-e5-small query
vector (the vector the turn computes anyway for the cache and dense retrieval). Character and
word n-gram TF-IDF features were measured too and generalised far worse to unseen consumer
wording (docs/benchmarks.md, "Question types"). It is trained by ``medbot qtype train``
(:mod:`core.qtype.train`) on MedQuAD's 16,407 questions and the team's Korean and English
questions (``core/qtype/data/qtype_frames.jsonl``); the weights ship as ``core/qtype/data/qtype_model.npz``
(plain arrays, loaded with ``allow_pickle=False``) beside ``qtype_model.json`` (labels, the
embedder's name, the training data's SHA-256, held-out accuracy). Inference is one (23 × 384)
matrix product: no scikit-learn at run time.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np

QTYPES: tuple[str, ...] = (
    "information", "symptoms", "causes", "treatment", "prevention", "exams_and_tests",
    "test_result", "outlook", "complications", "susceptibility", "inheritance", "genetic_changes",
    "frequency", "research", "considerations", "stages", "side_effects", "dosage", "interactions",
    "contraindications", "usage", "lifestyle", "other",
)
"""The question-type ids, in the order of the team's taxonomy brief."""

MODEL_NPZ = "qtype_model.npz"
MODEL_META = "qtype_model.json"
_VECTOR_MEMO = 512  # recent question vectors kept, so a turn's second call costs no embedding


@dataclass(frozen=True)
class QuestionType:
    """A question's type: ``label`` (one of :data:`QTYPES`), its probability ``confidence``
    (0..1) and the probability of every label in ``scores`` (summing to 1)."""

    label: str
    confidence: float
    scores: dict[str, float]


class QTypeModel:
    """The trained linear layer over e5 query vectors.

    Args:
        coef: (L, D) float32 weights; ``intercept``: (L,); ``labels``: the L label ids.
        meta: what training recorded (``embedder``, ``team_data_sha256``, held-out accuracy, ...).
    Raises:
        ValueError: shapes disagree or a label is not in :data:`QTYPES`.
    """

    def __init__(self, coef: np.ndarray, intercept: np.ndarray, labels: list[str],
                 meta: dict | None = None) -> None:
        if coef.ndim != 2 or coef.shape[0] != len(labels) or intercept.shape != (len(labels),):
            raise ValueError("qtype model: shapes of coef, intercept and labels disagree")
        unknown = [lbl for lbl in labels if lbl not in QTYPES]
        if unknown:
            raise ValueError(f"qtype model: unknown labels {unknown}")
        self.coef = np.ascontiguousarray(coef, dtype=np.float32)
        self.intercept = np.asarray(intercept, dtype=np.float32)
        self.labels, self.meta = list(labels), dict(meta or {})

    @property
    def dim(self) -> int:
        """The vector dimension the model expects (384 for multilingual-e5-small)."""
        return int(self.coef.shape[1])

    def probabilities(self, vecs: np.ndarray) -> np.ndarray:
        """(n, D) or (D,) vectors -> (n, L) or (L,) label probabilities (softmax)."""
        logits = np.asarray(vecs, dtype=np.float32) @ self.coef.T + self.intercept
        logits = logits - logits.max(axis=-1, keepdims=True)
        p = np.exp(logits)
        return p / p.sum(axis=-1, keepdims=True)

    def predict_vector(self, vec: np.ndarray) -> QuestionType:
        """The :class:`QuestionType` of one (D,) question vector.

        Raises:
            ValueError: the vector's dimension is not the model's.
        """
        vec = np.asarray(vec, dtype=np.float32).reshape(-1)
        if vec.shape[0] != self.dim:
            raise ValueError(f"qtype model expects {self.dim}-d vectors, got {vec.shape[0]}")
        p = self.probabilities(vec)
        scores = {lbl: 0.0 for lbl in QTYPES}
        scores.update({lbl: float(p[i]) for i, lbl in enumerate(self.labels)})
        best = int(p.argmax())
        return QuestionType(self.labels[best], float(p[best]), scores)

    def save(self, directory: Path) -> None:
        """Write ``qtype_model.npz`` (coef, intercept) and ``qtype_model.json`` (labels and
        ``meta``) into ``directory``."""
        directory.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(directory / MODEL_NPZ, coef=self.coef, intercept=self.intercept)
        (directory / MODEL_META).write_text(
            json.dumps({**self.meta, "labels": self.labels}, ensure_ascii=False, indent=1) + "\n",
            encoding="utf-8")

    @classmethod
    def load(cls, directory: Path | None = None) -> QTypeModel:
        """Read the model from ``directory`` (default: the package's ``core/qtype/data``).

        Raises:
            FileNotFoundError: the artifact is missing (run ``medbot qtype train``).
        """
        base = directory or Path(str(resources.files("core.qtype").joinpath("data")))
        meta = json.loads((base / MODEL_META).read_text(encoding="utf-8"))
        with np.load(base / MODEL_NPZ, allow_pickle=False) as z:
            coef, intercept = z["coef"], z["intercept"]
        return cls(coef, intercept, meta.pop("labels"), meta)


@lru_cache(maxsize=1)
def load_model() -> QTypeModel:
    """The bundled model, loaded once per process (a cached resource)."""
    return QTypeModel.load()


@lru_cache(maxsize=1)
def _embedder():
    from core.language.embedding import E5Embedder

    return E5Embedder()


class _VectorMemo:
    """The last :data:`_VECTOR_MEMO` question vectors by text (thread-safe LRU)."""

    def __init__(self, size: int) -> None:
        self.size, self._d, self._lock = size, OrderedDict(), threading.Lock()

    def get(self, text: str) -> np.ndarray | None:
        with self._lock:
            vec = self._d.get(text)
            if vec is not None:
                self._d.move_to_end(text)
            return vec

    def put(self, text: str, vec: np.ndarray) -> None:
        with self._lock:
            self._d[text] = vec
            self._d.move_to_end(text)
            while len(self._d) > self.size:
                self._d.popitem(last=False)


_MEMO = _VectorMemo(_VECTOR_MEMO)


def remembered_vector(text: str) -> np.ndarray | None:
    """The e5 query vector of ``text`` if a recent :func:`classify_question` call saw it (the
    last 512 questions of this process), else ``None``: lets a repeated question skip the
    embedding."""
    return _MEMO.get(text)


def forget_vectors() -> None:
    """Empty the memory of recent question vectors (benchmarks of the embedding path)."""
    with _MEMO._lock:
        _MEMO._d.clear()


def e5_name() -> str:
    """The embedder name the model was trained on (vectors of another embedder are refused)."""
    return str(load_model().meta.get("embedder", ""))


def classify_question(text: str, lang: str | None = None, *,
                      vec: np.ndarray | None = None) -> QuestionType:
    """The type of a consumer-health question in Korean or English.

    Args:
        text: the question.
        lang: ``ko`` / ``en`` or ``None``; accepted for callers that know it (the model is
            multilingual, the label does not depend on it).
        vec: the question's e5 query vector (``E5Embedder.embed_query(text)``, 384 floats) when
            the caller already has it; without it the text is embedded once with the bundled
            e5 (about 20–60 ms on 2 cores) and remembered, so later calls with the same text
            cost about 0.05 ms. Pass only a vector of the embedder named by :func:`e5_name`.
    Returns:
        :class:`QuestionType`; a text without letters gets ``other`` with confidence 1.
    Raises:
        FileNotFoundError: the model artifact is missing from the package.
        ValueError: ``vec`` has the wrong dimension.
    """
    del lang  # one multilingual model
    if not any(ch.isalpha() for ch in text):
        return QuestionType("other", 1.0, {lbl: float(lbl == "other") for lbl in QTYPES})
    model = load_model()
    if vec is None:
        vec = _MEMO.get(text)
        if vec is None:
            vec = _embedder().embed_query(text)
    _MEMO.put(text, np.asarray(vec, dtype=np.float32))
    return model.predict_vector(vec)
