"""The context of a concept mention: whose it is and whether it is asserted.

A rule-based ConText (Harkema et al., J Biomed Inform 2009; NegEx, Chapman et al. 2001) for
Korean and English. Each mention's clause is found first; trigger phrases in the clause then
decide its status, checked in this order:

``family``     a relative's (``아버지가 고혈압이에요``, ``my mom has asthma``, ``당뇨 가족력``)
``stopped``    a medication no longer taken (``메트포르민 끊었어요``, ``I stopped lisinopril``)
``uncertain``  the user wonders (``고혈압일까요?``, ``could this be gout``)
``negated``    absent (``당뇨는 없어요``, ``no history of asthma``)
``topic``      only the subject of a general question (``메트포르민 부작용이 뭔가요?``)
``active``     asserted about the user

and whether the mention is an allergy (``페니실린 알레르기``, ``allergic to sulfa``). Korean puts
negation, uncertainty and stopping after the noun (``당뇨는 없어요``), English mostly before it
(``no diabetes``), so each trigger set has a direction: *pre* triggers must precede the mention
in its clause, *post* triggers follow it.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

STATUSES = ("active", "negated", "uncertain", "family", "stopped", "topic")

CHRONIC_KEYWORDS = re.compile(
    r"만성|\d+\s*년\s*(?:째|동안|넘게|전부터|이상)|오래\s*(?:전부터|됐|되었)|평생|어릴\s*때부터|지병|꾸준히|계속\s*먹"
    r"|\bchronic\b|\bfor\s+(?:\d+|many|several)\s+years\b|\bsince\s+(?:childhood|\d{4})\b|\blong[- ]term\b"
    r"|\blifelong\b|\bfor\s+decades\b", re.I)
"""Words that mark a condition or drug as long-standing (SPEC.md §3.2 "a chronic keyword")."""

# Clause boundaries: sentence ends (not decimal points), contrastive or causal connectives,
# and a change of subject ("…, and I have …").
_BOUNDARY = re.compile(
    r"(?<!\d)[.!?;。\n]+(?!\d)|[.!?](?=\s)"
    r"|(?<=[가-힣])(?:는데|은데|인데|던데|지만|으나|면서|니까)(?:요)?[,\s]|(?<=[한린운])데(?:요)?[,\s]"
    r"|(?<=[없있이였았었했])고,?\s"
    r"|\b(?:but|however|although|though|whereas|except|yet)\b"
    r"|,?\s+and\s+(?=(?:i|i'm|i've|my)\b)|,\s*(?=(?:i|i'm|i've|my)\b)",
    re.I)

_WB = r"(?<![가-힣A-Za-z0-9])"  # a Korean or English word start
_RELATIVES_KO = (r"아버지|아버님|아빠|어머니|어머님|엄마|부모님|할머니|할아버지|외할머니|외할아버지|"
                 r"친할머니|친할아버지|형님|형|누나|오빠|언니|남동생|여동생|동생|남편|아내|와이프|"
                 r"아들|딸|자녀|애들|아이|아기|가족|친척|삼촌|이모|고모|외삼촌|큰아버지|작은아버지|"
                 r"사촌|시어머니|시아버지|장인|장모|형제|자매|집안")
_FAMILY_PRE_KO = re.compile(_WB + r"(?:" + _RELATIVES_KO + r")(?:께서|께서는|가|이|는|은|도|의|께|한테|분|에|에는|쪽)")
_FAMILY_POST_KO = re.compile(r"가족력|집안\s*내력|내력이|유전(?:이|으로)")
# "당뇨 있는 남편이": the relative is the head noun the mention modifies.
_FAMILY_HEAD_KO = re.compile(r"^\s*(?:이|가)?\s*(?:있는|있으신|앓는|앓고\s*있는|걸린|있으셨던)\s*(?:" + _RELATIVES_KO + r")")
_FAMILY_BARE_KO = re.compile(_WB + r"(?:" + _RELATIVES_KO + r")(?=\s)")
_SELF_RESET = re.compile(r"저는|제가|저도|저의|나는|내가|\bI\b|\bI'm\b|\bmy\s+(?!dad|father|mom|mum|mother|son|daughter|"
                         r"kid|child|baby|husband|wife|brother|sister|grand|friend|partner)", re.I)
_PRONOUN_EN = re.compile(r"\b(?:she|he|her|his|him)\b", re.I)
_FAMILY_PRE_EN = re.compile(
    r"\b(?:father|dad|daddy|mother|mom|mum|mommy|parents?|brothers?|sisters?|siblings?|"
    r"grand(?:father|mother|ma|pa|parents?)|uncles?|aunts?|cousins?|sons?|daughters?|kids?|"
    r"child|children|baby|husband|wife|spouse|partner|boyfriend|girlfriend|relatives?|"
    r"family (?:history|hx)|fhx|in-laws?)\b", re.I)
_FAMILY_POST_EN = re.compile(r"\bruns? in (?:my|the|our) family\b|\bfamily history\b", re.I)

_STOP_POST_KO = re.compile(
    r"끊었|끊은|끊고|끊어|끊음|끊기로|중단|그만\s*(?:먹|뒀|두었|복용)|안\s*먹은\s*지|먹다가\s*(?:끊|말|그만)"
    r"|복용을?\s*(?:멈|중지)|더\s*(?:이상|는)\s*안\s*먹|(?:이제|이제는|지금은|요즘은)\s*안\s*먹|먹었었|복용했었"
    r"|먹다가.{0,12}안\s*먹|다\s*먹고\s*끝|복용\s*(?:을\s*)?끝|끝났|먹다가.{0,25}(?:넘어|바꿨|바꾸|변경)"
    r"|때까지만\s*(?:먹|복용)|그\s*(?:뒤|후)(?:로는|론|로|에는)\s*안\s*먹")
_STOP_PRE_KO = re.compile(r"예전에|전에는|과거에|옛날에|한때")
_SWITCH_KO = re.compile(r"^\s*(?:에서|을|를)?\s*.{0,20}?(?:바꿨|바꾸었|바꿔|변경|교체)")
_STOP_PRE_EN = re.compile(
    r"\b(?:stopped(?: taking)?|quit(?: taking)?|discontinued|came off|went off|used to (?:take|be on)"
    r"|no longer (?:take|taking|on)|(?:was|got) (?:taken|switched) off|switched (?:me )?from|was on|were on"
    r"|(?:i'?m|been|got|went|came|am|is)\s+off(?:\s+of)?|took (?:myself|me|him|her) off|finished(?: the| my)?"
    r"|ran out of and stopped|off of)\b", re.I)
_STOP_POST_EN = re.compile(r"\b(?:stopped|discontinued|anymore|any more|no more|in the past|finished)\b", re.I)

_UNC_POST_KO = re.compile(
    r"^\s*(?:이|가|은|는|인|일|에)?\s*(?:일까|인가|인지|인\s*(?:것|거)\s*같|같아|같은데|같습니다|같네"
    r"|아닐까|아닌가|아닌지|아닐지|일\s*수도|일\s*수\s*있|의심|가능성|걸린\s*(?:것|거|건)|걸렸나|걸린\s*걸까"
    r"|있는\s*(?:것|거|건)\s*(?:같|인가|일까)|있는\s*건가|있을까|있나요|생긴\s*(?:것|거)\s*같"
    r"|온\s*(?:것|거)\s*같|아닌지\s*걱정|일지도|인지\s*궁금)")
_UNC_PRE_KO = re.compile(r"혹시\s*(?:제가|저\s)?")
_UNC_PRE_EN = re.compile(
    r"\b(?:could (?:this|it|that|these)(?:\s+\w+){0,2}\s+be|could i (?:have|be)|probably|likely|i guess|might (?:have|be)|may have|maybe|"
    r"possibly|possible|probable|suspected?|suspicious for|worried (?:that |about )?(?:i |it |this )?"
    r"(?:have |has |is |might |could )?|afraid (?:that )?(?:i|it) (?:have|has|might|is)|do i have|am i|"
    r"is (?:this|it|that) (?:a |an )?|i think i (?:have|might have|may have|got)|i wonder if|"
    r"not sure (?:if|whether)|concerned (?:about|that)|rule out|checked for|tested for)(?:\b|(?<=\s))", re.I)

_NEG_POST_KO = re.compile(
    r"없어|없습|없다|없고|없는데|없음|없었|없이|없네|없구|없는$|아니래|아니라고|아니에|아니야|아니고|아니라|아닙|아니었|아녜"
    r"|안\s*먹|안\s*해|안\s*했|안\s*받|않아|않았|않고|않습|않는|않음|적\s*(?:이|은|도)?\s*없|음성"
    r"|먹지\s*않|복용하지\s*않|해당\s*없|없다고")
_NEG_PRE_KO = re.compile(r"(?:^|\s)(?:무|비)(?=\s)")  # rare: "무 알레르기"
_NEG_PRE_EN = re.compile(
    r"\b(?:no|not|denies|denied|deny|without|negative for|free of|no history of|no hx of|no signs? of"
    r"|don'?t have|do not have|doesn'?t have|does not have|didn'?t have|haven'?t had|have not had"
    r"|haven'?t got|never (?:had|took|taken|been on|been diagnosed with|smoked)|don'?t take|do not take"
    r"|not taking|not on|never|none|fine with|ok with|okay with|tolerate[sd]?)\b", re.I)
_NEG_POST_EN = re.compile(r"\b(?:ruled out|was negative|is negative|came back negative|denied|none)\b|^-?\s*free\b", re.I)
# Another noun marked as subject/topic between a Korean mention and a post trigger takes the
# trigger ("당뇨약 먹은 후로 증상이 없어요": 증상 is absent, not the drug).
_OTHER_SUBJECT_KO = re.compile(r"([가-힣]+)(?:이|가|은|는)\s")
# "당뇨나 고혈압은 없어요": nouns coordinated with the mention share its trigger.
_COORDINATED = re.compile(r"^\s*(?:(?:이나|나|과|와|랑|이랑|하고|및|,|이며)\s*[가-힣A-Za-z0-9]+\s*)+")
# "진단받은", "먹는", "하지는": 은/는 after a verb stem is an adnominal ending, not a topic marker.
_VERB_STEM_ENDS = set("받먹하있없되했았었않렸졌쓰맞지린운던라다")
_GENERIC_NOUNS = ("적", "증상", "증세", "것", "거", "건", "알레르기", "알러지", "부작용", "반응", "진단",
                  "기운", "기", "느낌", "경험", "병력", "과거력", "말", "얘기", "소리")

_QUESTION_KO = re.compile(
    r"뭔가요|뭐예요|뭐에요|뭔지|뭐죠|뭐야|무엇|뭐가|뭘|무슨|어떤|어떻게|왜|언제|얼마|어느|알려\s*주|설명해"
    r"|궁금|차이|원인|치료법|예방법|관리법|먹어도\s*(?:되|돼)|해도\s*(?:되|돼)|나요\s*\?|까요\s*\?|인가요|몇")
_SELF_KO = re.compile(r"제가|저는|저도|저의|저희|제\s|내가|나는|나도|먹고\s*있|먹는\s*중|복용\s*중|"
                      r"진단(?:을)?\s*받|앓고|있어요|있는데|있습니다|먹어요|먹습니다|했어요")
_QUESTION_EN = re.compile(
    r"\?|^\s*(?:what|how|why|when|which|who|is|are|can|does|do|should|could|will|would)\b"
    r"|\btell me (?:about|what)\b|\bexplain\b|\bside effects? of\b|\bdifference between\b", re.I)
_SELF_EN = re.compile(r"\b(?:i|i'm|i've|im|ive|my|me|mine|myself|this|these)\b", re.I)
# Asking whether or when to take or do something asserts nothing, even in the first person.
_ADVICE = re.compile(r"\b(?:can|could|should|may)\s+i\s+(?:take|use|try|give|have|drink|eat|call|go|mix)\b"
                     r"|\bis\s+it\s+(?:ok|okay|safe|fine|bad|dangerous)\s+to\b|\bwhen\s+should\s+i\b"
                     r"|\bhow\s+do\s+i\s+know\s+if\b|\bwhat\s+should\s+i\s+do\s+if\b|\bif\s+someone\b"
                     r"|먹어도\s*(?:되|돼|괜찮)|복용해도|써도\s*(?:되|돼)|맞아도\s*(?:되|돼)|같이\s*먹어도", re.I)
# NegEx termination terms (Chapman et al. 2001): a trigger's scope ends at them.
_TERMINATION_EN = re.compile(r"\b(?:just|only|but|except|apart from|other than|aside from|besides|"
                             r"switched|changed|now|instead|though|however|although|still)\b", re.I)

_ALLERGY_POST_KO = re.compile(
    r"^\s*(?:에|에는|에\s*대한|계열|계|류|이나|나|에도)?\s*(?:알레르기|알러지|과민|아나필락시스)"
    r"|^\S*\s*(?:먹으면|먹고\s*나면|맞으면|만지면|닿으면|쏘이면|먹었더니|맞았더니)\s*.{0,12}?"
    r"(?:두드러기|발진|붓|부어|가렵|가려|숨이|쇼크|반응)"
    r"|^\s*(?:에|에는)\s*(?:반응|쇼크)")
_LIST_KO = r"(?:[가-힣A-Za-z0-9]+\s*(?:,|이랑|랑|과|와|하고|및)\s*){0,4}$"
_ALLERGY_PRE_KO = re.compile(r"(?:알레르기|알러지)\s*(?:가|는|이|:)?\s*(?:있는\s*(?:건|것은?)\s*)?" + _LIST_KO)
_ALLERGY_PRE_EN = re.compile(r"(?:\ballergic (?:reaction )?to|\ballerg(?:y|ies)\s*(?:to|:)|"
                             r"\bintoleran(?:t|ce) to|\b(?:bad )?reaction to|\bhypersensitiv\w* to)"
                             r"[^.;:!?]{0,40}$", re.I)
_ALLERGY_POST_EN = re.compile(r"^\s*(?:allerg(?:y|ies|ic)|intolerance|hypersensitivity|gives? me "
                              r"(?:hives|a rash)|makes? me (?:break out|swell|itch))", re.I)


_FIRST_PERSON_EN = re.compile(r"\b(?:i|i'm|im|i've|i'd|me|my|mine|myself)\b", re.I)
_FIRST_PERSON_KO = re.compile(r"저는|제가|저도|저의|저한테|저에게|(?<![가-힣])제\s|나는|내가|나도|나한테|(?<![가-힣])내\s")
_THIRD_PERSON = re.compile(r"\b(?:patient|user|client|he|she|they|him|her|his|their)\b"
                           r"|환자|사용자|이용자|유저|그는|그녀|그분|이\s*사람|이분", re.I)


def first_person(clause: str) -> bool:
    """True when ``clause`` is the user speaking of themselves: an explicit first person
    (``I``, ``my``; ``저는``, ``제가``), or a Korean clause that names no one (Korean drops the
    speaker as subject: ``페니실린 알레르기가 있어요``). ``the patient is allergic to insulin`` and
    ``환자는 인슐린 알레르기`` are not (an allergy to a drug the user takes needs the
    user's own first-person words)."""
    if _FIRST_PERSON_EN.search(clause) or _FIRST_PERSON_KO.search(clause):
        return True
    return not _THIRD_PERSON.search(clause) and bool(re.search(r"[가-힣]", clause))


@dataclass(frozen=True)
class MentionContext:
    """The status of a mention (one of :data:`STATUSES`) and whether it is an allergy."""

    status: str
    allergy: bool


_SENTENCE_END = re.compile(r"(?<!\d)[.!?\n]|[.!?](?!\d)")

CONTEXT_WINDOW = 400
"""Characters either side of a mention that its rules read (the clause and sentence are cut to
it). ConText and NegEx scope triggers to a few words (NegEx: six; Chapman et al. 2001), and a
clause of a real message is far shorter, so the cut changes no status; it makes the work per
mention constant and extraction linear in the message length (a 25 KB message took
27 s when every mention rescanned the whole text)."""


@dataclass(frozen=True)
class TextIndex:
    """Clause boundaries and sentence ends of one text, found once (:func:`index_text`) and
    shared by all its mentions. Offsets are character offsets, ascending."""

    boundary_starts: list[int]
    boundary_ends: list[int]
    sentence_ends: list[int]


def index_text(text: str) -> TextIndex:
    """Scan ``text`` once for clause boundaries and sentence ends (time linear in its length)."""
    bounds = [m.span() for m in _BOUNDARY.finditer(text)]
    return TextIndex([a for a, _ in bounds], [b for _, b in bounds],
                     [m.end() for m in _SENTENCE_END.finditer(text)])


def clause_bounds(text: str, start: int, end: int, index: TextIndex | None = None) -> tuple[int, int]:
    """``(clause_start, clause_end)`` character offsets of the clause holding ``text[start:end]``,
    at most :data:`CONTEXT_WINDOW` characters either side of it.

    Args:
        index: :func:`index_text` of ``text`` (made here when not given).
    """
    idx = index or index_text(text)
    i = bisect_right(idx.boundary_ends, start)  # the last boundary ending before the mention
    lo = idx.boundary_ends[i - 1] if i else 0
    j = bisect_left(idx.boundary_starts, end)  # the first one starting after it
    hi = idx.boundary_ends[j] if j < len(idx.boundary_starts) else len(text)  # keep "없는데"
    return max(lo, start - CONTEXT_WINDOW), min(hi, end + CONTEXT_WINDOW)


def mention_context(text: str, start: int, end: int, lang: str, slot: str,
                    index: TextIndex | None = None) -> MentionContext:
    """Status and allergy flag of the mention at ``text[start:end]``.

    Args:
        text: the whole message.
        start, end: character offsets of the concept's name.
        lang: ``ko`` or ``en`` (of the message; both trigger sets are tried when mixed).
        slot: the concept's slot (``stopped`` applies to medications only).
        index: :func:`index_text` of ``text``; pass it for every mention of one text, so the
            whole extraction stays linear in the length.
    Returns:
        :class:`MentionContext`. Only :data:`CONTEXT_WINDOW` characters either side are read.
    """
    idx = index or index_text(text)
    lo, hi = clause_bounds(text, start, end, idx)
    pre, post = text[lo:start], text[end:hi]
    clause = text[lo:hi]
    allergy = _is_allergy(pre, post)
    sentence = _sentence_start(text, start, idx)
    if _family(pre, post, text[sentence:start], text[max(0, start - CONTEXT_WINDOW):start]):
        status = "family"
    elif (slot in ("medication", "allergy") or allergy) and _stopped(pre, post) and not allergy:
        status = "stopped"
    elif _uncertain(pre, post) and not _ADVICE.search(clause):
        status = "uncertain"
    elif _negated(pre, post):
        status = "negated"
    elif not allergy and _topic(text[sentence:hi], clause, pre):
        status = "topic"
    else:
        status = "active"
    return MentionContext(status, allergy)


def _sentence_start(text: str, start: int, idx: TextIndex) -> int:
    """Offset after the last sentence end before ``start`` (within the window). A ``. ! ?``
    right before the mention ends a sentence even before a digit, as when the scan stopped at
    ``start``."""
    if start and text[start - 1] in ".!?":
        return start
    k = bisect_right(idx.sentence_ends, start)
    return max(idx.sentence_ends[k - 1] if k else 0, start - CONTEXT_WINDOW)


def _family(pre: str, post: str, sentence_pre: str = "", text_pre: str = "") -> bool:
    """A relative is the subject: in the clause, earlier in the sentence with no switch back to
    the user, as the head noun (``당뇨 있는 남편``), or as he/she after a relative was named."""
    if _FAMILY_PRE_KO.search(pre) or _FAMILY_POST_KO.search(post[:20]) or _FAMILY_HEAD_KO.search(post):
        return True
    if _FAMILY_PRE_EN.search(pre) or _FAMILY_POST_EN.search(post):
        return True
    last = None
    for last in (_FAMILY_PRE_KO.finditer(sentence_pre) if sentence_pre else ()):
        pass
    if last is None and sentence_pre:
        last = next(iter(reversed(list(_FAMILY_BARE_KO.finditer(sentence_pre)))), None)
    if last is not None and not _SELF_RESET.search(sentence_pre[last.end():]):
        return True
    return bool(_PRONOUN_EN.search(pre) and _FAMILY_PRE_EN.search(text_pre) and not _SELF_RESET.search(pre))


def _stopped(pre: str, post: str) -> bool:
    if _STOP_POST_KO.search(post) or _STOP_PRE_KO.search(pre) or _SWITCH_KO.search(post):
        return not _SWITCH_TO_KO.match(post)
    if re.search(r"\b(?:switch\w*|chang\w*|mov\w*)\b.*\b(?:to|onto)\s*$", pre, re.I):
        return False  # "switched me from lisinopril to losartan": losartan is the new drug
    return bool(_STOP_PRE_EN.search(pre) or _STOP_POST_EN.search(post))


_SWITCH_TO_KO = re.compile(r"^\s*(?:으로|로)\s")


def _uncertain(pre: str, post: str) -> bool:
    if _UNC_POST_KO.search(post[:24]) or _UNC_PRE_KO.search(pre):
        return True
    return bool(_UNC_PRE_EN.search(pre))


def _negated(pre: str, post: str) -> bool:
    m = _NEG_POST_KO.search(post)
    if m and not _other_subject(_strip_particle(post[:m.start()])):
        return True
    tail = " ".join(_after_termination(pre).split()[-6:])  # NegEx's window: six words
    if _NEG_PRE_EN.search(tail) or _NEG_PRE_KO.search(pre):
        return True
    return bool(_NEG_POST_EN.search(post))


def _other_subject(between: str) -> bool:
    """A noun marked as subject or topic between a mention and its trigger, other than a
    generic one (``증상은``, ``적이``, ``알레르기는``)."""
    between = _COORDINATED.sub(" ", between)
    return any(not w.endswith(_GENERIC_NOUNS) and w[-1] not in _VERB_STEM_ENDS
               for w in _OTHER_SUBJECT_KO.findall(between))


def _strip_particle(s: str) -> str:
    return re.sub(r"^(?:이|가|은|는|을|를|도|의|과|와|랑|이랑|하고)?\s*", " ", s, count=1)


def _after_termination(pre: str) -> str:
    cut = 0
    for m in _TERMINATION_EN.finditer(pre):
        cut = m.end()
    return pre[cut:]


def _topic(sentence: str, clause: str, pre: str = "") -> bool:
    if re.search(r"(?:\bmy|제|내)\s+$", pre, re.I):
        return False  # "my sertraline": possessed, so the user's own
    if _ADVICE.search(clause):
        return True
    if _QUESTION_KO.search(clause) and not _SELF_KO.search(sentence):
        return True
    if re.search(r"[가-힣]", clause):
        return False
    return bool(_QUESTION_EN.search(clause)) and not _SELF_EN.search(sentence)


def _is_allergy(pre: str, post: str) -> bool:
    if _ALLERGY_POST_KO.search(post) or _ALLERGY_POST_EN.search(post):
        return True
    return bool(_ALLERGY_PRE_KO.search(pre[-40:]) or _ALLERGY_PRE_EN.search(pre[-60:]))
