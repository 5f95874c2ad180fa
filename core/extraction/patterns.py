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

NUM = r"(\d{1,5}(?:\.\d+)?)"
_AGE_KO = re.compile(r"(?:만\s*)?(\d{1,3})\s*(?:세|살)(?!\s*(?:때|부터|에|이전|짜리\s*(?:아들|딸|아이)))")
_AGE_GROUP_KO = re.compile(r"(\d)0\s*대(?:\s*(?:초반|중반|후반))?")
_AGE_GROUP_EN = re.compile(r"\bin\s+(?:my|his|her|their)\s+(?:early\s+|mid\s+|mid-|late\s+)?(\d)0'?s\b", re.I)
_AGE_EN = re.compile(r"\b(\d{1,3})[- ]?(?:years?|yrs?|y)[- ]?old\b|\baged?\s*:?\s+(\d{1,3})\b"
                     r"|\bi(?:'m| am)\s+(\d{1,3})\b(?!\s*(?:kg|cm|lb|%|mg|mmhg|/|'|\"|ft|feet|foot|inch|m\b|kilo"
                     r"|pound|weeks?|months?|days?|hours?|times|x\b|mins?|minutes))"
                     r"|\b(\d{1,3})\s*(?:yo|y/o)\b|\b(\d{2})\s?([mf])(?![a-z])"
                     r"|\b(?:male|female|man|woman|guy|girl|lady)\s*,\s*(\d{1,3})\b(?!\s*(?:kg|cm|lb))", re.I)
_SEX_KO = re.compile(r"(?<![가-힣])(남성|남자|여성|여자)(?!\s*(?:친구|아이|애|분|들|화장실|형제|동생))")
_SEX_EN = re.compile(r"\b(?:i(?:'?m| am)\s+(?:an?\s+)?(?:\d{1,3}\s*,?\s*)?(?:\d{1,3}[- ]?(?:years?|yrs?)[- ]?old\s+)?"
                     r"|\d{1,3}[- ]?(?:years?|yrs?)[- ]?old\s+|\d{1,3}\s*(?:yo|y/o)\s+|^\s*|\d{1,3}\s*,\s*)"
                     r"(male|man|female|woman|guy|girl|boy|lady)\b|\bsex\s*:\s*(m|f|male|female)\b", re.I)
_MALE = {"male", "man", "guy", "boy", "m", "남성", "남자"}
# Another person as the subject: their age, sex and numbers are not the user's.
_OTHER_PERSON = re.compile(
    r"(?<![가-힣])(?:아버지|아버님|아빠|어머니|어머님|엄마|부모님|할머니|할아버지|형|누나|오빠|언니|동생|남편|아내|와이프|"
    r"아들|딸|아이|아기|애|친구|동료)(?:가|이|는|은|도|의|께서)?(?:\s|$)|우리\s*(?:애|아이|아들|딸)"
    r"|\b(?:my|our|his|her)\s+(?:dad|father|mom|mum|mother|son|daughter|kid|child|baby|husband|wife|"
    r"brother|sister|grandma|grandpa|grandmother|grandfather|friend|partner)(?:'s)?\b|이신데|이세요|세이신|살이신", re.I)
_SELF = re.compile(r"저는|제가|저도|전\s|나는|내가|\bi'?m\b|\bi\s+am\b|\bmine\b|\bmy\s+(?!dad|father|mom|mum|mother|son|"
                   r"daughter|kid|child|baby|husband|wife|brother|sister|grand|friend|partner)", re.I)


def about_other(text: str, start: int) -> bool:
    """True when the value at ``start`` belongs to another person: a relative is named before it
    in its sentence and the user is not named between them (``아버지가 75세이신데``,
    ``my dad's bp is 180/110``)."""
    sent = max(text.rfind(ch, 0, start) for ch in ".!?\n") + 1
    before = text[sent:start]
    other = None
    for other in _OTHER_PERSON.finditer(before):
        pass
    if other is None:
        return False
    return not _SELF.search(before[other.end():])


