"""The question's ask (core/answer/ask.py) and the user's emergency numbers (core/safety/numbers.py)."""

import pytest

from core.answer.ask import ASKS, classify_ask
from core.safety.numbers import region_of, resolve


@pytest.mark.parametrize("question, ask", [
    ("How much ibuprofen can I take for a headache?", "dose"),
    ("타이레놀 하루 최대 몇 알까지 먹을 수 있어요?", "dose"),
    ("Can I take ibuprofen with my sertraline?", "safety_with"),
    ("임신 24주인데 타이레놀 먹어도 되나요?", "safety_with"),
    ("My blood pressure is 194/96. Is that bad?", "value_meaning"),
    ("is 140 bad?", "value_meaning"),
    ("공복혈당 128이면 당뇨인가요?", "value_meaning"),
    ("What is a normal heart rate for a newborn?", "value_meaning"),
    ("Why do I get headaches every morning?", "cause"),
    ("요즘 자꾸 어지러운데 왜 그럴까요?", "cause"),
    ("What foods should a diabetic avoid?", "what_to_do"),
    ("콜레스테롤 낮추려면 어떻게 해야 하나요?", "what_to_do"),
    ("Should I see a doctor for a cough that has lasted 3 weeks?", "when_to_seek_care"),
    ("아기 열이 38.5도인데 병원에 가야 하나요?", "when_to_seek_care"),
    ("How do I use an inhaler?", "how_to_use"),
    ("혈압약은 아침에 먹어야 하나요 저녁에 먹어야 하나요?", "how_to_use"),
    ("Is paracetamol or ibuprofen better for a fever?", "comparison"),
    ("고지혈증 약이랑 오메가3 중에 뭐가 나아요?", "comparison"),
])
def test_the_ask_is_the_kind_of_answer_wanted(question, ask):
    got = classify_ask(question)
    assert got.label == ask, got
    assert got.by == "cue" and got.matched


def test_without_a_cue_the_question_type_decides_and_else_information():
    assert classify_ask("metformin and the kidneys", "contraindications").label == "safety_with"
    assert classify_ask("metformin and the kidneys", "dosage").by == "qtype"
    plain = classify_ask("당뇨가 뭐예요?")
    assert plain.label == "information" and plain.by == "default"
    assert set(ASKS) >= {classify_ask(q).label for q in ("x", "what is gout")}


def test_a_dose_question_about_a_state_also_names_the_safety_ask():
    got = classify_ask("I'm 24 weeks pregnant. How much ibuprofen can I take, is it safe?")
    assert got.label == "dose" and "safety_with" in got.also


@pytest.mark.parametrize("tag, region", [("en-US", "US"), ("en_GB", "GB"), ("pt-br", "BR"),
                                         ("ko", ""), ("zh-Hant-TW", "TW"), ("", ""), (None, ""),
                                         ("not a tag", "")])
def test_region_of_a_locale_tag(tag, region):
    assert region_of(tag) == region


def test_an_english_user_of_unknown_region_is_never_told_119_alone():
    n = resolve("en")
    assert n.region == "" and "911" in n.emergency and "999" in n.emergency and "112" in n.emergency
    assert n.emergency != "119" and "988" in n.crisis
    assert n.guideline == "us"


def test_the_region_comes_from_the_deployment_then_the_locale_then_the_language():
    assert resolve("en", "en-US").emergency == "911" and resolve("en", "en-US").crisis == "988"
    assert resolve("en", "en-GB").emergency == "999" and resolve("en", "en-GB").crisis == "116 123"
    assert resolve("ko").emergency == "119" and resolve("ko").crisis == "109"
    assert resolve("ko").guideline == "kr"
    deployed = resolve("en", "en-US", region="KR")
    assert (deployed.emergency, deployed.crisis, deployed.guideline) == ("119", "109", "kr")
    de = resolve("en", "de-DE")
    assert de.emergency == "112" and de.crisis == "a local crisis line"


def test_explicit_numbers_and_guidelines_override_the_table():
    n = resolve("en", "en-US", emergency="000", crisis="13 11 14", guideline="kr")
    assert (n.emergency, n.crisis, n.guideline) == ("000", "13 11 14", "kr")
