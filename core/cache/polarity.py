"""Polarity and contrast words of a question (part of the response-cache key, SPEC.md §11 "Response cache decision").

Two questions about the same concepts with the same question type can still need opposite
answers: "good foods for gout" / "foods to avoid with gout", "before meals" / "after meals",
"too much" / "not enough",
"raise HDL" / "lower LDL", "can I" / "can't I", "safe" / "dangerous", "in women" / "in men".
An embedding places such pairs very close (the cache's first calibration, docs/benchmarks.md "Response cache"); here each contrast class
is read from the words, and the cache serves an answer only when every class has the same
value on both sides (:func:`polarity_key`).

Each class has two poles, each a list of Korean and English cues (regular expressions over
the case-folded text). A question with cues of both poles of a class gets ``both`` ("good and
bad foods"). The lists are the team's; they cover the contrast words named in the issue and
the demographic and timing contrasts of consumer health questions (Kilicoglu et al. 2018
annotate such restrictions as question "qualifiers").
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# class -> (pole A cues, pole B cues). Korean cues match inside words (particles attach).
CONTRASTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "valence": ((r"\bgood\b", r"\bbest\b", r"\bhealthy\b", r"\bhealthier\b", r"\bbeneficial\b",
                 r"\bhelpful\b", r"\bhelps?\b", r"\brecommended\b", r"\bshould eat\b", r"좋은",
                 r"좋아요", r"좋나요", r"좋을", r"좋다", r"이로운", r"도움", r"권장"),
                (r"\bbad\b", r"\bworst\b", r"\bunhealthy\b", r"\bavoid\b(?! getting)(?! catching)", r"\bharmful\b",
                 r"\bshould(?: not|n'?t) eat\b", r"\bnot eat\b", r"\bstay away\b",
                 r"\bworse\w*", r"\bworsen\w*", r"나쁜",
                 r"나빠", r"나쁘", r"안 ?좋", r"해로운", r"해롭", r"피해야", r"피할", r"금지",
                 r"삼가")),
    "timing": ((r"\bbefore\b", r"\bprior to\b", r"\bempty stomach\b", r"\bfasting\b", r"전에",
                r"식전", r"공복", r"(?<=\S)전\b", r"(?<=\S)\s전\b"),
               (r"\bafter\b", r"\bfollowing\b", r"\bwith (?:food|meals?)\b", r"후에", r"식후",
                r"(?<=\S)후\b", r"(?<=\S)\s후\b", r"다음에")),
    "direction": ((r"\bincreas\w*", r"\braise\w*", r"\bboost\w*", r"\bhigher\b", r"\bhigh\b",
                   r"\brais(?:e|ing)\b", r"\bgo(?:es)? up\b", r"\bup\b", r"높이", r"올리",
                   r"올라", r"증가", r"높은", r"높아", r"높으", r"높나", r"높게", r"상승",
                   r"\bgain\w*", r"살\s?(?:이\s)?(?:찌|쪄|쪘)", r"늘리", r"늘려", r"늘어"),
                  (r"\bdecreas\w*", r"\blower\w*", r"\breduc\w*", r"\bdrop\w*", r"\blow\b",
                   r"\bgo(?:es)? down\b", r"\bdown\b", r"낮추", r"낮춰", r"내리", r"떨어",
                   r"감소", r"낮은", r"낮아", r"낮으", r"낮게", r"줄이", r"줄여", r"줄어",
                   r"\blos(?:e|es|ing|t)\b", r"\bweight loss\b",
                   r"살\s?(?:이\s)?(?:빠|빼)")),
    "quantity": ((r"\bmore\b", r"\btoo much\b", r"\bexcess\w*", r"\boverdos\w*", r"많이",
                  r"많은", r"많으", r"과다", r"과량", r"과하"),
                 (r"\bless\b", r"\bfewer\b", r"\btoo little\b", r"\bnot enough\b",
                  r"\bdeficien\w*", r"적게", r"적은", r"적으", r"부족", r"결핍")),
    "extreme": ((r"\bmax(?:imum|imal)?\b", r"\bhighest\b", r"\bupper limit\b", r"최대",
                 r"최고", r"상한"),
                (r"\bmin(?:imum|imal)?\b", r"\blowest\b", r"\blower limit\b", r"최소",
                 r"최저", r"하한")),
    "side": ((r"\bleft\b", r"왼쪽", r"좌측"), (r"\bright (?:side|arm|leg|eye|ear|hand|foot|chest)\b",
                                              r"오른쪽", r"우측")),
    "phase": ((r"\bearly\b", r"\binitial\b", r"초기", r"전조"),
              (r"\blate\b", r"\badvanced\b", r"\bend[\s-]stage\b", r"말기")),
    "modality": ((r"\bcan\b", r"\bmay\b", r"\ballowed\b", r"\bok(?:ay)?\b", r"\bfine\b",
                  r"되나요", r"돼요", r"될까요", r"되죠", r"되는", r"가능"),
                 (r"\bcan'?t\b", r"\bcannot\b", r"\bcan not\b", r"\bmustn'?t\b",
                  r"\bnot allowed\b", r"\bshouldn'?t\b", r"\bnever\b", r"안 ?되", r"안 ?돼",
                  r"못\s", r"불가", r"말아야")),
    "safety": ((r"\bsafe\b", r"\bsafely\b", r"\bharmless\b", r"안전", r"괜찮"),
               (r"\bdangerous\b", r"\bunsafe\b", r"\bnot safe\b", r"\brisky\b", r"\bdanger\b",
                r"위험", r"해로", r"안전하지 않", r"괜찮지 않", r"안 괜찮")),
    "start_stop": ((r"\bstart\w*(?! (?:to )?work)(?! kicking)", r"\bbegin\w*(?! to work)",
                    r"시작"),
                   (r"\bstop\w*", r"\bquit\w*", r"\bdiscontinu\w*", r"\bcome off\b", r"\bskip\w*", r"끊",
                    r"중단", r"그만")),
    "sex": ((r"\bwom[ae]n\b", r"\bfemales?\b", r"\bgirls?\b", r"여자", r"여성"),
            (r"\bm[ae]n\b", r"\bmales?\b", r"\bboys?\b", r"남자", r"남성")),
    "age": ((r"\bchild(?:ren)?\b", r"\bkids?\b", r"\binfants?\b", r"\bbab(?:y|ies)\b",
             r"\bteen\w*", r"아이", r"어린이", r"소아", r"아기", r"청소년"),
            (r"\belderly\b", r"\bolder (?:adults?|people)\b", r"\bseniors?\b", r"노인",
             r"어르신", r"고령")),
    "pregnancy": ((r"\bpregnan\w*", r"임신", r"임산부"),
                  (r"\bbreast-?feeding\b", r"\bnursing\b", r"\blactat\w*", r"수유")),
    "course": ((r"\bacute\b", r"\bsudden\w*", r"급성", r"갑자기"),
               (r"\bchronic\b", r"\blong-?term\b", r"만성", r"오래")),
    "reference": ((r"\btarget\b", r"\bgoal\b", r"\baim\b", r"목표"),
                  (r"\bnormal\b", r"\breference range\b", r"정상")),
    "day_time": ((r"\bmorning\b", r"아침"), (r"\bnight\b", r"\bevening\b", r"\bbedtime\b",
                                           r"저녁", r"밤", r"자기 전")),
}


@lru_cache(maxsize=1)
def _compiled() -> dict[str, tuple[re.Pattern, re.Pattern]]:
    return {name: (re.compile("|".join(a)), re.compile("|".join(b)))
            for name, (a, b) in CONTRASTS.items()}


def polarity(text: str) -> dict[str, str]:
    """Contrast classes found in ``text`` -> ``a``, ``b`` or ``both`` (absent classes are
    omitted). Input: any question (NFKC, case-folded here)."""
    norm = unicodedata.normalize("NFKC", text).casefold()
    out = {}
    for name, (a, b) in _compiled().items():
        # the B pole's cues are negations of A's ("can't", "안 좋은", "not safe"): blank them
        # before looking for A, so "can't" is not also "can"
        has_b = bool(b.search(norm))
        has_a = bool(a.search(b.sub(" ", norm))) if has_b else bool(a.search(norm))
        if has_a or has_b:
            out[name] = "both" if has_a and has_b else ("a" if has_a else "b")
    return out


def polarity_key(text: str) -> str:
    """Canonical string of :func:`polarity` (``class=pole`` sorted, ``;``-joined; ``""`` for
    none): equal strings mean the same polarity on every class."""
    return ";".join(f"{k}={v}" for k, v in sorted(polarity(text).items()))


SPAN_KEPT = frozenset({"age"})
"""Classes whose cues stay content words: "아이" and "아기", "child" and "infant" share the
``age`` pole but ask about different patients (a dose for an infant is not a child's)."""


def polarity_spans(text: str) -> list[str]:
    """The substrings of ``text`` (NFKC, case-folded) that are contrast cues of any class but
    :data:`SPAN_KEPT`: the words the key's polarity parts already compare
    (:mod:`core.cache.content` removes them)."""
    norm = unicodedata.normalize("NFKC", text).casefold()
    return [m.group(0) for name, (a, b) in _compiled().items() if name not in SPAN_KEPT
            for rx in (b, a) for m in rx.finditer(norm)]
