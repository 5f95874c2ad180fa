"""Triage layer 1 context and discriminators: a sign used as a topic
(suicide statistics, CPR's chest compressions, a relative's illness when the user asks about
their own screening), an experiential past, "nobody has ...", a negative test result, and
emergencies phrased with a wait-and-see question (duration now, TIA words, glass test, meter
HI, tablet counts, melena with dizziness). Rules only (``assess`` without a classifier), so
each case exercises layer 1 and could fail on its own."""

from __future__ import annotations

import pytest

from core.safety import assess
from core.safety.findings import extract_findings


def layer1(text: str, lang: str) -> list[str]:
    return [f.category for f in assess(text, lang).flags]


TOPIC_NEGATIVES = [
    ("en", "for my psychology essay, where can I find suicide statistics by age group?"),
    ("ko", "보고서 쓰는데 청소년 자살률 통계를 어디서 찾나요"),
    ("en", "my neighbour died by suicide last year, how do I talk to his kids about it?"),
    ("ko", "친구가 힘들어 보이는데 자살 위험 신호는 뭐가 있나요"),
    ("en", "I feel low but I'm not having any thoughts of hurting myself, how do I find a counsellor?"),
    ("ko", "심폐소생술 할 때 가슴 압박은 얼마나 깊게 해요?"),
    ("en", "first aid course scenario: a diner suddenly becomes confused, what are the steps?"),
    ("ko", "예전에 헌혈하다 기절한 적이 있는데 이번에 다시 해도 될까요"),
    ("ko", "아빠가 녹내장으로 한쪽 시력을 잃으셨어요 저는 몇 살부터 검진받아야 해요?"),
    ("en", "my grandfather went blind from macular degeneration, can I do anything to prevent it?"),
    ("en", "the engineer tested our CO alarm and nobody at home has headaches, how often to replace it?"),
    ("ko", "당뇨인데 혈당이 260이에요 케톤은 음성이고 잘 먹고 있어요"),
    ("en", "hives all over after a new antibiotic, no swelling of lips or throat, breathing is fine"),
    ("ko", "혈압약이랑 고지혈증약을 한 번에 같이 먹어도 되나요"),
    ("ko", "약을 깜빡해서 두 번 먹을 뻔했는데 안 먹었어요"),
    ("en", "I think I took my amlodipine twice this morning, feel a bit lightheaded"),
    ("en", "how can schools help prevent teen suicide?"),
    ("en", "calf a bit swollen after the flight, breathing is fine"),
    ("en", "toddler bumped his knee, cried for a minute then back to playing"),
]


@pytest.mark.parametrize("lang,text", TOPIC_NEGATIVES)
def test_signs_as_topic_past_family_or_negated_are_not_flagged(lang, text):
    assert layer1(text, lang) == []


UNDERSTATED = [
    ("sudden_vision_loss", "ko", "피곤해서 그런가 한 시간 전부터 왼쪽 눈이 거의 안 보여요 자고 나면 괜찮아질까요?"),
    ("sudden_vision_loss", "en", "since this morning there's a shadow over my left eye that isn't going away"),
    ("major_bleeding", "en", "on warfarin (INR was 4 last week) and my nosebleed won't stop after an hour of pinching"),
    ("major_bleeding", "ko", "아침부터 변이 새까맣게 나오고 일어나면 핑 돌아요"),
    ("seizure", "ko", "뇌전증 있는 동생이 발작 시작한 지 7분이 넘었어요"),
    ("meningitis", "en", "my toddler has a high temp and purplish spots, the glass test didn't make them fade"),
    ("diabetic_emergency", "ko", "오늘 측정기에 HI 나오고 몇 번 토했어요 인슐린 더 놓고 자면 되겠죠?"),
    ("diabetic_emergency", "en", "bg 33 mmol and throwing up non stop"),
    ("poisoning_overdose", "en", "doubled up my co-codamol, maybe 20 tablets since morning, just sleep it off?"),
    ("suicide_self_harm", "ko", "사라지면 편할 것 같다는 생각이 들어요 번개탄도 사놨어요"),
    ("acute_abdomen", "en", "my 13 year old says one of his balls hurts really badly since an hour and he's been sick"),
    ("stroke", "en", "my right hand went weak about an hour ago and my speech was off for a few minutes"),
    ("airway_breathing", "en", "my asthma's worse, using my reliever every few minutes and struggling to finish sentences"),
    ("cardiac_chest_pain", "en", "tight band across my chest, used the GTN spray twice and no change"),
    ("sepsis", "en", "had flu for 3 days, shakin uncontrolably, skin looks mottled, havent peed since morning"),
    ("obstetric", "en", "my partner is 35 weeks and hasn't felt the baby move at all today"),
    ("obstetric", "ko", "아내가 임신 34주인데 아침부터 태동이 하나도 없대요"),
    ("obstetric", "ko", "임신 28주인데 양수가 주르륵 흘러요 어떻게 해야 되나요"),
    ("airway_breathing", "en", "back from a long flight, now short of breath and my left calf is swollen"),
    ("airway_breathing", "ko", "비행기 타고 온 뒤로 종아리가 부어 있는데 갑자기 숨이 차요"),
    ("poisoning_overdose", "ko", "아이가 할아버지 심장약을 먹은 것 같아요"),
    ("poisoning_overdose", "en", "my toddler got into his nan's blood pressure pills"),
    ("meningitis", "en", "student in halls, fever, neck won't bend and the light is unbearable"),
    ("paediatric_red_flags", "en", "baby hasn't had a wet nappy since last night and her soft spot looks sunken"),
    ("major_bleeding", "en", "chainsaw slipped, deep gash on my thigh pumping blood"),
]


@pytest.mark.parametrize("category,lang,text", UNDERSTATED)
def test_layer1_catches_emergencies_told_with_a_wait_and_see_question(category, lang, text):
    assert category in layer1(text, lang)


def test_burn_modifiers_count_only_beside_a_burn():
    assert "burn_severe" not in extract_findings("pain in my back and chest after the gym", "en").signs
    assert "burn_severe" in extract_findings("burned my whole back on the radiator, big blisters", "en").signs


def test_a_thermometer_reading_is_a_temperature():
    assert extract_findings("mid chemo and the thermometer says 38.1", "en").temperature_c == 38.1
    assert "sepsis" in layer1("mid chemo and the thermometer says 38.1, I'll take paracetamol", "en")
