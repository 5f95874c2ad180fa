"""Unexplained content words: the veto that keeps "broken arm" from answering "broken hip"
(docs/benchmarks.md "Content and cue vetoes").

Two questions with the same structured key (:mod:`core.cache.key`: concepts, question type,
polarity, numbers) can still ask about different things the key does not see: a body part, a
food, a population word or a disease outside the concept table ("팔 골절" / "고관절 골절",
"bananas" / "grapes", "아이" / "아기", "B형 간염" / "C형 간염"). An embedding places such pairs
as close as true paraphrases (cosine 0.95–0.99), so no cosine threshold separates them.

A question's words are of three kinds: the words of the key (concept names the extractor
matched, facet cues, polarity cues: already compared, so removed here), the question *frame*
("what are the", "먹어도 되나요", "side effects": the question-type classifier's job, so
removed), and *content*: everything else. A cached answer may serve a new question only when
every content word of each side is explained by the other side: the same word, the same stem
(Korean particles and verb endings stripped; an English word and its inflection), a one-letter
typo, or the same compound written with or without spaces ("공복혈당" / "공복 혈당").

The frame vocabulary is the words of the question-type training frames
(``core/qtype/data/qtype_frames.jsonl``, the team's Korean and English templates with the concept
slot removed) and the short list :data:`EXTRA_FRAME`. Measured on the team pairs, the MedQuAD
pairs and a fresh dev set (docs/benchmarks.md, "Content and cue vetoes"): of the pairs with
equal keys, the veto refused 62 of 65 negatives and kept 99 of 145 paraphrases (first
version; the frame list and typo rule grew from the misses of the dev pairs).
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import lru_cache
from importlib import resources

from core.cache.cues import cue_spans


EXTRA_FRAME = frozenset("""
a an the of for to in on at by with and or but is are was were be been being am do does did
doing have has had having i me my we our you your he she it its they them their this that these
those what which who whom whose when where why how can could may might must should shall will
would if then than so as about any some much many more most very too also just ok okay please
tell know need want get got there here s t whats im ve ll re vs versus level levels
range number numbers value values max maximum min minimum possible usual usually normal
typical typically someone somebody people person thing things way ways kind kinds type much
really actually exactly generally common commonly
뭐 뭔 뭔가 뭐가 무엇 무엇이 무슨 어떤 어떻게 어떤가 얼마 얼마나 언제 왜 누구 어디 몇 좀 혹시 그냥
정말 진짜 보통 일반 일반적 정도 경우 때 법 방법 종류 시기 대상 수치 범위 기준 정상 알려 알려줘
알려주세요 궁금 궁금해요 있나요 있어요 있습니까 되나요 돼요 해요 하나요 인가요 건가요 거예요 뭐예요 뭐에요
며칠 오래 마시 마셔 마셔도 마시면 맞으 맞으면 맞아도 맞고 먹여 먹여야 을까 ㄹ까 한테 에게
read reading form forms daily nightly soon quickly minute minutes hour hours proper properly
correct correctly right medicine medicines medication medications meds pill pills drug drugs
약 제대로 대처 대처법 섭취 섭취량 권장 권장량
""".split())
"""Frame words the training frames lack (function words, "level", "range", "방법", ...)."""

_KO_ENDINGS = tuple(sorted("""
이랑 하고 에서 으로 에게 한테 까지 부터 이나 이면 이에요 예요 에요 인가요 나요 가요 어요 아요
해요 입니까 습니까 니까 인데 는데 은데 는지 은지 했는데 했어요 해도 해야 하면 하는 한 할 해 야 은 는
이 가 을 를 에 도 만 로 의 와 과 랑 요 면 고
""".split(), key=len, reverse=True))
ONE_SYLLABLE_NOUNS = frozenset("""
팔 발 손 눈 귀 코 입 목 배 간 위 폐 뼈 피 털 혀 뇌 턱 술 물 밥 빵 떡 잠 열 암 땀 침 젖 꿀 콩 쌀 죽 귤 굴
""".split())
"""One-syllable Korean nouns (body parts, foods, "열" fever, "암" cancer): content words. Any
other single syllable left over is a fragment of an ending or particle once a key word
before it was removed ("빠지" -> "지"), so it is frame."""

_AGE_GROUPS = {
    "agechild": (r"\bchild(?:ren)?'?s?\b", r"\bkids?\b", r"어린이", r"소아",
                 r"아이(?:들)?(?=$|[^가-힣]|[가는를도한랑의에])"),
    "ageinfant": (r"\binfants?\b", r"\bbab(?:y|ies)\b", r"\bnewborns?\b", r"아기", r"영아",
                  r"신생아", r"갓난"),
    "ageteen": (r"\bteen\w*", r"\badolescen\w*", r"청소년"),
    "ageelder": (r"\belderly\b", r"\bolder (?:adults?|people)\b", r"\bseniors?\b", r"노인",
                 r"어르신", r"고령"),
}
"""Synonyms of the age groups, each replaced by one token before the words are compared:
"kids" / "children" / "아이" / "어린이" agree, "아이" / "아기" (child / infant) do not. The
``age`` polarity class puts both on one pole; a dose for an infant is not a child's."""

