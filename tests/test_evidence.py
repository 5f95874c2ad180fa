"""Evidence selection by meaning (core.answer.evidence), the offline composer and the profile's part
(docs/benchmarks.md "Answers"). Vectors are hand-made unit vectors, so every cosine below is known."""

from __future__ import annotations

import numpy as np
import pytest

from core.answer.evidence import (DEFAULT, Personal, not_applicable_terms, select_evidence, terms)
from core.llm.offline import compose_answer, refusal
from core.retrieval.sentences import sentence_key
from core.language.text import own_references


def unit(*xs: float) -> np.ndarray:
    v = np.zeros(8, dtype=np.float32)
    v[: len(xs)] = xs
    return v / np.linalg.norm(v)


Q = unit(1, 0)


def lookup_for(table: dict[str, np.ndarray]):
    return lambda keys: {k: table[k] for k in keys if k in table}


def cos_vec(c: float) -> np.ndarray:
    """A unit vector with cosine ``c`` to :data:`Q`."""
    return unit(c, float(np.sqrt(1 - c * c)))


def docs_and_lookup(spec: list[tuple[str, float, list[tuple[str, float]]]], lang: str = "en"):
    docs, table = [], {}
    for title, score, sents in spec:
        docs.append({"doc_id": title, "title": title, "score": score, "lang": lang,
                     "text": " ".join(s for s, _ in sents)})
        table.update({sentence_key(s): cos_vec(c) for s, c in sents})
    return docs, lookup_for(table)


def test_terms_stem_english_and_bigram_korean():
    assert {"swell", "ankle"} <= terms("Swelling of the ankles")
    assert "swell" in terms("my legs swell")
    assert {"부종", "다리"} <= terms("다리 부종이 있어요")
    assert "the" not in terms("the") and not terms("?!")


def test_floor_drops_weak_sentences_and_keeps_strong_ones():
    docs, lookup = docs_and_lookup([
        ("A", 1.0, [("Alpha answers the question well.", 0.93), ("Alpha says something else.", 0.70)]),
        ("B", 0.9, [("Beta is only loosely related here.", 0.75)]),
    ])
    sel = select_evidence("zzz question", Q, docs, lookup, "en")
    assert [c.text for c in sel.ranked] == ["Alpha answers the question well."]
    assert sel.report["kept"] == 1 and sel.report["candidates"] == 3


def test_nothing_over_the_floor_means_refusal():
    docs, lookup = docs_and_lookup([("A", 1.0, [("Nothing here is about it.", 0.5)])])
    sel = select_evidence("zzz question", Q, docs, lookup, "en")
    assert sel.ranked == []
    assert compose_answer(sel.take(5, 3), {}, "en", docs, "") == refusal("en")
    assert "will not guess" in refusal("en") and "진료" in refusal("ko")


def test_margin_keeps_only_sentences_near_the_best():
    docs, lookup = docs_and_lookup([("A", 1.0, [("First strong sentence here.", 0.97),
                                                ("Second one, a bit weaker.", 0.97 - DEFAULT.margin - 0.02),
                                                ("Third one, close to the best.", 0.95)])])
    kept = {c.text for c in select_evidence("zzz", Q, docs, lookup, "en").ranked}
    assert kept == {"First strong sentence here.", "Third one, close to the best."}


def test_profile_reranks_but_never_brings_a_sentence_in():
    docs, lookup = docs_and_lookup([("Drugs", 1.0, [("Metformin can upset the stomach.", 0.90),
                                                    ("Many tablets can upset the stomach.", 0.92),
                                                    ("Amlodipine is taken once a day.", 0.60)])])
    plain = select_evidence("zzz", Q, docs, lookup, "en")
    mine = select_evidence("zzz", Q, docs, lookup, "en", Personal(names=["amlodipine", "metformin"]))
    assert plain.ranked[0].text == "Many tablets can upset the stomach."
    assert mine.ranked[0].text == "Metformin can upset the stomach."  # re-ranked
    assert "Amlodipine is taken once a day." not in {c.text for c in mine.ranked}  # not brought in
    assert {c.text for c in plain.ranked} == {c.text for c in mine.ranked}


