"""The one-line profile summary injected into prompts (SPEC.md §3.2), in Korean or English.

Example: ``65세 남성 | 질환: 2형 당뇨병, 고혈압 | 복용약: 메트포르민 | 혈압: 140/90 mmHg | HbA1c: 8.2 %``.
"""

from __future__ import annotations

from core.memory.profile import Profile
from storage.models import Fact, as_utc

_LABELS = {
    "ko": {"condition": "질환", "medication": "복용약", "symptom": "증상", "allergy": "알레르기",
           "blood_pressure": "혈압", "fasting_glucose": "공복혈당", "glucose": "혈당",
           "hba1c": "HbA1c", "male": "남성", "female": "여성", "pregnant": "임신 중",
           "heart_rate": "맥박", "temperature": "체온", "respiratory_rate": "호흡수",
           "spo2": "산소포화도", "total_cholesterol": "총콜레스테롤", "ldl": "LDL", "hdl": "HDL",
           "triglycerides": "중성지방", "egfr": "eGFR", "weight": "체중", "height": "키",
           "family": "가족력", "stopped": "중단한 약", "negated": "없음"},
    "en": {"condition": "Conditions", "medication": "Medications", "symptom": "Symptoms",
           "allergy": "Allergies", "blood_pressure": "BP", "fasting_glucose": "Fasting glucose",
           "glucose": "Glucose", "hba1c": "HbA1c", "male": "male", "female": "female",
           "pregnant": "pregnant", "heart_rate": "HR", "temperature": "Temp",
           "respiratory_rate": "RR", "spo2": "SpO2", "total_cholesterol": "Total cholesterol",
           "ldl": "LDL", "hdl": "HDL", "triglycerides": "TG", "egfr": "eGFR", "weight": "Weight",
           "height": "Height", "family": "Family history", "stopped": "Stopped",
           "negated": "Denies"},
}
_MEASURE_ORDER = (("vital", "blood_pressure"), ("vital", "heart_rate"), ("vital", "temperature"),
                  ("vital", "spo2"), ("vital", "respiratory_rate"), ("lab", "fasting_glucose"),
                  ("lab", "glucose"), ("lab", "hba1c"), ("lab", "total_cholesterol"), ("lab", "ldl"),
                  ("lab", "hdl"), ("lab", "triglycerides"), ("lab", "egfr"), ("body", "weight"),
                  ("body", "height"))


def _num(v: float | None) -> str:
    if v is None:
        return "?"
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


def _measure(f: Fact) -> str:
    if f.key == "blood_pressure":
        return f"{_num(f.value)}/{_num(f.value2)} {f.unit}"
    return f"{_num(f.value)} {f.unit}"


def _demographics(p: Profile, lang: str) -> str:
    labels = _LABELS[lang]
    age = p.demographics.get("age")
    group = p.demographics.get("age_group")
    sex = p.demographics.get("sex")
    parts = []
    if lang == "ko":
        if age is not None:
            parts.append(f"{_num(age.value)}세")
        elif group is not None:
            parts.append(group.text_value or "")
        if sex is not None:
            parts.append(labels[sex.text_value or ""] if sex.text_value in labels else "")
    else:
        if age is not None:
            parts.append(f"{_num(age.value)}-year-old")
        elif group is not None:
            parts.append(f"in their {(group.text_value or '').replace('대', '')}s")
        if sex is not None:
            parts.append(labels.get(sex.text_value or "", ""))
    if (preg := p.demographics.get("pregnant")) is not None and preg.value:
        parts.append(labels["pregnant"])
    return " ".join(x for x in parts if x)


def profile_summary(p: Profile, lang: str = "ko") -> str:
    """One line: demographics | conditions | medications | symptoms | allergies | family
    history | stopped medications | pertinent negatives | measurements.

    Returns ``""`` for an empty profile. Measurements show the newest value; a lab value also
    shows the date it was reported (UTC), since an old result may no longer hold.
    """
    lang = lang if lang in _LABELS else "en"
    labels = _LABELS[lang]
    parts = [_demographics(p, lang)]
    for slot in ("condition", "medication", "symptom", "allergy"):
        names = p.names(slot, lang)
        if names:
            parts.append(f"{labels[slot]}: {', '.join(names)}")
    for status in ("family", "stopped", "negated"):
        names = p.context_names(status, lang)
        if names:
            parts.append(f"{labels[status]}: {', '.join(names)}")
    for slot, key in _MEASURE_ORDER:
        if (f := p.latest(slot, key)) is not None:
            when = f" ({as_utc(f.observed_at).date().isoformat()})" if slot == "lab" else ""
            parts.append(f"{labels[key]}: {_measure(f)}{when}")
    return " | ".join(x for x in parts if x)


_ALIASES = {"blood_pressure": ("혈압", "blood pressure", "bp"), "fasting_glucose": ("공복혈당", "fasting"),
            "glucose": ("혈당", "glucose", "sugar"), "hba1c": ("당화혈색소", "hba1c", "a1c"),
            "total_cholesterol": ("콜레스테롤", "cholesterol"), "ldl": ("ldl",), "hdl": ("hdl",),
            "triglycerides": ("중성지방", "triglyceride"), "egfr": ("egfr", "사구체", "콩팥 기능", "kidney function"),
            "heart_rate": ("맥박", "심박", "heart rate", "pulse"), "temperature": ("체온", "열", "temperature"),
            "spo2": ("산소포화도", "spo2", "oxygen"), "weight": ("체중", "몸무게", "weight")}


def stated_values(p: Profile, question: str, this_turn: list[tuple[str, str]], lang: str = "ko") -> list[str]:
    """The user's own measurements a "what does my value mean" question is about, as
    ``label value unit`` (``혈압 160/100 mmHg``): the ones stated in this very message
    (``this_turn``: (slot, key) pairs), else the profile's latest of each measure the question
    names (``혈압``, ``HbA1c``, ``blood pressure``...). Empty when there is none."""
    lang = lang if lang in _LABELS else "en"
    low = question.lower()
    keys = list(dict.fromkeys(this_turn)) or [
        (slot, key) for slot, key in _MEASURE_ORDER if any(a in low for a in _ALIASES.get(key, ()))]
    out = []
    for slot, key in keys:
        if (f := p.latest(slot, key)) is not None:
            out.append(f"{_LABELS[lang][key]} {_measure(f)}")
    return out
