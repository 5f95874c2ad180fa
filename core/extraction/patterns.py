"""Regular expressions for demographics and numbers, Korean and English (SPEC.md §3.1).

Canonical units: blood pressure mmHg; heart rate beats/min; temperature °C (°F converted by
(F − 32) × 5/9); respiratory rate breaths/min; SpO2 %; glucose mg/dL (mmol/L × 18.016, the
molar mass of glucose 180.16 g/mol / 10); HbA1c % (NGSP); total, LDL and HDL cholesterol mg/dL
(mmol/L × 38.67, molar mass of cholesterol 386.65 g/mol / 10); triglycerides mg/dL (mmol/L ×
88.57, triolein 885.7 g/mol / 10); eGFR mL/min/1.73 m²; weight kg (lb × 0.45359237); height
cm (inches × 2.54). Values outside the ranges in :data:`PLAUSIBLE` are not stored; they are
listed in ``Slots.rejected`` so the reply asks the user to confirm.
"""

from __future__ import annotations

import re
from typing import Any

from core.extraction.slots import Measurement, Rejected

NUM = r"(\d{1,3}(?:\.\d+)?)"
_AGE_KO = re.compile(r"(?:만\s*)?(\d{1,3})\s*(?:세|살)(?!\s*(?:때|부터|에|이전))")
_AGE_GROUP_KO = re.compile(r"(\d)0\s*대(?:\s*(?:초반|중반|후반))?")
_AGE_EN = re.compile(r"\b(\d{1,3})[- ]?(?:years?|yrs?|y)[- ]?old\b|\baged?\s+(\d{1,3})\b"
                     r"|\bi(?:'m| am)\s+(\d{1,3})\b(?!\s*(?:kg|cm|lb|%|mg|mmhg|/|'|\"|ft|feet|foot|inch|m\b|kilo|pound))"
                     r"|\b(\d{1,3})\s*(?:yo|y/o)\b|\b(\d{2})\s?([mf])\b", re.I)
_SEX_KO = re.compile(r"(남성|남자|여성|여자)(?:이고|이에요|예요|입니다|이며|이구요|인데|,|\s|$)")
_SEX_EN = re.compile(r"\b(?:i(?:'m| am)\s+(?:an?\s+)?(?:\d{1,3}[- ]?(?:years?|yrs?)[- ]?old\s+)?"
                     r"|\d{1,3}[- ]?(?:years?|yrs?)[- ]?old\s+|\d{1,3}\s*(?:yo|y/o)\s+)"
                     r"(male|man|female|woman)\b", re.I)
_PREG = re.compile(r"임신\s*(?:중|\d+\s*주|했|하고)|임산부|\bpregnan(?:t|cy)\b", re.I)
_PREG_NEG = re.compile(r"임신(?:은|이)?\s*(?:아니|안\s*했|하지\s*않)|\bnot\s+pregnant\b", re.I)

_BP = re.compile(r"(\d{2,3})\s*/\s*(\d{2,3})(\s*mm\s*hg)?", re.I)
_BP_CONTEXT = re.compile(r"혈압|\bbp\b|blood\s*pressure|mm\s*hg", re.I)
_FASTING_KO = re.compile(r"공복\s*(?:시\s*)?혈당(?:\s*수치)?\s*(?:은|는|이|가|:)?\s*(?:약\s*)?" + NUM
                         + r"\s*(mg/dl|mmol/l|밀리몰)?", re.I)
_GLUCOSE_KO = re.compile(r"(?<!공복)(?<!공복\s)혈당(?:\s*수치)?\s*(?:은|는|이|가|:)?\s*(?:약\s*)?" + NUM
                         + r"\s*(mg/dl|mmol/l)?", re.I)
_FASTING_EN = re.compile(r"\bfasting\s+(?:blood\s+|plasma\s+)?(?:glucose|sugar)(?:\s+level)?"
                         r"\s*(?:is|was|of|at|=|:)?\s*(?:about\s+|around\s+)?" + NUM
                         + r"\s*(mg/dl|mmol/l)?", re.I)
_GLUCOSE_EN = re.compile(r"\b(?<!fasting )(?:blood\s+)?(?:glucose|sugar)(?:\s+level)?"
                         r"\s*(?:is|was|of|at|=|:)?\s*(?:about\s+|around\s+)?" + NUM
                         + r"\s*(mg/dl|mmol/l)?", re.I)
