"""The response cache's learned pair decision: features, the shipped model, vetoes, trace."""

from __future__ import annotations

import numpy as np
import pytest

from core.cache.decision import VETOES, default_model, read
from core.cache.decision_train import export_trees, lowest_threshold, rates, scores
from core.cache.pair_data import TEST_DOCTORS, TRAIN_DOCTORS, mqp_pairs
from core.cache.pair_features import FEATURE_NAMES, quantities, question_words


def test_quantities_read_numbers_with_units():
    assert quantities("fever for 2 years, 500 mg twice") == {("2", "year"), ("500", "mg")}
    assert quantities("열이 3일째") == {("3", "day")}
    assert quantities("what is hba1c") == frozenset()


def test_question_words_tell_dose_from_time():
    assert question_words("How much vitamin D should I take?") == {"how_much"}
    assert question_words("When should I take vitamin D?") == {"when"}
    assert question_words("What is asthma?") == {"what"}


def test_split_rule_keeps_test_doctors_out(tmp_path):
    f = tmp_path / "p.jsonl"
    f.write_text('{"a":"x?","b":"y?","same":true,"dr":1}\n{"a":"z?","b":"w?","same":false,"dr":5}\n')
    assert set(TRAIN_DOCTORS) & set(TEST_DOCTORS) == set()
    assert [p.group for p in mqp_pairs(f, TRAIN_DOCTORS)] == ["mqp:dr1"]
    assert [p.group for p in mqp_pairs(f, TEST_DOCTORS)] == ["mqp:dr5"]
    assert mqp_pairs(tmp_path / "absent.jsonl", TRAIN_DOCTORS) == []


def test_shipped_model_matches_features_and_is_a_probability():
    m = default_model()
    assert m.feature_names == FEATURE_NAMES
    assert 0.0 < m.threshold <= 1.0 and m.meta["cv"]["at_threshold"]["false_hit_rate"] <= 0.003
    x = np.zeros(len(FEATURE_NAMES))
    lo, hi = x.copy(), x.copy()
    lo[0], hi[:3] = 0.5, (0.999, 0.999, 0.999)
    assert 0.0 <= m.probability(lo) < m.probability(hi) <= 1.0  # increasing in the cosine


def test_exported_trees_reproduce_scikit_learn(tmp_path):
    from sklearn.ensemble import HistGradientBoostingClassifier

    rng = np.random.RandomState(0)
    X = rng.rand(400, len(FEATURE_NAMES))
    y = X[:, 0] + 0.3 * X[:, 5] + 0.2 * rng.rand(400) > 0.8
    clf = HistGradientBoostingClassifier(max_depth=2, max_iter=20, random_state=0).fit(X, y)
    arrays = export_trees(clf)
    m = default_model()
    m2 = type(m)(**{**m.__dict__, "feature": arrays["feature"], "threshold_value": arrays["threshold"],
                    "left": arrays["left"], "right": arrays["right"], "value": arrays["value"],
                    "is_leaf": arrays["is_leaf"].astype(bool), "roots": arrays["roots"],
                    "baseline": float(np.ravel(clf._baseline_prediction)[0])})
    for row in X[:25]:
        z, contrib = m2.raw(row)
        assert z == pytest.approx(float(clf.decision_function(row.reshape(1, -1))[0]), abs=1e-9)
        # path attributions add up to the log-odds minus the expected value
        bias = m2.baseline + sum(m2.value[r] for r in m2.roots)
        assert contrib.sum() == pytest.approx(z - bias, abs=1e-9)


def test_veto_refuses_a_confident_pair_and_trace_names_features():
    m = default_model()
    x = np.zeros(len(FEATURE_NAMES))
    x[:3] = (0.999, 0.999, 0.999)
    x[FEATURE_NAMES.index("key_equal")] = 1.0
    x[FEATURE_NAMES.index("qtype_agreement")] = 1.0
    clean = m.decide_features(x)
    x[FEATURE_NAMES.index("quantities_differ")] = 1.0
    vetoed = m.decide_features(x)
    assert "quantities_differ" in vetoed.vetoes and not vetoed.hit
    t = clean.trace()
    assert set(t) >= {"probability", "deciding", "vetoes", "branch"}
    assert all(d["feature"] in FEATURE_NAMES for d in t["deciding"])
    assert set(m.vetoes) == set(VETOES)