_HANGUL = re.compile(r"[가-힣]")
_LATIN = re.compile(r"[a-z]+")
_WORD = re.compile(r"\w+")


def _stem(tok: str) -> str:
    """Korean: up to two particles/endings stripped (``항생제는`` -> ``항생제``); English: a
    plural or verb ending (``levels`` -> ``level``, ``taking`` -> ``tak``)."""
    if _HANGUL.search(tok):
        for _ in range(2):
            for end in _KO_ENDINGS:
                if tok.endswith(end) and len(tok) > len(end):
                    tok = tok[: -len(end)]
                    break
        return tok
    for end in ("ing", "ies", "es", "ed", "s"):
        if tok.endswith(end) and len(tok) - len(end) >= 3:
            return tok[: -len(end)]
    return tok


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


CONTENT_NOUNS = frozenset("""
kidney kidneys liver heart stomach lung lungs brain bone bones muscle muscles skin eye eyes ear
ears hair teeth tooth blood urine stool stroke rash pain dizzy dizziness fever cough headache
headaches diarrhea constipation nausea insulin diabetes diabetic diabetics alcohol coffee
grapefruit smoking sleep weight meat fruit pregnancy pregnant breastfeeding inhaler painkiller
painkillers
기침 당뇨 신장 간 심장 위 눈 귀 피 뼈 폐 뇌 머리카락 두통 설사 변비 발진 근육통 인슐린 뇌졸중 고혈압
저혈당 심근경색 심장병 위궤양 흡입기 진통제 소염제 영양제 페니실린 자몽 커피 술 담배 밥 임신 모유 수유
근육 관절 피부 소변 대변 어지러운데 메스꺼워 두드러기 알레르기 감기약 고기 과일 음료 매운
""".split())
"""Words of the question-type frames that name a body part, a symptom, a substance or a
condition (the frames carry an example context: "does {d} damage the kidneys"): content words,
never frame."""

FRAME_MIN_FRAMES = 1
"""A frame word appears in at least this many training frames. Measured (docs/benchmarks.md): 2 dropped
11 of 100 dev paraphrase hits (one-frame words such as "복용", "이란", "measure" are wording,
not content); the content nouns of the frames are :data:`CONTENT_NOUNS` instead."""


@lru_cache(maxsize=1)
def frame_words() -> frozenset[str]:
    """The words (and stems) of at least :data:`FRAME_MIN_FRAMES` question-type frames, and
    :data:`EXTRA_FRAME`, minus :data:`CONTENT_NOUNS`."""
    path = resources.files("core.qtype").joinpath("data", "qtype_frames.jsonl")
    seen: dict[str, int] = {}
    for line in path.read_text("utf-8").splitlines():
        if line.strip():
            frame = re.sub(r"\{[a-z]+\}", " ", json.loads(line)["frame"])
            for w in set(_WORD.findall(_norm(frame))):
                seen[w] = seen.get(w, 0) + 1
    words = {w for w, n in seen.items() if n >= FRAME_MIN_FRAMES} | set(EXTRA_FRAME)
    words |= {_stem(w) for w in words}
    return frozenset(words - CONTENT_NOUNS - {_stem(w) for w in CONTENT_NOUNS})


_ENDING_SYLLABLES = frozenset("아어여워와해했하한할함돼되된될됨지진질져졌고게서면니나냐요죠은는을를운울온올인일임기음야도만까랑며려라")
"""Syllables that end Korean verb and adjective forms (and particles): "어지러워" and
"어지러울", "먹여야" and "먹어야" share their stem once these are dropped; "대장암" and
"대장염", "고혈압" and "고혈당" do not."""


def _korean_core(word: str) -> str:
    """``word`` without up to three trailing :data:`_ENDING_SYLLABLES` (one syllable kept)."""
    for _ in range(3):
        if len(word) > 1 and word[-1] in _ENDING_SYLLABLES:
            word = word[:-1]
    return word


@lru_cache(maxsize=1)
def _frame_cores() -> frozenset[str]:
    """:func:`_korean_core` of the Korean frame words (``먹으면`` -> ``먹으``): conjugated
    frame verbs share it."""
    return frozenset(_korean_core(w) for w in frame_words() if re.fullmatch(r"[가-힣]{2,}", w))


@lru_cache(maxsize=1)
def _frames_by_length() -> dict[int, tuple[str, ...]]:
    out: dict[int, list[str]] = {}
    for w in frame_words():
        out.setdefault(len(w), []).append(w)
    return {n: tuple(ws) for n, ws in out.items()}


def _frame_typo(tok: str) -> bool:
    """A misspelt frame word (``efects``, ``부자용``): one edit from a frame word of at least
    5 letters (English) or 3 syllables (Korean)."""
    least = 3 if _HANGUL.search(tok) else 5
    if len(tok) < least:
        return False
    return any(_typo(tok, w, least) for n in (len(tok) - 1, len(tok), len(tok) + 1)
               for w in _frames_by_length().get(n, ()))