def _age(text: str, rejected: list[Rejected]) -> int | None:
    for rx in (_AGE_KO, _AGE_EN):
        for m in rx.finditer(text):
            raw = next((g for i, g in enumerate(m.groups()) if g and i != 5), None)
            if raw is None or about_other(text, m.start()) or _OTHER_PERSON.search(m.group(0) + text[m.end():m.end() + 4]):
                continue
            age = int(raw)
            if _ok("age", age):
                return age
            rejected.append(Rejected("age", f"age {age}"))
            return None
    return None


def _sex(text: str) -> str | None:
    for rx in (_SEX_KO, _SEX_EN, _AGE_EN):
        for m in rx.finditer(text):
            word = next((g for g in (m.groups()[5:6] if rx is _AGE_EN else m.groups()) if g), None)
            if word is None or about_other(text, m.start()):
                continue
            return "male" if word.lower() in _MALE else "female"
    return None


_PREG = re.compile(r"임신\s*(?:중|\d+\s*주|했|하고)|임산부|\bpregnan(?:t|cy)\b", re.I)
_PREG_NEG = re.compile(r"임신(?:은|이)?\s*(?:아니|안\s*했|하지\s*않)|\bnot\s+pregnant\b", re.I)

_BP = re.compile(r"(\d{2,3})\s*(?:/|에|over|-)\s*(\d{2,3})(\s*mm\s*hg)?"
                 r"|수축기\D{0,6}(\d{2,3})\D{0,10}이완기\D{0,6}(\d{2,3})|위\s*(?:혈압)?\D{0,4}(\d{2,3})\D{0,6}아래\D{0,6}(\d{2,3})"
                 r"|systolic\D{0,6}(\d{2,3})\D{0,12}diastolic\D{0,6}(\d{2,3})", re.I)
_REFERENCE = re.compile(r"정상|목표|기준|이하로|미만|\bnormal\b|\btarget\b|\bgoal\b|\bunder\b|\bbelow\b", re.I)
_BP_CONTEXT = re.compile(r"혈압|\bbp\b|blood\s*pressure|mm\s*hg", re.I)
_FASTING_KO = re.compile(r"공복\s*(?:시|에|상태(?:에서)?)?\s*(?:잰|측정한|재면|재니)?\s*혈당(?:\s*수치)?\s*(?:은|는|이|가|:)?\s*(?:약\s*)?" + NUM
                         + r"\s*(mg/dl|mmol/l|밀리몰)?", re.I)
_FASTING_BARE = re.compile(r"\bfasting\s+(?:is\s+|was\s+|of\s+)?(\d{1,3}(?:\.\d+)?)\s*(mg/dl|mmol/l)", re.I)
_AFTER_MEAL = re.compile(r"(?:식후(?:\s*2시간)?\s*(?:혈당)?|after\s+(?:breakfast|lunch|dinner|meals?|eating)"
                         r"|post-?prandial(?:\s+glucose)?)\s*(?:은|는|이|가|:|was|is|of)?\s*(?:약\s*|about\s+)?"
                         r"(\d{2,4}(?:\.\d+)?)\s*(mg/dl|mmol/l)?", re.I)
_GLUCOSE_KO = re.compile(r"(?<!공복)(?<!공복\s)(?<!식후)(?<!식후\s)혈당(?:\s*수치)?\s*(?:은|는|이|가|:)?\s*(?:약\s*)?" + NUM
                         + r"\s*(mg/dl|mmol/l)?", re.I)
_FASTING_EN = re.compile(r"\bfasting\s+(?:blood\s+|plasma\s+)?(?:glucose|sugar)(?:\s+level)?"
                         r"\s*(?:is|was|of|at|=|:)?\s*(?:about\s+|around\s+)?" + NUM
                         + r"\s*(mg/dl|mmol/l)?", re.I)
_GLUCOSE_EN = re.compile(r"\b(?<!fasting )(?:blood\s+)?(?:glucose|sugar)(?:\s+level)?"
                         r"\s*(?:is|was|of|at|=|:)?\s*(?:about\s+|around\s+)?" + NUM
                         + r"\s*(mg/dl|mmol/l)?", re.I)
