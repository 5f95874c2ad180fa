"""Self-harm said as a question about a lethal amount of a medicine, for triage layer 1.

"How many of my sleeping pills would it take to not wake up", "타이레놀 몇 알 먹으면 안
깨어나요": asking how much of a medicine would stop one waking is intent with a method, an
emergency (NICE NG225 *Self-harm*, 2022: assess anyone who talks about a method; the NHS page
*Help for suicidal thoughts* lists looking for ways to end one's life among the warning signs).
The same words without the intent are everyday questions: the safe dose for a child, the
maximum dose, one tablet taken twice by mistake, a repeat prescription. So the message is read
for three signs, merged into :data:`core.safety.signs.SIGNS`:

- ``amount_q``: an amount asked about or named as the means (``how many``, ``what dose``,
  ``the whole box``, ``몇 알``, ``한 통``, ``다 먹으면``);
- ``no_waking``: the outcome wanted is not waking, not being found in time or an ending
  (``to not wake up``, ``sleep for good``, ``stop breathing``, ``영원히 잠들``, ``깨지 않``,
  ``아침이 안 올``);
- ``safe_dosing``: the framing of a safe-dosing question (for a child, maximum or normal dose,
  taken by mistake, as a carer, ``최대 용량``, ``실수로``, ``간병``): a feature for layer 2,
  never a reason to drop ``no_waking`` (intent wins).

:func:`lethal_reason` says when one of these signs does not count: it is not dropped as "only a
question" (the emergency *is* a question), but it is when past and recovered from, denied, or,
for ``no_waking``, a figure of speech about sleep (a laugh, a bounded time: "not wake up till
Monday lol") or a wish to sleep through the night (insomnia).
"""

from __future__ import annotations

import re

_MEDS_EN = (r"(?:pills?|tablets?|tabs|caps(?:ules)?|meds|medications?|medicines?|doses?|units|mg|patches|syrup|pens?|"
            r"paracetamol|tylenol|acetaminophen|ibuprofen|nurofen\w*|aspirin|codeine|co-codamol|tramadol|morphine|oxy\w*|"
            r"fentanyl|insulin|zopiclone|zolpidem|ambien|temazepam|diazepam|valium|lorazepam|xanax|\w*pam|\w*lam|"
            r"quetiapine|seroquel|amitriptyline|mirtazapine|sertraline|citalopram|fluoxetine|venlafaxine|lithium|"
            r"propranolol|nytol|sleeping\s+(?:pills|tablets|meds)|painkillers|antidepressants|these|them)")
_MEDS_KO = (r"(?:약|알약|수면제|수면유도제|진통제|타이레놀|아세트아미노펜|안정제|신경안정제|항우울제|인슐린|졸피뎀|zolpidem|"
            r"혈압약|심장약|마약성|패치|시럽|해열제)")

AMOUNT_Q = [
    r"\bhow\s+(?:many|much)\b|\bh(?:ow|w)\s+many\b|\ba\s+dose\s+of\b|\bwhat'?s?(?:\s+is)?\s+(?:the\s+|a\s+)?(?:minimum\s+|exact\s+)?(?:amount|number|dose|dosage|quantity)\b|\bwhich\s+(?:dose|amount)\b"
    r"|\b(?:minimum|min)\s+(?:amount|dose|number)\b|\bnumber\s+of\b.{0,30}\b" + _MEDS_EN,
    r"\b(?:the\s+)?(?:whole|entire|full|half\s+a)\s+(?:box|bottle|pack|packet|strip|tub|blister|prescription)\b"
    r"|\b(?:swallow(?:ed)?|take|took|taking|taken)\s+(?:all|every\s+one)\s+(?:\d+\s+)?(?:of\s+)?(?:my|the|these|them|those)?\b"
    r"|\b(?:is|are|would)\s+\d{2,3}\s+of\s+(?:my|her|his|the|these)\b|\bafter\s+taking\s+\d{2,3}\b|\b\d{2,3}\s+of\s+(?:my|her|his)\b",
    r"몇\s*(?:알|개|정|단위|장|그램|g\b|mg|밀리|통|봉|병|ml|cc|캡슐|방울)|얼마나\s*(?:많이\s*)?(?:먹|삼키|맞|먹어|먹으|드시|드셔|붙)|얼마(?:를|만큼)\s*(?:먹|삼키|맞)"
    r"|(?<![가-힣])(?:한|두|반)\s*통(?![가-힣])|(?<![가-힣])(?:한|두|반)\s*통(?:을|이|씩|째|다)|(?:다|전부|몽땅|한꺼번에|한\s*번에\s*다)\s*(?:먹|삼키|털어)|(?:\d+|스무|서른|마흔|쉰|삼십|이십|사십|오십|백)\s*(?:알|개|정)\s*(?:이면|있는데|정도면|먹으면)|몇\s*알이면",
]

