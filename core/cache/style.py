"""Style variation of served cache hits (SPEC.md §5: "connectors and closing phrases only;
never numbers, doses or drug names"), driven by the ``style_variation_level`` flag.

A served answer is the stored one with some of its framing phrases swapped for an equivalent:
the opening line of the offline generator, sentence connectors ("However," / "That said,",
"또한" / "아울러") and closing phrases ("I hope this helps."). Only whole phrases from the
tables below are ever replaced, and no phrase holds a digit, a unit, a citation bracket or a
medical term, so everything else (numbers, units, doses, drug and condition names, citations,
the safety disclaimer) stays byte-identical: :func:`fixed_segments` of the varied answer equals
that of the stored one (a property test checks it over generated answers). A line that holds a
citation (``[2]``) is a claim or a quoted evidence sentence and is never touched, so the offline
generator's quotes stay verbatim.

``level`` (0..1) is the probability that each phrase found is swapped; the choice is seeded
per request (:func:`vary_style`'s ``seed``), so a test, and a user re-reading a turn, sees the
same text for the same seed.
"""

from __future__ import annotations

import hashlib
import random
import re
from functools import lru_cache

PHRASES: dict[str, list[list[str]]] = {
    "en": [
        ["Here is what the retrieved sources say about your question.",
         "This is what the sources I found say about your question.",
         "Here is a summary of what the sources say about your question.",
         "The sources I found say the following about your question."],
        ["However,", "That said,", "Even so,"],
        ["Also,", "In addition,", "Besides,"],
        ["For example,", "For instance,"],
        ["Therefore,", "So,", "As a result,"],
        ["In short,", "In summary,", "To sum up,"],
        ["I hope this helps.", "I hope this is useful.", "I hope that answers your question."],
        ["Feel free to ask if anything is unclear.", "Ask me again if anything is unclear.",
         "Let me know if you have more questions."],
    ],
    "ko": [
        ["찾은 자료에서 질문과 관련된 내용을 정리했어요.",
         "찾은 자료에서 질문에 관련된 내용을 모아 봤어요.",
         "질문과 관련해 자료에 나온 내용을 정리해 드릴게요.",
         "자료에서 찾은 관련 내용을 정리해 드려요."],
        ["하지만", "그러나", "다만"],
        ["또한", "아울러", "그리고"],
        ["예를 들어", "예컨대"],
        ["따라서", "그러므로", "그래서"],
        ["요약하면", "정리하면", "간단히 말해"],
        ["도움이 되었으면 해요.", "도움이 되길 바라요.", "참고가 되셨으면 좋겠어요."],
        ["더 궁금한 점이 있으면 물어봐 주세요.", "궁금한 점이 더 있으면 언제든 물어보세요."],
    ],
}
"""Groups of interchangeable framing phrases per language (the team's; no digits, units,
brackets or medical terms, which :func:`_check_tables` enforces at import)."""

_FORBIDDEN = re.compile(r"[\d\[\]%/]|mg|mmHg")
_CITATION = re.compile(r"\[\d+\]")


def _check_tables() -> None:
    for lang, groups in PHRASES.items():
        for group in groups:
            if len(group) < 2 or len(set(group)) != len(group):
                raise ValueError(f"style phrases ({lang}): a group needs ≥ 2 distinct phrases")
            for p in group:
                if _FORBIDDEN.search(p):
                    raise ValueError(f"style phrase may not hold digits, units or brackets: {p!r}")


_check_tables()


@lru_cache(maxsize=4)
def _pattern(lang: str) -> tuple[re.Pattern, dict[str, list[str]]]:
    group_of = {p: g for g in PHRASES.get(lang, []) for p in g}
    alts = sorted(group_of, key=len, reverse=True)
    pattern = re.compile(r"(?<!\w)(?:" + "|".join(re.escape(a) for a in alts) + r")(?!\w)")
    return pattern, group_of


def fixed_segments(text: str, lang: str) -> list[str]:
    """The text between variable phrases (what style variation must never change): lines with
    a citation whole, other lines split at the phrases."""
    if lang not in PHRASES:
        return [text]
    out: list[str] = []
    for line in text.splitlines(keepends=True):
        out += [line] if _CITATION.search(line) else _pattern(lang)[0].split(line)
    return out


def vary_style(text: str, lang: str, level: float, seed: str) -> str:
    """A variant of ``text``: each framing phrase of :data:`PHRASES` found is swapped, with
    probability ``level`` (0..1), for another phrase of its group.

    Args:
        text: the stored answer.
        lang: ``ko`` / ``en`` (other languages are returned unchanged).
        level: the ``style_variation_level`` flag.
        seed: any string; the same seed gives the same variant (per request: user and turn).
    Returns:
        The varied answer; ``text`` itself when ``level`` ≤ 0 or no phrase is found.
    """
    if level <= 0 or lang not in PHRASES:
        return text
    pattern, group_of = _pattern(lang)
    rng = random.Random(hashlib.sha256(f"{seed}|{lang}".encode("utf-8")).hexdigest())

    def swap(m: re.Match) -> str:
        phrase = m.group(0)
        if rng.random() >= level:
            return phrase
        return rng.choice([p for p in group_of[phrase] if p != phrase])

    lines = text.splitlines(keepends=True)
    return "".join(line if _CITATION.search(line) else pattern.sub(swap, line) for line in lines)
