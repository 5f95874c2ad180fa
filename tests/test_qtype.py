"""The question-type classifier (core.qtype.model): interface, shipped artifact, training round trip."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

from core.qtype.model import QTYPES, QTypeModel, QuestionType, classify_question, e5_name, load_model
from core.qtype.dataset import (MEDQUAD_MAP, expand_frame, file_sha256, load_frames, team_data_sha256,
                             team_examples, with_particle)

TAXONOMY = ("information", "symptoms", "causes", "treatment", "prevention", "exams_and_tests",
            "test_result", "outlook", "complications", "susceptibility", "inheritance",
            "genetic_changes", "frequency", "research", "considerations", "stages",
            "side_effects", "dosage", "interactions", "contraindications", "usage", "lifestyle",
            "other")


def _medquad() -> Path:
    base = Path(os.environ.get("MEDBOT_SHARED_DATA", Path(__file__).resolve().parents[1].parent
                               / "shared" / "data"))
    path = base / "medquad" / "corpus.jsonl"
    if not path.exists():
        pytest.skip(f"MedQuAD not found at {path} (a fresh clone has no ../shared; "
                    "MEDBOT_SHARED_DATA points elsewhere)")
    return path


def test_label_set_is_the_taxonomy_in_order():
    assert QTYPES == TAXONOMY


def test_classify_returns_a_distribution_over_every_label():
    qt = classify_question("What are the side effects of metformin?", "en")
    assert isinstance(qt, QuestionType) and qt.label in QTYPES
    assert set(qt.scores) == set(QTYPES)
    assert abs(sum(qt.scores.values()) - 1.0) < 1e-4
    assert qt.confidence == pytest.approx(qt.scores[qt.label])
    assert qt.confidence == max(qt.scores.values())


@pytest.mark.parametrize("text,label", [
    ("What are the side effects of metformin?", "side_effects"),
    ("메트포르민 부작용이 뭔가요?", "side_effects"),
    ("How much ibuprofen can I take in a day?", "dosage"),
    ("타이레놀 하루 최대 용량이 얼마예요?", "dosage"),
    ("Can I take warfarin with aspirin?", "interactions"),
    ("와파린이랑 아스피린 같이 먹어도 되나요?", "interactions"),
    ("What are the symptoms of gout?", "symptoms"),
    ("통풍 증상이 뭐예요?", "symptoms"),
    ("Is Huntington disease inherited?", "inheritance"),
    ("My HbA1c is 7.8%, is that too high?", "test_result"),
    ("공복혈당 130이면 높은 건가요?", "test_result"),
    ("What foods should I avoid with gout?", "lifestyle"),
])
def test_clear_questions_get_their_type(text, label):
    assert classify_question(text).label == label


def test_text_without_letters_is_other():
    assert classify_question("??? 123").label == "other"
    assert classify_question("").confidence == 1.0


def test_given_vector_gives_the_same_answer_as_embedding(embedder):
    text = "Is it safe to drink alcohol while taking metformin?"
    assert embedder.name == e5_name()
    assert classify_question(text, vec=embedder.embed_query(text)) == classify_question(text)
    with pytest.raises(ValueError):
        classify_question(text, vec=np.zeros(7, np.float32))


def test_shipped_artifact_matches_its_training_data():
    meta = load_model().meta
    assert meta["team_data_sha256"] == team_data_sha256(), \
        "core/qtype/data/qtype_frames.jsonl or qtype_fillers.json changed: run `medbot qtype train`"
    assert meta["embedder"] == e5_name()
    assert set(load_model().labels) == set(QTYPES)


def test_shipped_artifact_matches_medquad():
    assert load_model().meta["medquad_sha256"] == file_sha256(_medquad())


def test_artifact_is_plain_arrays(tmp_path):
    from core.qtype.model import MODEL_META, MODEL_NPZ

    base = Path(str(__import__("importlib").resources.files("core.qtype").joinpath("data")))
    with np.load(base / MODEL_NPZ, allow_pickle=False) as z:  # raises on any pickled object
        assert set(z.files) == {"coef", "intercept"}
    json.loads((base / MODEL_META).read_text("utf-8"))


def test_team_frames_are_labelled_with_known_ids_in_both_languages():
    frames = load_frames()
    for lang in ("ko", "en"):
        assert {f["qtype"] for f in frames if f["lang"] == lang} == set(QTYPES)
    assert set(MEDQUAD_MAP.values()) <= set(QTYPES)


def test_expansion_is_deterministic_and_fills_every_slot():
    fillers = json.loads((Path(__file__).resolve().parents[1] / "core" / "qtype" / "data"
                          / "qtype_fillers.json").read_text("utf-8"))
    a = expand_frame("{d|과} {d2|을} 같이 먹어도 되나요?", "ko", fillers)
    assert a == expand_frame("{d|과} {d2|을} 같이 먹어도 되나요?", "ko", fillers)
    assert all("{" not in t for t in a) and len(set(a)) == len(a) > 1
    assert all(t.split()[0][:-1] != t.split()[1][:-1] for t in a)  # two different drugs
    assert not [e for e in team_examples() if "{" in e.text or "}" in e.text]


@pytest.mark.parametrize("word,particle,expected", [
    ("당뇨병", "은", "당뇨병은"), ("치매", "은", "치매는"), ("통풍", "이", "통풍이"),
    ("간경화", "으로", "간경화로"), ("신장결석", "으로", "신장결석으로"), ("유방암", "을", "유방암을"),
    ("메트포르민", "과", "메트포르민과"), ("아스피린", "과", "아스피린과"), ("타이레놀", "으로", "타이레놀로"),
    ("LDL 190", "이면", "LDL 190이면"), ("INR 3.8", "이면", "INR 3.8이면"),
])
def test_korean_particles(word, particle, expected):
    assert with_particle(word, particle) == expected


class _HashEmbedder:
    """Deterministic stand-in vectors (16-d) so the training round trip runs in a second."""

    name = "test-hash"

    def embed_query(self, text: str) -> np.ndarray:
        seed = int(hashlib.sha1(text.encode()).hexdigest()[:8], 16)
        v = np.random.default_rng(seed).normal(size=16).astype(np.float32)
        return v / np.linalg.norm(v)


def test_training_round_trip_reproduces_scikit_learn(tmp_path):
    pytest.importorskip("sklearn")
    from core.qtype.train import TrainConfig, VectorCache, fit

    examples = team_examples()[::5]
    cache = VectorCache(tmp_path / "v.npz", _HashEmbedder())
    vecs = cache.embed([e.text for e in examples])
    assert (tmp_path / "v.npz").exists()
    assert np.array_equal(VectorCache(tmp_path / "v.npz").embed([examples[0].text])[0], vecs[0])
    model = fit(examples, vecs, TrainConfig(C=1.0), {"embedder": "test-hash"})
    model.save(tmp_path / "m")
    again = QTypeModel.load(tmp_path / "m")
    assert again.labels == model.labels and again.meta["embedder"] == "test-hash"
    np.testing.assert_allclose(again.probabilities(vecs), model.probabilities(vecs), atol=1e-6)
    from sklearn.linear_model import LogisticRegression

    labels = model.labels
    y = np.asarray([labels.index(e.qtype) for e in examples])
    w = np.asarray([TrainConfig().team_weight] * len(examples))
    ref = LogisticRegression(C=1.0, max_iter=5000).fit(vecs, y, sample_weight=w)
    np.testing.assert_allclose(again.probabilities(vecs), ref.predict_proba(vecs), atol=1e-4)