NO_WAKING = [
    r"\b(?:not|never|don'?t|dont|won'?t|wont|wouldn'?t|doesn'?t|does\s+not|stop(?:ped)?)\s+(?:to\s+)?(?:be\s+)?(?:waking|wake|waken)(?:\s+up)?\b|\b(?:to|and|so\s+i|so\s+i\s+just)\s+(?:not|never)\s+wake\b"
    r"|\bstop\s+me\s+waking\b|\btoo\s+much\s+to\s+wake\s+(?:up\s+)?from\b|\bwake\s+up\s+at\s+all\b|\bnever\s+have\s+to\s+wake\b|\b(?:i\s+)?stop\s+waking\s+up\b",
    r"\b(?:sleep|asleep|drift\s+off|go\s+to\s+sleep|fall\s+asleep)\b.{0,25}\b(?:for\s+good|forever|permanently|for\s+ever|and\s+(?:that'?s\s+it|never|not|don'?t))\b"
    r"|\bsleep\s+through\s+everything\b|\bdon'?t\s+come\s+back(?:\s+from)?\b|\bdrift\s+off\s+and\b",
    r"\bstop(?:s)?\s+breathing\b|\bheart\s+(?:to\s+)?stop\b|\bmake\s+(?:my|the)\s+heart\s+stop\b|\bnot\s+be\s+(?:here|around|found)\b|\bnobody\s+finds\s+me\b|\bfind\s+me\s+asleep\b"
    r"|\b(?:till|until)\s+it'?s\s+too\s+late\b|\bend\s+it\b|\bnot\s+doing\s+this\s+any\s*more\b|\bface\s+tomorrow\b|\blethal\b.{0,20}\b(?:for\s+me|myself|asking\s+for\s+me)\b",
    r"안\s*깨(?:어나|어날|나|냐|지|고|요|어요)|깨지\s*(?:않|말|못)|못\s*깨(?:어나|워|어날)|다시는?\s*(?:안|못)\s*깨|영원히\s*(?:잠들|잠|자)|아침이\s*안\s*(?:올|오|왔)"
    r"|(?:안|못)\s*일어나|심장이\s*(?:멈|서)|(?:자다가|잠든\s*채로?|잠결에)\s*그대로\s*(?:갈|가|떠나)|발견될\s*(?:때|쯤)|아무도\s*못\s*깨|고통\s*없이|주무시다\s*(?:가|떠나)",
]

SAFE_DOSING = [
    r"\bfor\s+(?:a|my|our|the)\s+(?:\d+\s*(?:year|yr|month)s?[- ]old|child|kid|toddler|baby|infant|teen\w*)\b|\bmax(?:imum)?\s+(?:daily\s+)?(?:dose|amount|number)\b|\b(?:daily|dose)\s+limit\b|\bceiling\b"
    r"|\bsafe(?:ly)?\b|\b(?:normal|usual|recommended|allowed|correct)\s+(?:dose|amount|gap|limit)\b|\bbetween\s+doses\b|\binstead\s+of\s+one\b|\bby\s+mistake\b|\baccidentally\b"
    r"|\b(?:as\s+(?:her|his|their)\s+carer|caring\s+for|i\s+look\s+after|home\s+carer|i\s+give\s+(?:my|him|her))\b|\brepeat\s+prescription\b|\brefill\b|\brenew\b|\bprescription\s+ran\s+out\b",
    r"최대|안전(?:한|하게)?|한계|상한|정량|권장\s*용량|복용\s*간격|간격|실수로|깜빡|간병|모시고|보호자|요양보호사|챙겨\s*드리|처방(?:받|이|을)"
    r"|(?:아이|아기|어린이|애)(?:용|\s*용량|\s*해열제|\s*시럽|한테\s*(?:몇|얼마)|에게\s*(?:몇|얼마))|(?:\d+|한|두|세|네|다섯|여섯|일곱)\s*(?:살|세)\s*(?:아이|아기|애)?\s*(?:해열제|시럽|타이레놀|약)",
]

