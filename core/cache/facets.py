"""Topic facets the concept table does not hold: lab tests and vital signs named without a value
("normal range for LDL" vs "for triglycerides") and lifestyle factors and exposures ("alcohol
with metformin" vs "coffee with metformin"). Part of the cache key's concept set
(:mod:`core.cache.key`); measured on the team's calibration pairs, where such pairs were the
hard negatives that the concepts alone let through (docs/benchmarks.md, "Response cache").

Each facet is an id with Korean and English cues (regular expressions over the case-folded
text); synonyms share an id ("work out" and "exercise", "술" and "alcohol").
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

FACETS: dict[str, tuple[str, ...]] = {
    # lab tests and vital signs (the extractor's measurement keys, named without a value)
    "lab:hba1c": (r"hba1c", r"\ba1c\b", r"당화\s*혈색소", r"glycated h(a)?emoglobin"),
    "lab:glucose": (r"blood (?:sugar|glucose)", r"\bglucose\b", r"혈당", r"sugar level"),
    "lab:ldl": (r"\bldl(?:\s?cholesterol|\s?콜레스테롤)?", r"bad cholesterol", r"나쁜\s?콜레스테롤"),
    "lab:hdl": (r"\bhdl(?:\s?cholesterol|\s?콜레스테롤)?", r"good cholesterol", r"좋은\s?콜레스테롤"),
    "lab:cholesterol": (r"(?<!ldl )(?<!hdl )(?<!ldl)(?<!hdl)(?<!bad )(?<!good )cholesterol",
                        r"(?<!ldl )(?<!hdl )(?<!ldl)(?<!hdl)(?<!나쁜 )(?<!좋은 )(?<!나쁜)(?<!좋은)콜레스테롤"),
    "lab:triglycerides": (r"triglycerides?", r"중성\s*지방"),
    "lab:blood_pressure": (r"blood pressure", r"\bbp\b", r"혈압"),
    "lab:heart_rate": (r"heart rate", r"\bpulse\b", r"심박", r"맥박"),
    "lab:egfr": (r"\begfr\b", r"사구체\s*여과율", r"kidney function", r"신장\s*기능", r"콩팥\s*기능"),
    "lab:creatinine": (r"creatinine", r"크레아티닌"),
    "lab:tsh": (r"\btsh\b", r"thyroid (?:level|test)", r"갑상선\s*(?:수치|검사)"),
    "lab:inr": (r"\binr\b", r"\bpt/inr\b"),
    "lab:uric_acid": (r"uric acid", r"요산"),
    "lab:liver_enzymes": (r"\balt\b", r"\bast\b", r"liver enzymes?", r"간\s*수치"),
    "lab:vitamin_d": (r"vitamin d", r"비타민\s*d"),
    "lab:hemoglobin": (r"h(a)?emoglobin(?! a1c)", r"(?<!당화\s)(?<!당화)혈색소"),
    "lab:psa": (r"\bpsa\b",),
    "lab:bmi": (r"\bbmi\b", r"체질량\s*지수"),
    "lab:spo2": (r"\bspo2\b", r"oxygen saturation", r"산소\s*포화도"),
    # lifestyle factors and exposures
    "factor:alcohol": (r"alcohol", r"\bdrink(?:ing)? (?:beer|wine|liquor)", r"\bbeer\b", r"\bwine\b",
                       r"술", r"음주", r"맥주", r"소주", r"와인"),
    "factor:caffeine": (r"coffee", r"caffeine", r"\btea\b", r"커피", r"카페인", r"녹차"),
    "factor:smoking": (r"smok\w*", r"cigarette", r"vap\w+", r"담배", r"흡연", r"전자담배"),
    "factor:exercise": (r"exercis\w*", r"work(?:ing)? ?out", r"\bgym\b", r"\bsports?\b",
                        r"\bwalking\b", r"\brunning\b", r"운동", r"헬스", r"걷기", r"달리기"),
    "factor:sleep": (r"\bsleep\w*", r"insomnia", r"\bnap\b", r"잠", r"수면"),
    "factor:salt": (r"\bsalt\w*", r"sodium", r"소금", r"나트륨", r"짠\s*음식"),
    "factor:sugar": (r"(?<!blood )\bsugar(?!\s*level)(?! diabetes)", r"sweets", r"dessert", r"설탕", r"단\s*음식",
                     r"단\s*것", r"단\s*걸"),
    "factor:grapefruit": (r"grapefruit", r"자몽"),
    "factor:dairy": (r"\bmilk\b", r"dairy", r"우유", r"유제품"),
    "factor:meat": (r"red meat", r"\bmeat\b", r"고기", r"육류"),
    "factor:fruit": (r"(?<!grape)fruits?\b", r"(?<!자몽\s)과일"),
    "factor:water": (r"\bwater\b", r"fluids?", r"물을", r"수분"),
    "factor:weight": (r"weight", r"\bdieting\b", r"체중", r"살\s*(?:빼|빠|찌)", r"다이어트"),
    "factor:stress": (r"\bstress\w*", r"스트레스"),
    "factor:travel": (r"travel\w*", r"\bflight\b", r"\bfly(?:ing)?\b", r"여행", r"비행기"),
    "factor:sex": (r"\bsex\b", r"intercourse", r"성관계"),
    "factor:driving": (r"\bdriv\w+", r"운전"),
    "factor:sun": (r"\bsun\b", r"sunlight", r"햇빛", r"자외선"),
    "factor:storage": (r"\bstor(?:e|age|ing)\b", r"refrigerat\w*", r"fridge", r"보관", r"냉장"),
    "factor:injection": (r"inject\w*", r"\bshots?\b", r"주사"),
    "factor:vaccine": (r"vaccin\w*", r"\bjab\b", r"백신", r"예방\s*접종"),
}
"""Facet id -> cues (the team's list)."""


@lru_cache(maxsize=1)
def _compiled() -> dict[str, re.Pattern]:
    return {name: re.compile("|".join(cues)) for name, cues in FACETS.items()}


def facets(text: str) -> list[str]:
    """Sorted facet ids named in ``text`` (NFKC, case-folded here)."""
    norm = unicodedata.normalize("NFKC", text).casefold()
    return sorted(name for name, rx in _compiled().items() if rx.search(norm))


def facet_spans(text: str, prefix: str = "") -> list[str]:
    """The substrings of ``text`` (NFKC, case-folded) that named a facet whose id starts with
    ``prefix`` (``"lab:"``: lab tests only): the words the key's concept part already compares
    (:mod:`core.cache.content` removes them)."""
    norm = unicodedata.normalize("NFKC", text).casefold()
    return [m.group(0) for name, rx in _compiled().items() if name.startswith(prefix)
            for m in rx.finditer(norm)]
