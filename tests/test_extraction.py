"""Regex slots (demographics, blood pressure, glucose, HbA1c) in Korean and English."""

from __future__ import annotations

import pytest

from core.extraction import patterns


def _all(text: str):
    rejected: list = []
    return (patterns.demographics(text, rejected), patterns.vitals(text, rejected),
            patterns.labs(text, rejected), rejected)


@pytest.mark.parametrize("text,age,sex", [
    ("저는 65세 남성이고 당뇨가 있어요", 65, "male"),
    ("72살 여자예요", 72, "female"),
    ("만 58세 여성입니다", 58, "female"),
    ("I'm a 54-year-old woman with diabetes", 54, "female"),
    ("I am 47 years old", 47, None),
    ("65M with HTN", 65, "male"),
])
def test_age_and_sex(text, age, sex):
    demo, *_ = _all(text)
    assert demo.get("age") == age
    assert demo.get("sex") == sex
    assert demo["age_group"] == f"{age // 10 * 10}대"


def test_age_group_without_age():
    demo, *_ = _all("40대 여성인데 혈압이 걱정돼요")
    assert demo["age_group"] == "40대" and "age" not in demo and demo["sex"] == "female"


def test_pregnancy_and_its_negation():
    assert _all("임신 20주예요")[0]["pregnant"] is True
    assert _all("I'm pregnant")[0]["pregnant"] is True
    assert _all("임신은 아니에요")[0]["pregnant"] is False


@pytest.mark.parametrize("text,sbp,dbp", [
    ("요즘 혈압이 150/95 정도 나와요", 150, 95),
    ("BP 132/84 mmHg this morning", 132, 84),
    ("my blood pressure was 128 / 79", 128, 79),
])
def test_blood_pressure(text, sbp, dbp):
    _, vit, _, rej = _all(text)
    assert [(v.value, v.value2, v.unit) for v in vit] == [(sbp, dbp, "mmHg")]
    assert rej == []


def test_fraction_without_bp_context_is_not_a_reading():
    assert _all("3/4 of the pills are left")[1] == []


def test_implausible_values_are_rejected_not_stored():
    _, vit, labs, rej = _all("혈압이 400/20 이고 HbA1c 80%")
    assert vit == [] and labs == []
    assert {r.key for r in rej} == {"blood_pressure", "hba1c"}
    assert any("400/20" in str(r) for r in rej) and any("HbA1c" in str(r) for r in rej)


def test_korean_labs_with_units():
    _, _, labs, _ = _all("공복혈당은 180이고 HbA1c는 8.2%예요")
    got = {m.key: (m.value, m.unit) for m in labs}
    assert got == {"fasting_glucose": (180.0, "mg/dL"), "hba1c": (8.2, "%")}


def test_mmol_glucose_converted_to_mg_dl():
    _, _, labs, _ = _all("fasting glucose 7.0 mmol/L and A1c 6.9%")
    got = {m.key: m.value for m in labs}
    assert got["fasting_glucose"] == pytest.approx(126.1, abs=0.1)
    assert got["hba1c"] == 6.9


def test_random_glucose_is_not_fasting():
    _, _, labs, _ = _all("식후 혈당이 230 나왔어요")
    assert [(m.key, m.value) for m in labs] == [("glucose", 230.0)]