NEGATIONS = frozenset({"not", "no", "never", "without", "don", "doesn", "didn", "isn", "aren",
                       "wasn", "won", "shouldn", "couldn", "wouldn", "cannot", "none", "nothing",
                       "안", "못", "아니", "않", "없"})
"""Negation words: always content, so "밤에 먹어도 돼요" and "밤에 안 먹어도 돼요", "should I
take" and "should I not take" never explain each other (the polarity classes catch only the
negations they list)."""


def _negation(tok: str) -> bool:
    return tok in NEGATIONS or tok.startswith(("않", "없", "아니"))


def _is_frame(tok: str) -> bool:
    if _negation(tok):
        return False
    if tok.startswith("age") and tok in _AGE_GROUPS:
        return False  # who is asked about is content
    stem = _stem(tok)
    if len(stem) == 1 and _HANGUL.fullmatch(stem):
        return stem not in ONE_SYLLABLE_NOUNS
    if tok in frame_words() or stem in frame_words() or tok in _KO_ENDINGS:
        return True  # a particle left alone once a concept name before it was removed
    if bool(re.fullmatch(r"[가-힣]{2,}", stem)) and _korean_core(stem) in _frame_cores():
        return True
    return _frame_typo(tok)


def _without(text: str, spans) -> str:  # noqa: ANN001 (iterable of str)
    for s in sorted({_norm(s) for s in spans if s and s.strip()}, key=len, reverse=True):
        text = text.replace(s, " ")
    return text


@lru_cache(maxsize=1)
def _age_patterns() -> tuple[tuple[str, re.Pattern], ...]:
    return tuple((group, re.compile("|".join(cues))) for group, cues in _AGE_GROUPS.items())


def _canonical_ages(text: str) -> str:
    for group, rx in _age_patterns():
        text = rx.sub(f" {group} ", text)
    return text


def content_words(text: str, key_spans=()) -> tuple[str, ...]:  # noqa: ANN001
    """The content words of a question: its words minus ``key_spans`` (the concept names,
    facet and polarity cues the key already compares), minus the question-type cues
    (:func:`core.cache.cues.cue_conflict` compares them), frame words and numbers (the key compares numbers),
    each reduced to its stem; age words become their group (``agechild``). Input: any
    question; output in text order."""
    norm = _canonical_ages(_norm(text))
    rest = _without(norm, list(key_spans) + cue_spans(norm))
    return tuple(w if _negation(w) else _stem(w) for w in _WORD.findall(rest)
                 if not _is_frame(w) and not any(ch.isdigit() for ch in w))


def all_stems(text: str) -> tuple[str, ...]:
    """Every word of ``text`` as a stem (age words as their group): what may explain the
    other question's content words, frame words included ("resting" explains "at rest")."""
    return tuple(_stem(w) for w in _WORD.findall(_canonical_ages(_norm(text))))


def _typo(a: str, b: str, least: int = 5) -> bool:
    """One substitution, insertion or deletion apart, both at least ``least`` letters."""
    if min(len(a), len(b)) < least or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b)) == 1
    short, long_ = sorted((a, b), key=len)
    return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))


def _compound_part(word: str, o: str) -> bool:
    """``word`` begins or ends the Korean compound ``o`` with at least two syllables of ``o``
    left over ("공복" in "공복혈당"; not "대장" in "대장암", whose one-syllable rest changes
    the meaning)."""
    return (len(word) >= 2 and len(o) - len(word) >= 2 and bool(_HANGUL.search(word))
            and (o.startswith(word) or o.endswith(word)))


def _explained(word: str, other: tuple[str, ...], compounds: frozenset[str]) -> bool:
    if word in other or word in compounds:
        return True  # the same stem, or the other side writes it with spaces ("공복 혈당")
    for o in other:
        if _LATIN.fullmatch(word) and _LATIN.fullmatch(o) and _typo(word, o):
            return True
        if _HANGUL.search(word) and _HANGUL.search(o) and _korean_core(word) == _korean_core(o):
            return True  # a conjugated form of the same Korean stem
        if _compound_part(word, o):
            return True
    return False


def unexplained(a: tuple[str, ...], b: tuple[str, ...]) -> list[str]:
    """Words of ``a`` that ``b`` does not explain (see the module docstring); ``b`` may be
    the other question's content words or all its stems (:func:`all_stems`)."""
    compounds = frozenset("".join(b[i:i + n]) for n in (2, 3) for i in range(len(b) - n + 1))
    return [w for w in a if not _explained(w, b, compounds)]


def content_conflict(a: tuple[str, ...], b: tuple[str, ...],
                     a_all: tuple[str, ...] | None = None,
                     b_all: tuple[str, ...] | None = None) -> bool:
    """True when either question has a content word the other does not explain: the cached
    answer of one must not serve the other. ``a_all``/``b_all``: every stem of each question
    (:func:`all_stems`), which may explain the other's content words; default: the content
    words themselves."""
    return bool(unexplained(a, b if b_all is None else b_all)
                or unexplained(b, a if a_all is None else a_all))