LETHAL_OUTCOME = [
    r"\b(?:lethal|fatal|deadly)\b|\bkill\s+(?:me|myself|someone|somebody|a\s+person|an\s+adult|you)\b|\bstop\s+(?:someone'?s|somebody'?s|my|a\s+person'?s|your|his|her)\s+heart\b"
    r"|\b(?:wreck|destroy|fry|ruin)\w*\s+(?:my|your|the|someone'?s)\s+liver\s+for\s+good\b|\bwreck\w*\s+(?:my|your|the)\s+liver\b",
    r"치사량|치명적|(?:간|심장)(?:이|을|를)?\s*(?:완전히\s*)?(?:망가|멈)|죽(?:을\s*수\s*있|나요|어요|냐|는지)",
]
PERSONAL_STAKE = [
    r"\bfor\s+(?:me|myself)\b|\basking\s+for\s+(?:me|myself)\b|\bi\s+weigh\b|\bi'?m\s+(?:about\s+|around\s+|only\s+)?\d{2,3}\s*(?:kg|kilos?|lbs?)\b|\b(?:my|his|her|their)\s+(?:size|weight)\b|\b(?:she|he)\s+weighs\b"
    r"|\bnot\s+(?:for\s+)?(?:a\s+|an\s+|my\s+)?(?:school|homework|essay|project|assignment|class|uni|exam)\b|\b(?:this\s+)?isn'?t\s+(?:homework|for\s+(?:school|a\s+project|an\s+essay))\b"
    r"|\bi(?:'ve|\s+have)\s+got\s+(?:\d+|two|three|four|five|plenty|loads|lots|a\s+lot)\b|\bi\s+have\s+(?:\d+|two|three|four|five|plenty|loads|lots|a\s+lot)\s+(?:of\s+)?(?:full\s+)?(?:boxes|packs|pens|bottles|months?|weeks?)\b|\b(?:\w+\s+)?months?'?\s+supply\b|\bin\s+(?:the|my|his|her)\s+(?:cupboard|drawer|room)\b",
    r"(?:저|제\s*몸무게|제가)(?:가|는)?\s*\d{2,3}\s*(?:키로|킬로|kg)|\d{2,3}\s*(?:키로|킬로|kg)(?:예요|이에요|인데)|저\s*같은\s*(?:체격|사람)|(?:과제|숙제|리포트|레포트|시험)(?:\s*때문에\s*묻는\s*거)?\s*아니|궁금해서\s*(?:묻는\s*거\s*)?아니|제\s*얘기|저한테\s*쓸"
    r"|(?:집에|저한테|제가|방에|서랍에)\s*.{0,8}(?:많아|\d+\s*통|있어요|있고|모았)|(?:한|두|석|세)\s*달\s*치",
]
METHOD_Q = [
    r"\b(?:will|would|is|does)\s+(?:it|that|this)\s+(?:be\s+|feel\s+)?(?:peaceful|painless|quick\s+and\s+painless|certain|fatal\s+for\s+sure)\b|\b(?:be|feel|die)\s+(?:peaceful(?:ly)?|painless(?:ly)?)\b"
    r"|\bhigh\s+enough\s+to\s+be\s+sure\b|\b(?:work|die)\s+for\s+certain\b|\bto\s+be\s+sure\b|\balways\s+fatal\b|\bleast\s+painful\b|\bdo\s+people\s+survive\b",
    r"고통\s*없이\s*(?:갈|가|죽|끝)|편하게\s*(?:갈|가(?:요|나|냐)|죽|끝)|확실(?:하게|히)?\s*(?:끝나|죽|돼|되|가)|확실해|확실한지|확실할까|(?:제일|가장)\s*안\s*아픈\s*방법",
]
_TAKEN = re.compile(r"\b(?:swallowed|took|taken|downed|necked|has\s+had)\s+(?:a|the|an|all|every|\d+|his|her|my)\b|(?:먹었|삼켰|드셨|먹은\s*것\s*같)", re.I)
"""A dose already taken ("swallowed a whole strip", "한 통 다 먹었어요"): a statement for the
overdose signs, not an amount asked about."""
_PAST = re.compile(
    r"\b(?:years?|months?)\s+ago\b|\blast\s+year\b|\bback\s+when\b|\bused\s+to\b|\bin\s+(?:19|20)\d\d\b|\bwhen\s+(?:i|she|he)\s+was\b|\ba\s+long\s+time\s+ago\b|\bafter\s+my\s+overdose\b"
    r"|\b(?:survived|had|took)\s+an?\s+overdose\b|\b(?:two|three|\d+)\s+years\s+clean\b|전에|작년|예전에|한때|적이?\s*있|었었|했었|였었|때\s", re.I)