def test_pointing_at_my_medication_drops_documents_about_other_drugs():
    docs, lookup = docs_and_lookup([
        ("Calcium channel blockers", 1.0, [("Amlodipine often causes ankle swelling.", 0.92)]),
        ("Bisphosphonates", 0.95, [("Take alendronate with a full glass of water.", 0.91)]),
    ])
    sel = select_evidence("Can my medication make my legs swell?", Q, docs, lookup, "en",
                          Personal(names=["amlodipine"], fill_in=["amlodipine", "암로디핀"]))
    assert [c.text for c in sel.ranked] == ["Amlodipine often causes ankle swelling."]


def test_pregnancy_sentences_do_not_apply_to_a_58_year_old_woman():
    docs, lookup = docs_and_lookup([("Headache", 1.0, [("Morning headaches can come from sleep apnea.", 0.92),
                                                        ("In pregnancy, a severe headache needs care at once.", 0.93)])])
    na = not_applicable_terms({"age": 58, "sex": "female"})
    sel = select_evidence("Why do I get morning headaches?", Q, docs, lookup, "en", Personal(not_applicable=na))
    assert [c.text for c in sel.ranked] == ["Morning headaches can come from sleep apnea."]
    asked = select_evidence("Is a headache in pregnancy dangerous?", Q, docs, lookup, "en", Personal(not_applicable=na))
    assert "In pregnancy, a severe headache needs care at once." in {c.text for c in asked.ranked}
    assert not_applicable_terms({"age": 30, "sex": "female"}) == []
    assert not_applicable_terms({"age": 58, "sex": "female", "pregnant": True}) == []
    assert not_applicable_terms({"sex": "male"})


def test_sentences_in_the_users_language_first_the_other_only_as_fallback():
    ko, lookup_ko = docs_and_lookup([("한국어", 1.0, [("암로디핀은 발목 부종을 일으킬 수 있습니다.", 0.92)])], "ko")
    en, lookup_en = docs_and_lookup([("English", 1.0, [("Amlodipine can cause ankle swelling.", 0.92)])], "en")
    both = lambda keys: {**lookup_ko(keys), **lookup_en(keys)}  # noqa: E731
    sel = select_evidence("zzz", Q, ko + en, both, "en")
    assert [c.lang for c in sel.ranked] == ["en"]
    only_ko = select_evidence("zzz", Q, ko, lookup_ko, "en")
    assert [c.lang for c in only_ko.ranked] == ["ko"]  # nothing in English: the Korean source is quoted
    text = compose_answer(only_ko.take(5, 3), {0: 1}, "en", ko, "")
    assert "(quoted from a Korean source)" in text


def test_without_sentence_vectors_lexical_relevance_and_a_note():
    docs = [{"doc_id": "A", "title": "A", "score": 1.0, "lang": "en",
             "text": "Ankle swelling is common with amlodipine. Grapefruit raises some levels."}]
    sel = select_evidence("does amlodipine cause ankle swelling", Q, docs, lookup_for({}), "en")
    assert sel.ranked[0].text.startswith("Ankle swelling")
    assert "no stored vector" in sel.report["note"]


def test_bullets_are_verbatim_and_cited_and_the_value_line_is_a_template():
    from core.llm.offline import value_line

    docs, lookup = docs_and_lookup([("A", 1.0, [("Home readings of 135/85 or more mean hypertension.", 0.93)])])
    sel = select_evidence("zzz", Q, docs, lookup, "en")
    text = compose_answer(sel.take(5, 3), {0: 1}, "en", docs, "58-year-old female",
                          value_line(["BP 160/100 mmHg"], "en"))
    assert "- Home readings of 135/85 or more mean hypertension. [1]" in text
    assert "The value you gave: BP 160/100 mmHg." in text
    assert value_line([], "ko") == ""


@pytest.mark.parametrize("text, slots", [
    ("Can my medication make my legs swell?", {"medication"}),
    ("제가 먹는 약 때문에 다리가 부을 수 있나요?", {"medication"}),
    ("제 혈압약 부작용이 뭔가요?", {"medication"}),
    ("the pills I take make me dizzy", {"medication"}),
    ("내 병이 유전되나요?", {"condition"}),
    ("Is my condition getting worse?", {"condition"}),
    ("혈압약 부작용이 뭔가요?", set()),
    ("Does the drug cause cough?", set()),
    ("Why do I get headaches in the morning?", set()),
    ("운동은 일주일에 얼마나 해야 하나요?", set()),
])
def test_own_references(text, slots):
    assert own_references(text) == slots