def test_threshold_choice_respects_the_false_hit_budget():
    s = np.array([0.99, 0.95, 0.9, 0.8, 0.97, 0.6])
    y = np.array([True, True, True, True, False, False])
    vet = np.zeros(6, bool)
    t = lowest_threshold(s, y, vet, 0.0)
    assert rates(s >= t, y) == {"pairs": 6, "paraphrases": 4, "precision": 1.0, "recall": 0.25,
                                "false_hits": 0, "false_hit_rate": 0.0}
    vet[4] = True  # the confident negative is vetoed: the threshold may go down
    assert lowest_threshold(s, y, vet, 0.0) < t
    p, q = np.array([0.1, 0.8]), np.array([0.9, 0.9])
    assert list(scores(p, q, 0.5)) == [0.1, 0.9]
    assert list(scores(p, q, 0.5, np.log1p(np.array([20.0, 3.0])), 16.0)) == [0.9, 0.9]


def test_model_roundtrip(tmp_path):
    import shutil
    from importlib import resources

    src = resources.files("core.cache").joinpath("data")
    for name in ("pair_model.npz", "pair_model.json"):
        shutil.copy(str(src.joinpath(name)), tmp_path / name)
    assert read(tmp_path).threshold == default_model().threshold
    (tmp_path / "pair_model.json").write_text((tmp_path / "pair_model.json").read_text()
                                              .replace('"cosine"', '"cos"', 1))
    from core.cache.decision import ModelMismatchError

    with pytest.raises(ModelMismatchError):
        read(tmp_path)


def _ask(agent, user: str, text: str):
    from core.messages import InboundMessage

    return agent.handle(InboundMessage(user_id=user, text=text))


def test_rewrite_with_another_key_hits_through_the_decision_with_its_trace(agent):
    a = _ask(agent, "dec:first", "how do I lower my cholesterol")
    assert a.trace["cache_hit"] is None
    b = _ask(agent, "dec:second", "ways to reduce cholesterol levels")
    hit = b.trace["cache_hit"]
    assert hit is not None and b.text == a.text
    d = hit["decision"]
    assert d["hit"] and d["score"] >= default_model().threshold and d["vetoes"] == []
    assert 0.0 < d["probability"] <= 1.0 and d["deciding"]
    # the keyed path alone would not have served it: the two keys differ
    assert b.trace["cache_key"]["digest"] != a.trace["cache_key"]["digest"]


def test_learned_candidate_still_obeys_ownership(agent):
    from dataclasses import asdict

    from core.nodes.cache import find_candidates, select_hit
    from core.language.text import question_key
    from storage.models import CacheEntry

    svc = agent.services
    text, asked = "how do I lower my cholesterol", "ways to reduce cholesterol levels"
    vec, vec_b = svc.embedder.embed_query(text), svc.embedder.embed_query(asked)
    svc.repo.ensure_user("dec:owner")
    svc.cache.add(CacheEntry(question=text, question_key=question_key(text), answer="mine",
                             sources=[], lang="en", embedder=svc.embedder.name, embedding=b"",
                             owner_user_id="dec:owner", profile_fingerprint="fp"), vec)
    from config.flags import FeatureFlags

    state = {"question": asked, "lang": "en", "user_id": "dec:other", "mode": "ai_agent",
             "slots": svc.extractor.extract(asked, "en"), "flags": FeatureFlags()}
    _, cands = find_candidates(state, svc, vec_b)
    learned = [c for c in cands if c.decision is not None]
    assert learned and learned[0].owner_user_id == "dec:owner"
    assert select_hit({**state, "cache_candidates": [asdict(c) for c in cands]}) is None
    off = {**state, "flags": FeatureFlags(cache_learned_decision=False)}
    assert all(c.decision is None for c in find_candidates(off, svc, vec_b)[1])


def test_curve_points_never_exceed_the_budget():
    from bot.bench.cache import curve_point

    same = np.array([True, True, True, False, False, False, False])
    score = np.array([0.9, 0.8, 0.3, 0.85, 0.2, 0.1, 0.0])
    p0 = curve_point(score, same, 0.0)
    assert p0["threshold"] == 0.9 and p0["recall"] == pytest.approx(1 / 3, abs=1e-4) and p0["false_hits"] == 0
    p25 = curve_point(score, same, 0.25)
    assert p25["false_hits"] == 1 and p25["recall"] == 1.0 and p25["threshold"] == 0.3
    always = np.array([False, False, False, True, False, False, False])
    assert curve_point(score, same, 0.0, always)["threshold"] is None