_RECOVERED = re.compile(
    r"\bin\s+recovery\b|\brecovered\b|\bdoing\s+(?:well|great|fine|better)\b|\b(?:much\s+)?better\s+place\b|\bstable\b|\bis\s+well\b|\bnow\s+(?:and\s+)?well\b"
    r"|\bbeen\s+well\b|\bwell\s+for\s+(?:ages|years|a\s+long\s+time)\b|\bin\s+therapy\b|\b(?:happy|stable)\s+now\b"
    r"|회복|잘\s*지내|괜찮아요|좋아져|건강해|치료받고", re.I)
_DENIED = re.compile(r"\b(?:not|never)\s+(?:been\s+)?suicidal\b|\bno\s+(?:thoughts|plans)\s+of\s+(?:suicide|ending|harming|hurting)\b|죽고\s*싶은\s*건\s*아니|그런\s*생각은\s*(?:전혀\s*)?없", re.I)
"""Intent explicitly denied. Ambivalence ("I don't want to die, but ...") is not a denial."""
_LAUGH = re.compile(r"\blol\b|\blmao\b|\bhaha\w*|\bjoking\b|\bjk\b|ㅋㅋ|ㅎㅎ|농담|😂|🤣", re.I)
_BOUNDED = re.compile(
    r"\b(?:for|till|until|til|before)\s+(?:a\s+|an\s+|the\s+)?(?:week|month|year|day|hours?|\d+\s+hours|hundred|monday|tuesday|wednesday|thursday|friday|saturday|sunday|spring|summer|noon|lunch|christmas|the\s+weekend)"
    r"|\b(?:till|until)\s+\w+day\b|\b\d+\s+hours\s+straight\b|(?:주말|월요일|봄|점심|오후|내일\s*오후)\s*(?:까지|내내)|시간\s*동안|주말\s*내내", re.I)
_INSOMNIA = re.compile(
    r"\bwake\s+up\s+(?:in\s+the\s+(?:night|middle)|at\s+\d|during|every|too\s+early|so\s+often|groggy|tired|at\s+night)\b|\bthrough\s+the\s+night\b|\bsleep\s+through\s+the\s+night\b|\bat\s+\d\s*am\b"
    r"|중간에|새벽에|자다가|밤새|푹\s*자|통잠|몇\s*시간\s*(?:마다|동안)", re.I)

LETHAL_SIGNS = frozenset({"amount_q", "no_waking", "safe_dosing", "lethal_outcome", "personal_stake", "method_q"})
"""The signs of this module, read by :func:`lethal_reason` instead of the generic context rules."""


def lethal_reason(text: str, sentence: str, sign: str, matched: str = "") -> str | None:
    """Why a sign of this module does not count, or ``None`` when it does.

    Args:
        text: the whole message (minimisers blanked, offsets kept); sentence: the sentence
            holding the match; sign: ``amount_q``, ``no_waking`` or ``safe_dosing``; matched:
            the matched text (a wish to sleep through the night only voids a phrase about waking).
    Returns:
        ``past`` (past and recovered from, in the message), ``negated`` (intent denied),
        ``joke`` (a figure of speech about sleep), ``mild`` (sleeping through the night) or
        ``None``. A question is never a reason here: the emergency is a question.
    """
    if sign in ("safe_dosing", "personal_stake"):
        return None
    if sign == "amount_q" and _TAKEN.search(sentence):
        return "past"
    if past_and_recovered(text, sentence):
        return "past"
    if _DENIED.search(text):
        return "negated"
    if sign == "no_waking" and sleep_figure(text, sentence, matched or "wake"):
        return "joke"
    if sign == "no_waking" and sleep_through_night(sentence, matched):
        return "mild"
    return None


_SLEEP_WORDS = re.compile(r"wak|sleep|asleep|깨|잠|자고", re.I)
_AGAIN = re.compile(r"\bagain\b|\btonight\b|\bright\s+now\b|지금\s*(?:또|다시)|오늘\s*밤", re.I)


def sleep_figure(text: str, sentence: str, matched: str) -> bool:
    """A phrase about not waking or sleeping forever used as a figure of speech: with a laugh or
    a bounded time ("not wake up till Monday lol", "영원히 잠들 거예요 ㅎㅎ") and no medicine
    amount named. Takes the message, the sentence and the matched phrase."""
    return bool(_SLEEP_WORDS.search(matched)) and not _has_means(text) and \
        bool(_LAUGH.search(text) or _BOUNDED.search(sentence))