_HBA1C = re.compile(r"(?:hba1c|hb\s*a1c|\ba1c|당화\s*혈색소)\s*(?:수치)?\s*(?:은|는|이|가|is|was|of|at|=|:)?"
                    r"\s*(?:about\s+|around\s+|약\s*)?" + NUM + r"\s*%?", re.I)

PLAUSIBLE = {"age": (0, 120), "systolic": (50, 300), "diastolic": (20, 200),
             "glucose": (20, 1500), "hba1c": (3.0, 20.0), "heart_rate": (20, 250),
             "temperature": (30.0, 45.0), "respiratory_rate": (4, 70), "spo2": (50, 100),
             "total_cholesterol": (50, 1000), "ldl": (10, 700), "hdl": (5, 200),
             "triglycerides": (10, 5000), "egfr": (1, 200), "weight": (2, 350),
             "height": (40, 250)}
"""Physiologically possible ranges in canonical units (wider than any reference range: a value
outside them is a typo or a unit mix-up, not a finding)."""


def _ok(kind: str, value: float) -> bool:
    lo, hi = PLAUSIBLE[kind]
    return lo <= value <= hi


def demographics(text: str, rejected: list[Rejected]) -> dict[str, Any]:
    """Age, age group (``60대``), sex (``male``/``female``) and pregnancy from a message."""
    out: dict[str, Any] = {}
    m = _AGE_KO.search(text)
    en = _AGE_EN.search(text)
    raw = m.group(1) if m else next((g for g in (en.groups()[:5] if en else ()) if g), None)
    if raw is not None:
        age = int(raw)
        if _ok("age", age):
            out["age"] = age
            out["age_group"] = f"{age // 10 * 10}대"
        else:
            rejected.append(Rejected("age", f"age {age}"))
    if "age" not in out and (g := _AGE_GROUP_KO.search(text)):
        out["age_group"] = f"{g.group(1)}0대"
    if (s := _SEX_KO.search(text)):
        out["sex"] = "male" if s.group(1) in ("남성", "남자") else "female"
    elif (s := _SEX_EN.search(text)):
        out["sex"] = "male" if s.group(1).lower() in ("male", "man") else "female"
    elif en and en.group(6):
        out["sex"] = "male" if en.group(6).lower() == "m" else "female"
    if _PREG_NEG.search(text):
        out["pregnant"] = False
    elif _PREG.search(text):
        out["pregnant"] = True
    return out


def vitals(text: str, rejected: list[Rejected]) -> list[Measurement]:
    """Blood pressure readings (systolic/diastolic mmHg) when the message is about BP."""
    out: list[Measurement] = []
    if not _BP_CONTEXT.search(text):
        return out
    for m in _BP.finditer(text):
        sys_, dia = float(m.group(1)), float(m.group(2))
        if _ok("systolic", sys_) and _ok("diastolic", dia) and sys_ > dia:
            out.append(Measurement("blood_pressure", "blood pressure", sys_, "mmHg", dia, m.group(0)))
        else:
            rejected.append(Rejected("blood_pressure", f"blood pressure {m.group(1)}/{m.group(2)}"))
    return out


def labs(text: str, rejected: list[Rejected]) -> list[Measurement]:
    """Fasting / random glucose (mg/dL) and HbA1c (%) values."""
    out: list[Measurement] = []
    fasting = _FASTING_KO.search(text) or _FASTING_EN.search(text)
    if fasting:
        _glucose(out, rejected, "fasting_glucose", "fasting glucose", fasting)
    else:
        other = _GLUCOSE_KO.search(text) or _GLUCOSE_EN.search(text)
        if other:
            _glucose(out, rejected, "glucose", "blood glucose", other)
    if (m := _HBA1C.search(text)):
        value = float(m.group(1))
        if _ok("hba1c", value):
            out.append(Measurement("hba1c", "HbA1c", value, "%", None, m.group(0)))
        else:
            rejected.append(Rejected("hba1c", f"HbA1c {value}%"))
    return out


def _glucose(out: list[Measurement], rejected: list[Rejected], key: str, name: str, m: re.Match) -> None:
    value = float(m.group(1))
    unit = (m.group(2) or "").lower()
    if unit in ("mmol/l", "밀리몰") or (not unit and value < 35 and "." in m.group(1)):
        value = round(value * 18.016, 1)
    if _ok("glucose", value):
        out.append(Measurement(key, name, value, "mg/dL", None, m.group(0)))
    else:
        rejected.append(Rejected(key, f"{name} {m.group(1)}"))
