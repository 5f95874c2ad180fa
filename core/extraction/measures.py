"""Vitals, lipids, kidney function and body measures by regular expressions (SPEC.md §3.1).

Complements :mod:`core.extraction.patterns` (blood pressure, glucose, HbA1c) with heart rate,
temperature, respiratory rate, SpO2, total/LDL/HDL cholesterol, triglycerides, eGFR, weight and
height, each converted to the canonical unit named in that module's docstring.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from core.extraction.slots import Measurement, Rejected

_NUM = (r"(?P<v>\d{1,6}(?:\.\d+)?)(?!\s*(?:일|주|개월|달|년|시간|days?|weeks?|months?|years?|hours?|times)\b)"
        r"(?!\d)")
# Words that may sit between a label and its value: particles, verbs, hedges.
_LINK = (r"(?:[\s:=~]*(?:수치|은|는|이|가|이가|도|level|levels|reading|is|was|of|at|around|about|"
         r"approximately|approx\.?|약|대략|now|today|currently|measured|reads?|came back|went up to|"
         r"되고|되는데|나왔|나와|찍혔|측정|쟀더니|재보니|분당|1분에|화씨로|섭씨로|세어보니|were|are|dropped to|"
         r"went down to|rose to|is down to|is up to|is now|of about|on my last|a minute|per minute)){0,4}[\s:=~]*")
_WB = r"(?<![가-힣A-Za-z])"


@dataclass(frozen=True)
class MeasureSpec:
    """One measurement: its key, display name, slot (``vital``, ``lab`` or ``body``), canonical
    unit, label regexes (the value must follow the label), a converter from (value, unit as
    written) to the canonical unit, and the range key of ``patterns.PLAUSIBLE``."""

    key: str
    name: str
    slot: str
    unit: str
    labels: str
    units: str
    convert: Callable[[float, str], float]


def _same(v: float, _u: str) -> float:
    return v


def _temperature(v: float, u: str) -> float:
    celsius = "c" in u or "섭씨" in u
    fahrenheit = "f" in u or (not celsius and 86 <= v <= 115)
    return round((v - 32) * 5 / 9, 1) if fahrenheit else v


def _cholesterol(v: float, u: str) -> float:
    return round(v * 38.67, 1) if "mmol" in u or (not u and v < 20) else v  # < 20 mg/dL: mmol/L


def _triglycerides(v: float, u: str) -> float:
    return round(v * 88.57, 1) if "mmol" in u or (not u and v < 20) else v


def _weight(v: float, u: str) -> float:
    return round(v * 0.45359237, 1) if re.search(r"lb|pound|파운드", u) else v


def _height(v: float, u: str) -> float:
    return round(v * 100, 1) if u.strip() in ("m", "미터") or (not u.strip() and v < 3) else v


SPECS: tuple[MeasureSpec, ...] = (
    MeasureSpec("heart_rate", "heart rate", "vital", "bpm",
                r"맥박|심박수|심박|심장\s*박동|pulse(?:\s*rate)?|heart\s*rate|\bhr\b",
                r"bpm|회|beats?\s*(?:per|a|/)\s*min(?:ute)?|/\s*min", _same),
    MeasureSpec("temperature", "temperature", "vital", "°C",
                r"체온|열이|열은|열도|temp(?:erature)?|fever(?:\s*of)?|running\s*a\s*fever\s*of",
                r"도|℃|°\s*[cf]|degrees?\s*[cf]?|[cf]\b|fahrenheit|celsius", _temperature),
    MeasureSpec("respiratory_rate", "respiratory rate", "vital", "/min",
                r"호흡수|호흡\s*횟수|숨\s*(?:쉬는|쉰)\s*횟수|respiratory\s*rate|resp(?:iration|iratory)?\s*rate|breathing\s*rate|\brr\b",
                r"회|번|breaths?\s*(?:per|a|/)\s*min(?:ute)?|/\s*min", _same),
    MeasureSpec("spo2", "SpO2", "vital", "%",
                r"산소\s*포화도|spo2|sp02|o2\s*sat(?:uration)?s?|oxygen\s*(?:saturation|level|sat)s?|pulse\s*ox",
                r"%|퍼센트|percent", _same),
    MeasureSpec("ldl", "LDL cholesterol", "lab", "mg/dL",
                r"ldl(?:\s*-?\s*c\b)?(?:\s*콜레스테롤|\s*cholesterol)?|저밀도\s*(?:지단백\s*)?콜레스테롤|나쁜\s*콜레스테롤|bad\s*cholesterol",
                r"mg\s*/\s*dl|mmol\s*/\s*l", _cholesterol),
    MeasureSpec("hdl", "HDL cholesterol", "lab", "mg/dL",
                r"hdl(?:\s*-?\s*c\b)?(?:\s*콜레스테롤|\s*cholesterol)?|고밀도\s*(?:지단백\s*)?콜레스테롤|좋은\s*콜레스테롤|good\s*cholesterol",
                r"mg\s*/\s*dl|mmol\s*/\s*l", _cholesterol),
    MeasureSpec("triglycerides", "triglycerides", "lab", "mg/dL",
                r"중성\s*지방|트리글리세라이드|triglycerides?|\btgs?\b",
                r"mg\s*/\s*dl|mmol\s*/\s*l", _triglycerides),
    MeasureSpec("total_cholesterol", "total cholesterol", "lab", "mg/dL",
                r"총\s*콜레스테롤|(?<![가-힣])콜레스테롤|total\s*cholesterol|(?<!ldl )(?<!hdl )\bcholesterol",
                r"mg\s*/\s*dl|mmol\s*/\s*l", _cholesterol),
    MeasureSpec("egfr", "eGFR", "lab", "mL/min/1.73m²",
                r"\be?gfr\b|(?:신|추정)?\s*사구체\s*여과율|신장\s*기능\s*수치",
                r"ml\s*/\s*min(?:\s*/\s*1\.73\s*m(?:2|²))?", _same),
    MeasureSpec("weight", "weight", "body", "kg",
                r"몸무게|체중|weight|\bweigh(?:s|ed|ing)?\b",
                r"kg|킬로(?:그램)?|키로|kilos?|lbs?|pounds?|파운드", _weight),
    MeasureSpec("height", "height", "body", "cm",
                _WB + r"키(?=\s|가|는|도)|신장(?=\s|은|이|:)|height|\bi'?m\b(?=\s*\d{1,3}(?:\.\d+)?\s*(?:cm|m)\b)",
                r"cm|센티(?:미터)?|m\b|미터", _height),
)

_COMPILED = [(s, re.compile(r"(?:" + s.labels + r")" + _LINK + _NUM + r"\s*(?P<u>" + s.units + r")?", re.I))
             for s in SPECS]
_FEET = re.compile(r"\b(?P<ft>\d{1,2})\s*(?:'|ft|feet|foot)\s*(?P<in>\d{1,2})?\s*(?:\"|''|in(?:ches)?)?", re.I)
_BARE = [("weight", re.compile(r"(?<![\d.])" + _NUM + r"\s*(?P<u>kg|킬로그램|lbs?|pounds?|파운드)(?![a-z])", re.I)),
         ("height", re.compile(r"(?<![\d.])(?P<v>1\d{2}(?:\.\d)?)\s*(?P<u>cm|센티)(?![a-z])", re.I)),
         ("heart_rate", re.compile(r"(?<![\d.])" + _NUM + r"\s*(?P<u>bpm)\b", re.I))]


def measures(text: str, plausible: dict[str, tuple[float, float]], rejected: list[Rejected]) -> list[Measurement]:
    """Every measurement of :data:`SPECS` in ``text``, at most one per key (the first).

    Args:
        text: the message.
        plausible: ``key -> (low, high)`` in canonical units.
        rejected: receives ``"<name> <value as written>"`` for each implausible value.
    Returns:
        Measurements in canonical units; ``Measurement.key`` is the spec key and ``name`` its
        English name. The slot is looked up with :func:`slot_of`.
    """
    out: dict[str, Measurement] = {}
    taken: list[tuple[int, int]] = []
    for spec, rx in _COMPILED:
        for m in rx.finditer(text):
            if spec.key in out or any(a <= m.start("v") < b for a, b in taken) or not _current(text, m):
                continue
            _add(out, rejected, plausible, spec, float(m.group("v")), (m.group("u") or "").lower(), m)
            taken.append((m.start("v"), m.end("v")))
    f = _FEET.search(text)
    if "height" not in out and f and (f.group("in") or re.search(r"tall|height|키", text, re.I)):
        inches = int(f.group("ft")) * 12 + int(f.group("in") or 0)
        _add(out, rejected, plausible, _SPEC["height"], round(inches * 2.54, 1), "cm", f)
    for key, rx in _BARE:
        m = next((m for m in rx.finditer(text) if _current(text, m)), None)
        if key not in out and m and not any(a <= m.start() < b for a, b in taken):
            _add(out, rejected, plausible, _SPEC[key], float(m.group("v")), m.group("u").lower(), m)
    return [m for m in out.values() if m.value == m.value]  # NaN marks a rejected value


_CHANGE = re.compile(r"^\S*\s*(?:늘었|늘어|빠졌|빠져|줄었|쪘|감량|증가|감소)")
_CHANGE_BEFORE = re.compile(r"\b(?:lost|gained|dropped|put on|down|up)\s*(?:about\s+|around\s+)?$", re.I)


def _current(text: str, m: re.Match) -> bool:
    """A value of the user now: not another person's, a target, or a change (``2kg 늘었어요``)."""
    from core.extraction.patterns import _REFERENCE, about_other

    if about_other(text, m.start()) or _REFERENCE.search(text[max(0, m.start() - 12):m.start()]):
        return False
    return not (_CHANGE.search(text[m.end():m.end() + 8]) or _CHANGE_BEFORE.search(text[max(0, m.start() - 20):m.start()]))


def _add(out: dict[str, Measurement], rejected: list[Rejected], plausible: dict[str, tuple[float, float]],
         spec: MeasureSpec, value: float, unit: str, m: re.Match) -> None:
    converted = spec.convert(value, unit)
    lo, hi = plausible[spec.key]
    if lo <= converted <= hi:
        out[spec.key] = Measurement(spec.key, spec.name, converted, spec.unit, None, m.group(0).strip())
    else:
        out[spec.key] = Measurement(spec.key, spec.name, float("nan"), spec.unit, None, "")
        written = m.group("v") if "v" in m.groupdict() else value
        rejected.append(Rejected(spec.key, f"{spec.name} {written}{(' ' + unit) if unit else ''}"))


_SPEC = {s.key: s for s in SPECS}


def slot_of(key: str) -> str:
    """The profile slot of a measurement key: ``vital``, ``lab`` or ``body``."""
    return _SPEC[key].slot if key in _SPEC else ("vital" if key == "blood_pressure" else "lab")