def sleep_through_night(sentence: str, matched: str) -> bool:
    """A wish not to wake said about the night's sleep ("so I don't wake up at 3am", "중간에 안
    깨고 푹"), insomnia rather than intent: the matched phrase is about waking, the sentence
    names a time of night or sleeping through, and says nothing of forever."""
    return bool(re.search(r"wak|깨", matched, re.I)) and bool(_INSOMNIA.search(sentence)) and \
        not re.search(r"영원히|다시는|for\s+good|forever|permanently|never|again", sentence, re.I)


def past_and_recovered(text: str, sentence: str) -> bool:
    """An overdose or attempt told as past (``years ago``, ``back when``, ``예전에``) in a message
    that says the person has recovered (``in recovery``, ``doing well``, ``회복``), with nothing
    saying it is happening again."""
    return bool(_PAST.search(sentence)) and bool(_RECOVERED.search(text)) and not _AGAIN.search(text)


_MEANS = re.compile(r"\b" + _MEDS_EN + r"\b|" + _MEDS_KO, re.I)


def _has_means(text: str) -> bool:
    """A medicine (or "these", "them") is named: a laugh then does not make it a figure of speech."""
    return bool(_MEANS.search(text)) and bool(re.search("|".join(AMOUNT_Q), text, re.I))


def lethal_question(amount: str | None, no_waking: str | None, text: str) -> str | None:
    """The evidence of a lethal-amount question: an amount asked about (``amount``, the matched
    text of ``amount_q``) with the wish not to wake (``no_waking``) and a medicine or a verb of
    taking in the message; ``None`` otherwise."""
    if not amount or not no_waking:
        return None
    if not (_MEANS.search(text) or re.search(r"\b(?:take|took|swallow\w*|have\s+to\s+take)\b|먹|삼키|맞|드시|붙이", text, re.I)):
        return None
    return f"lethal-amount question: {amount} + {no_waking}"


_BIG_AMOUNT = re.compile(r"\b(?:[1-9]\d|\d{3})\s+(?:of\s+(?:my|her|his|the)\s+)?\w+|(?:\d{2,3}|스무|서른|마흔)\s*(?:알|정|개)|\b(?:whole|entire|full)\s+(?:box|bottle|pack)|\bevery\s+one\s+of\b|\ball\s+(?:\d+|my|of\s+my)\b|한\s*통|다\s*(?:먹|털)", re.I)
_HEIGHT = re.compile(r"\b\d{1,3}(?:th|st|nd|rd)?\s+(?:floors?|storeys?|stories)\b|\bfloors?\b|\d{1,3}\s*층|몇\s*층|\bgarage\b.{0,30}\bengine\b|차고.{0,15}시동", re.I)


def method_question(method_q: str | None, amount: str | None, text: str) -> str | None:
    """The evidence of a question whether a method is painless or certain ("will it be peaceful",
    "20층이면 확실해?", NICE NG225: a method talked about) with the method itself in the message: a
    large amount of a medicine (an ``amount_q`` match, or 10 or more tablets, a whole box), a
    height in floors, or a car engine in a garage. ``None`` otherwise."""
    if not method_q:
        return None
    big = _BIG_AMOUNT.search(text)
    height = _HEIGHT.search(text)
    if _MEANS.search(text) and (amount or big):
        return f"method asked about: {method_q} + {amount or big.group(0)}"
    return f"method asked about: {method_q} + {height.group(0)}" if height else None


_GENERIC = frozenset({"dose", "doses", "units", "mg", "these", "them", "pen", "pens"})


def named_medicine(text: str) -> bool:
    """A medicine or tablets are named in ``text`` (not only "dose", "units", "these")."""
    return any(m.group(0).lower() not in _GENERIC for m in _MEANS.finditer(text))


def lethal_stake(outcome: str | None, stake: str | None, text: str) -> str | None:
    """The evidence of a lethal-amount question with a personal stake: a lethal outcome asked about
    (``lethal``, ``stop someone's heart``, ``치사량``) together with the asker's own weight, own
    supply, or a denial that it is schoolwork, and a medicine named (NICE NG225). ``None``
    otherwise; an education question names no stake."""
    if not outcome or not stake or not named_medicine(text):
        return None
    return f"lethal question with a personal stake: {outcome} + {stake}"


SIGNS_LETHAL: dict[str, list[str]] = {"amount_q": AMOUNT_Q, "no_waking": NO_WAKING, "safe_dosing": SAFE_DOSING,
                                      "lethal_outcome": LETHAL_OUTCOME, "personal_stake": PERSONAL_STAKE, "method_q": METHOD_Q}
"""The signs above by name (merged into :data:`core.safety.signs.SIGNS`)."""
