"""The content-word and question-type-cue vetoes of the response cache (docs/benchmarks.md "Content and cue vetoes") and the key
normalisations that came with them."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from core.cache.content import content_conflict, content_words
from core.cache.cues import cue_conflict, qtype_cues
from core.cache.key import (
    build_key,
    concept_part,
    key_spans,
    numbers_part,
    polarity_parts,
    soft_conflict,
)


def concept(cui, matched="", status="topic"):
    return SimpleNamespace(cui=cui, status=status, matched=matched)


def words(text, concepts=()):
    return content_words(text, key_spans(text, list(concepts)))


@pytest.mark.parametrize("a,b", [
    ("How long does it take to recover from a broken arm?",
     "How long does it take to recover from a broken hip?"),
    ("팔 골절 회복 기간", "고관절 골절 회복 기간"),
    ("can diabetics eat bananas", "can diabetics eat grapes"),
    ("아이가 타이레놀 먹어도 되나요?", "아기가 타이레놀 먹어도 되나요?"),
    ("What are the stages of vulvar cancer?", "What are the stages of bile duct cancer?"),
])
def test_a_content_word_the_other_side_lacks_is_a_conflict(a, b):
    assert content_conflict(words(a), words(b))


@pytest.mark.parametrize("a,ca,b,cb", [
    ("What are the side effects of metformin?", [concept("C0025598", "metformin")],
     "does glucophage have any side effects", [concept("C0025598", "glucophage")]),
    ("side efects of lisinopril", [concept("C0065374", "lisinopril")],
     "What side effects does lisinopril have?", [concept("C0065374", "lisinopril")]),
    ("공복 혈당 정상 범위는 얼마인가요?", [], "공복혈당 정상수치 알려줘", []),
    ("방광염 항생제는 며칠 먹어야 돼요?", [concept("C1", "방광염"), concept("C2", "항생제")],
     "방광염일 때 항생제를 얼마나 오래 복용해야 하나요?",
     [concept("C1", "방광염"), concept("C2", "항생제")]),
    ("What is a normal fasting blood sugar level?", [], "normal fasting glucose range", []),
])
def test_paraphrases_leave_no_content_word_unexplained(a, ca, b, cb):
    assert not content_conflict(words(a, ca), words(b, cb))


def test_frame_words_numbers_and_key_words_are_not_content():
    assert words("What is the usual dose of metformin?", [concept("C1", "metformin")]) == ()
    assert words("LDL 190이면 높은 건가요?") == ()  # LDL: a facet; 190: the key's numbers


@pytest.mark.parametrize("a,b", [
    ("what are the side effects of sertraline", "what are the withdrawal symptoms of sertraline"),
    ("How long does the flu last?", "How long is the flu contagious?"),
    ("메트포르민 부작용", "메트포르민이랑 같이 먹으면 안 되는 약"),
    ("독감 예방법", "독감 치료법"),
])
def test_other_question_type_cues_conflict(a, b):
    assert cue_conflict(qtype_cues(a), qtype_cues(b))


@pytest.mark.parametrize("a,b", [
    ("prednisone side effects", "what side effects can prednisone cause"),
    ("독감 예방접종 부작용이 뭐예요?", "독감 백신 맞으면 어떤 부작용이 있어요?"),
    ("How much ibuprofen can I take in a day?", "what's the max daily dose of advil"),
])
def test_shared_or_one_sided_cues_do_not_conflict(a, b):
    assert not cue_conflict(qtype_cues(a), qtype_cues(b))


def test_concept_words_name_no_lab_facet():
    hypertension = [concept("C0020538", "high blood pressure")]
    assert concept_part(hypertension, "How is high blood pressure treated?") == "C0020538:pos"
    assert concept_part([], "what is a normal blood pressure") == "lab:blood_pressure"


def test_family_status_joins_pos_and_negated_stays_apart():
    kids = build_key("ibuprofen dose for kids", "en", [concept("C1", status="family")], "dosage")
    plain = build_key("ibuprofen dose", "en", [concept("C1")], "dosage")
    negated = build_key("ibuprofen dose", "en", [concept("C1", status="negated")], "dosage")
    assert kids.concepts == plain.concepts and negated.concepts != plain.concepts


def test_covid_19_is_a_name_and_a_value_is_a_value():
    assert build_key("covid-19 symptoms", "en", [concept("C1", "covid")], "symptoms").numbers == ""
    assert build_key("코로나19 증상", "ko", [concept("C1", "코로나")], "symptoms").numbers == ""
    assert numbers_part("type 2 diabetes") == "2"


def test_good_alone_leaves_the_key_but_bad_does_not():
    assert polarity_parts("good foods for gout", [])[0] == polarity_parts("foods for gout", [])[0]
    assert polarity_parts("foods to avoid with gout", [])[0] != polarity_parts("foods for gout", [])[0]
    assert polarity_parts("살 빠지나요", [])[0] != polarity_parts("살 찌나요", [])[0]
    assert polarity_parts("수술 전 식단", [])[0] != polarity_parts("수술 후 식단", [])[0]


@pytest.mark.parametrize("a,b", [
    ("메트포르민 밤에 먹어도 돼요?", "메트포르민 밤에 안 먹어도 돼요?"),
    ("Should I take aspirin every day?", "Should I not take aspirin every day?"),
    ("혈압약 먹고 운동해도 되나요?", "혈압약 없이 운동해도 되나요?"),
])
def test_a_negation_on_one_side_is_a_conflict(a, b):
    assert content_conflict(words(a), words(b))


def test_age_words_are_groups_and_only_words():
    assert not content_conflict(words("whats the ibuprofen dose for kids"),
                                words("children's ibuprofen dosage"))
    assert content_conflict(words("ibuprofen dose for a child"), words("ibuprofen dose for a baby"))
    assert "agechild" not in words("애드빌 먹고 술 마셔도 되나요?")  # 애드빌 is no child


def test_a_use_question_is_not_a_side_effect_question():
    assert cue_conflict(qtype_cues("천식 흡입기 부작용 있어요?"), qtype_cues("천식 흡입기 사용법 알려주세요"))


@pytest.mark.parametrize("a,b", [("대장암 증상", "대장염 증상"), ("위궤양 치료", "위경련 치료"),
                                 ("유방암 검사", "유방염 검사")])
def test_korean_nouns_sharing_two_syllables_are_different_words(a, b):
    assert content_conflict(words(a), words(b))


def test_korean_verb_forms_of_one_stem_agree():
    assert not content_conflict(words("혈압약 먹으면 어지러워요?"), words("혈압약 복용하면 어지러울 수 있나요?"))


def test_a_compound_is_not_explained_by_its_first_part():
    assert content_conflict(words("대장 검사"), words("대장내시경 검사"))
    assert not content_conflict(words("공복 혈당 수치"), words("공복혈당 수치"))


@pytest.mark.parametrize("a,b", [("maximum dose of tylenol", "minimum dose of tylenol"),
                                 ("타이레놀 최대 용량", "타이레놀 최소 용량"),
                                 ("early symptoms of dementia", "late symptoms of dementia"),
                                 ("pain in my left arm", "pain in my right arm")])
def test_contrast_words_of_the_frame_are_polarity(a, b):
    (ha, sa), (hb, sb) = polarity_parts(a, []), polarity_parts(b, [])
    assert ha != hb or soft_conflict(sa, sb)


@pytest.mark.parametrize("a,b", [("리시노프릴 먹으면 두통 생기나요?", "리시노프릴 먹으면 기침 나요?"),
                                 ("Does metformin damage the kidneys?", "Does metformin damage the liver?")])
def test_content_nouns_of_the_training_frames_stay_content(a, b):
    assert content_conflict(words(a), words(b))