_HBA1C = re.compile(r"(?:hba1c|hb\s*a1c|\ba1c|당화\s*혈색소)\s*(?:수치)?\s*(?:은|는|이|가|is|was|of|at|=|:|came back"
                    r"|went up to|dropped to|is now|now)?"
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
    """The user's age, age group (``60대``), sex (``male``/``female``) and pregnancy.

    Values about another person (``아버지가 75세이신데``, ``my son is 5``) are skipped; an
    implausible age (``250살``) goes to ``rejected``.
    """
    out: dict[str, Any] = {}
    age = _age(text, rejected)
    if age is not None:
        out["age"] = age
        out["age_group"] = f"{age // 10 * 10}대"
    else:
        for rx in (_AGE_GROUP_KO, _AGE_GROUP_EN):
            g = next((g for g in rx.finditer(text) if not about_other(text, g.start())), None)
            if g is not None:
                out["age_group"] = f"{g.group(1)}0대"
                break
    if (sex := _sex(text)) is not None:
        out["sex"] = sex
    if _PREG_NEG.search(text):
        out["pregnant"] = False
    elif _PREG.search(text):
        out["pregnant"] = True
    return out


def _own(text: str, m: re.Match) -> bool:
    """The value is the user's current one: not another person's, not a reference or target."""
    if about_other(text, m.start()):
        return False
    return not _REFERENCE.search(text[max(0, m.start() - 12):m.start()])


def vitals(text: str, rejected: list[Rejected]) -> list[Measurement]:
    """Blood pressure readings (systolic/diastolic mmHg) when the message is about BP
    (``150/95``, ``118에 76``, ``132 over 86``, ``수축기 135 이완기 88``)."""
    out: list[Measurement] = []
    if not _BP_CONTEXT.search(text):
        return out
    for m in _BP.finditer(text):
        if not _own(text, m):
            continue
        g = m.groups()
        sys_raw, dia_raw = next((a, b) for a, b in ((g[0], g[1]), (g[3], g[4]), (g[5], g[6]), (g[7], g[8])) if a and b)
        sys_, dia = float(sys_raw), float(dia_raw)
        if _ok("systolic", sys_) and _ok("diastolic", dia) and sys_ > dia:
            out.append(Measurement("blood_pressure", "blood pressure", sys_, "mmHg", dia, m.group(0)))
        else:
            rejected.append(Rejected("blood_pressure", f"blood pressure {sys_raw}/{dia_raw}"))
    return out


def labs(text: str, rejected: list[Rejected]) -> list[Measurement]:
    """Fasting, after-meal and random glucose (mg/dL) and HbA1c (%) of the user."""
    out: list[Measurement] = []
    fasting = next((m for rx in (_FASTING_KO, _FASTING_EN, _FASTING_BARE) for m in rx.finditer(text)
                    if _own(text, m)), None)
    after = next((m for m in _AFTER_MEAL.finditer(text) if _own(text, m)), None)
    if fasting:
        _glucose(out, rejected, "fasting_glucose", "fasting glucose", fasting)
    if after:
        _glucose(out, rejected, "glucose", "blood glucose", after)
    if not fasting and not after:
        other = next((m for rx in (_GLUCOSE_KO, _GLUCOSE_EN) for m in rx.finditer(text) if _own(text, m)), None)
        if other:
            _glucose(out, rejected, "glucose", "blood glucose", other)
    if (m := next((m for m in _HBA1C.finditer(text) if _own(text, m)), None)):
        value = float(m.group(1))
        if _ok("hba1c", value):
            out.append(Measurement("hba1c", "HbA1c", value, "%", None, m.group(0)))
        else:
            rejected.append(Rejected("hba1c", f"HbA1c {value}%"))
    return out


def _glucose(out: list[Measurement], rejected: list[Rejected], key: str, name: str, m: re.Match) -> None:
    value = float(m.group(1))
    unit = (m.group(2) or "").lower()
    if unit in ("mmol/l", "밀리몰") or (not unit and value < 35):
        value = round(value * 18.016, 1)  # no glucose below 35 mg/dL is typed as a value: mmol/L
    if _ok("glucose", value):
        out.append(Measurement(key, name, value, "mg/dL", None, m.group(0)))
    else:
        rejected.append(Rejected(key, f"{name} {m.group(1)}"))
