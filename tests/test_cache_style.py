"""Style variation of served cache hits (SPEC.md §5): connectors and closing phrases vary;
numbers, units, doses, drug and condition names and citations never do."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from core.cache.style import PHRASES, fixed_segments, vary_style
from core.llm import offline

DRUGS = ["metformin", "warfarin", "메트포르민", "와파린", "amlodipine", "insulin glargine", "아스피린"]
CONDITIONS = ["type 2 diabetes", "hypertension", "고혈압", "당뇨병", "chronic kidney disease", "통풍"]
UNITS = ["mg", "mg/dL", "mmHg", "%", "mmol/L", "IU", "mL/min/1.73m²", "회", "정"]

number = st.builds(lambda a, b: f"{a}.{b}" if b else str(a), st.integers(0, 5000),
                   st.integers(0, 9))
dose = st.builds(lambda n, u: f"{n} {u}", number, st.sampled_from(UNITS))
citation = st.integers(1, 15).map(lambda n: f"[{n}]")
phrase = st.sampled_from([p for lang in PHRASES for g in PHRASES[lang] for p in g])
word = st.sampled_from(["take", "daily", "with", "food", "하루", "두 번", "복용", "the", "dose", "is",
                        "식후", "blood pressure", "target", "below"])
token = st.one_of(dose, number, citation, phrase, word, st.sampled_from(DRUGS),
                  st.sampled_from(CONDITIONS))
line = st.lists(token, min_size=1, max_size=12).map(" ".join)
answer = st.lists(line, min_size=1, max_size=8).map("\n".join)

# a Korean unit (회, 정) is a unit only when no Hangul follows: "0 정리하면" is a number and a phrase
PROTECTED = re.compile(r"\d+(?:\.\d+)?\s*(?:(?:mg/dL|mg|mmHg|%|mmol/L|IU|mL/min/1\.73m²|회|정)(?![가-힣]))?"
                       r"|\[\d+\]|" + "|".join(re.escape(w) for w in DRUGS + CONDITIONS))


@settings(max_examples=300, deadline=None)
@given(text=answer, lang=st.sampled_from(["ko", "en"]), level=st.floats(0.0, 1.0),
       seed=st.text(max_size=12))
def test_variation_changes_only_the_phrases(text, lang, level, seed):
    varied = vary_style(text, lang, level, seed)
    assert fixed_segments(varied, lang) == fixed_segments(text, lang)
    assert PROTECTED.findall(varied) == PROTECTED.findall(text)
    assert varied == vary_style(text, lang, level, seed)  # seeded: deterministic


def test_level_zero_is_the_stored_text():
    text = "Here is what the retrieved sources say about your question.\nHowever, rest."
    assert vary_style(text, "en", 0.0, "s") == text


def test_full_level_changes_every_phrase_and_keeps_cited_lines_verbatim():
    stored = ("찾은 자료에서 질문과 관련된 내용을 정리했어요.\n\n"
              "- 하지만 메트포르민 500 mg을 하루 2회 식후 복용합니다 [1]\n"
              "또한 혈당을 확인하세요. 도움이 되었으면 해요.")
    seen = {vary_style(stored, "ko", 1.0, f"seed{i}") for i in range(12)}
    assert stored not in seen and len(seen) > 1
    for v in seen:
        assert "- 하지만 메트포르민 500 mg을 하루 2회 식후 복용합니다 [1]" in v  # a quote: untouched
        assert not v.startswith("찾은 자료에서 질문과 관련된 내용을 정리했어요.")


def test_the_offline_openings_are_variable_phrases():
    for lang in ("ko", "en"):
        assert any(offline._OPENING[lang] in g for g in PHRASES[lang])
