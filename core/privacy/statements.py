"""What a question says about a person rather than asks: a stated age, sex or pregnancy, and
first-person statements (``I take Zorbexitol.``, ``당뇨가 있어요.``), in English and Korean.

Age, sex and pregnancy are quasi-identifiers: together with a rare condition or a place they
single a person out (Sweeney 2002, "k-anonymity", Int. J. Uncertainty, Fuzziness and
Knowledge-Based Systems 10(5); HIPAA Safe Harbor removes ages over 89 and every date but the
year, 45 CFR §164.514(b)(2)(i)(C)). They count whoever they describe (``my 3-year-old``,
``아버지가 75세``): a relative's age is the asker's information too.

A *statement* is a sentence that tells something rather than asks it: in English one with a
first-person word (``I``, ``my``, ``we``) that neither ends in a question mark nor opens like
a question (``can``, ``what``, ``should``); in Korean, where the subject is usually dropped, a
sentence ending in a declarative form (``…있어요.``, ``…먹고 있는데``) rather than a question
(``…나요?``, ``…뭐예요``) or a request (``…알려 주세요``). A question with a statement in it is
about its asker, so in doubt its answer is the asker's alone.
"""

from __future__ import annotations

import re

from core.privacy.shapes import Finding

_AGE = re.compile(
    r"\b\d{1,3}\s*-?\s*(?:years?|yrs?|y)\s*-?\s*old\b|\b\d{1,3}\s*(?:yo|y/o|y\.o\.)(?![a-z])"
    r"|\baged?\s*:?\s*\d{1,3}\b|\bturn(?:ed|ing|s)?\s+\d{1,3}\b|\b(?:in\s+)?(?:my|his|her|their)\s+"
    r"(?:early\s+|mid[- ]?|late\s+)?\d0'?s\b|\b(?:early|mid|late)[- ]\d0'?s\b"
    r"|\bi(?:'m| am|m)\s+(?:only\s+|just\s+|almost\s+|nearly\s+|now\s+|over\s+|under\s+)?\d{1,3}\b"
    r"(?!\s*(?:kg|lbs?|cm|%|mg|mmhg|/|weeks?|days?|months?|hours?|minutes?|times|x\b|pounds?|kilos?))"
    r"|\b\d{1,3}\s*-?\s*(?:months?|weeks?|days?)\s*-?\s*old\b|\b\d{2}\s?[mf]\b|\b[mf]\s?[,/]\s?\d{2}\b"
    r"|(?:만\s*)?\d{1,3}\s*(?:세|살)|\d0\s*대|만\s*\d{1,3}|\d{1,2}\s*개월\s*(?:된|짜리|아기|아이|애기|차)"
    r"|(?:올해|나이(?:는|가)?)\s*(?:만\s*)?(?:\d+|스물|서른|마흔|쉰|예순|일흔|여든|아흔|열)"
    r"|(?:스물|서른|마흔|쉰|예순|일흔|여든|아흔)(?:한|두|세|네|다섯|여섯|일곱|여덟|아홉|하나|둘|셋|넷)?\s*"
    r"(?:살|이에요|이예요|입니다|인데|이고)", re.I)
_SEX = re.compile(
    r"\b(?:i'?m|i am|im|as)\s+(?:an?\s+)?(?:\d{1,3}\s*-?\s*(?:years?|yrs?)\s*-?\s*old\s+|\d{1,3}\s*,?\s*"
    r"|(?:young|old|older|middle-aged|elderly|pregnant|healthy|single|married|trans|transgender|cis"
    r"|korean|american|asian|black|white)\s+)*(?:male|female|man|woman|guy|girl|boy|lady|gentleman|mother"
    r"|mom|mum|father|dad|wife|husband|grandma|grandmother|grandpa|grandfather|nonbinary|non-binary)\b"
    r"|\b(?:male|female|[mf])\s*[,/]\s*\d{1,3}\b|\b\d{1,3}\s*[,/]?\s*(?:male|female)\b|\b\d{1,3}[mf]\b"
    r"|\b(?:sex|gender)\s*[:=]\s*\w+"
    r"|(?:남자|여자|남성|여성)\s*(?:인데|이고|이에요|예요|입니다|이며|이구요|이고요|이라|라서|이라서|임\b|이예요)"
    r"|(?:저는|전|나는|제가|본인은)\s*(?:\S+\s+){0,2}?(?:남자|여자|남성|여성)"
    r"|(?:\d0\s*대|\d{1,3}\s*(?:세|살))\s*(?:남자|여자|남성|여성|남|여)", re.I)
_PREGNANCY = re.compile(
    r"\b(?:i'?m|i am|im|currently|now|just got|got|we'?re|we are|wife is|she'?s|she is)\s+"
    r"(?:\d+\s+(?:weeks?|months?)\s+)?(?:\w+\s+)?pregnant\b|\b\d+\s*(?:weeks?|wks?|months?)\s+pregnant\b"
    r"|\bpregnant\s+(?:with|since|for|at)\b|\bmy\s+(?:pregnancy|due date|ob|obgyn|midwife)\b"
    r"|\b(?:i'?m|i am|currently|now)\s+(?:breast-?feeding|nursing|lactating)\b|\bbreast-?feeding my\b"
    r"|\btrying to (?:conceive|get pregnant)\b|\bttc\b"
    r"|임신\s*\d+\s*(?:주|개월)|임신\s*(?:중|했|하고|한\s*지|해서|인데|이에요|입니다|준비|초기|중기|말기)"
    r"|임산부\s*(?:인데|예요|이에요|입니다|라서|이고|이라)|(?:모유\s*)?수유\s*(?:중|하고)|출산\s*(?:예정|한\s*지)"
    r"|임신했|난임|시험관\s*시술", re.I)
_PREGNANT_WORD = re.compile(r"\bpregnan\w*|\bbreast-?feed\w*|\bnursing\b", re.I)
_FIRST_EN = re.compile(r"\b(?:i|i'm|im|i've|i'd|i'll|my|me|mine|we|we're|we've|our|us)\b", re.I)
_SUBJECT_EN = re.compile(
    r"\b(?:i|we|i'm|im|i've|i'd|i'll|we're|we've)\b|\b(?:my|our)\s+(?:[\w'-]+\s+){0,2}?(?:is|was|are|were|has"
    r"|had|have|came|comes|went|goes|got|gets|keeps|kept|hurts|hurt|feels|felt|looks|seems|reads|read"
    r"|measured|dropped|rose|spiked|shows|showed|said|says|told|gave|prescribed|started|stopped)\b", re.I)
_QUESTION_EN = re.compile(
    r"^\s*(?:\W*\s*)?(?:what|how|why|when|where|which|who|whom|whose|can|could|should|would|will|is|are|"
    r"am|do|does|did|may|might|must|shall|has|have|was|were|isn't|aren't|don't|doesn't|won't|any|"
    r"tell me|explain|please|help)\b", re.I)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
_WH_KO = re.compile(r"뭐|무엇|무슨|왜|어떻게|어떤|어떨|언제|어디|얼마|몇|누가|누구|어느|어때|할까|일까|을까|ㄹ까")
_ASK_KO = re.compile(
    r"(?:나요|까요|가요|죠|니|냐|는지|을지|는지요|인지|일지|되나|하나|인가|있나|없나|습니까|ㅂ니까|주세요|줘요|줘"
    r"|알려|궁금|설명|말해|돼요|되요|괜찮아요|괜찮나|맞나요|맞아요|가능해요|가능한가|좋아요|좋은가|해요|가요)"
    r"\s*[?？]*\s*$")
_STATE_KO = re.compile(r"(?:요|다|음|임|데|고|서|며|구|죠)\s*[.!~]*\s*$")
_FIRST_KO = re.compile(r"(?:저는|제가|저도|저희|제\s|내가|나는|내\s|우리\s|저\s|전\s|본인)")
_CLAUSE_KO = re.compile(r"(?<![가-힣])[가-힣]+(?:인데|는데|었는데|았는데|했는데|이고|하고\s*있고|있고|어서|아서|해서|이라서|라서)요?"
                        r"(?=[\s,.]|$)")
_COPULA_KO = re.compile(r"(?:인데|이고|이라서|라서)요?$")


def _statements_en(text: str) -> list[Finding]:
    out = []
    for m in _SENTENCE.finditer(text):
        sent = m.group(0)
        if not _SUBJECT_EN.search(sent) or sent.rstrip().endswith("?") or _QUESTION_EN.match(sent):
            continue
        out.append(Finding("statement", m.start(), m.end(), sent.strip()))
    return out


def _statements_ko(text: str) -> list[Finding]:
    out = []
    for m in _SENTENCE.finditer(text):
        sent = m.group(0)
        if not re.search(r"[가-힣]", sent):
            continue
        if sent.rstrip().endswith(("?", "？")) or _ASK_KO.search(sent) or _WH_KO.search(sent):
            clause = _background_clause(sent)  # "당뇨가 있는데 … 되나요?": the clause states
            if clause is not None:
                out.append(Finding("statement", m.start() + clause.start(), m.start() + clause.end(),
                                   clause.group(0)))
        elif _STATE_KO.search(sent):
            out.append(Finding("statement", m.start(), m.end(), sent.strip()))
    return out


def _background_clause(sent: str) -> re.Match[str] | None:
    """The clause of a Korean question that states something about the asker: it ends in a
    connective (``있는데``, ``먹고 있고``, ``인데요,``) and has a first-person word, a verb of
    having, taking or being diagnosed, or a copula (``박서준인데요``, ``임산부인데``)."""
    clause = _CLAUSE_KO.search(sent)
    if clause is None:
        return None
    if (_FIRST_KO.search(sent[:clause.end()] + " ") or re.search(r"있|먹|복용|받|했|진단|앓", clause.group(0))
            or _COPULA_KO.search(clause.group(0))):
        return clause
    return None


def _pregnancy_in_first_person(text: str) -> list[Finding]:
    """``Can I take ibuprofen while pregnant?``: pregnancy and a first-person word in one
    sentence states the asker's pregnancy."""
    out = []
    for m in _SENTENCE.finditer(text):
        p = _PREGNANT_WORD.search(m.group(0))
        if p and _FIRST_EN.search(m.group(0)):
            out.append(Finding("pregnancy", m.start() + p.start(), m.start() + p.end(), p.group(0)))
    return out


def statement_findings(text: str) -> list[Finding]:
    """Stated age, sex, pregnancy and first-person statements in ``text`` (module docstring)."""
    out = [Finding(kind, m.start(), m.end(), m.group(0))
           for kind, rx in (("age", _AGE), ("sex", _SEX), ("pregnancy", _PREGNANCY))
           for m in rx.finditer(text)]
    out += _pregnancy_in_first_person(text) + _statements_en(text)
    if re.search(r"[가-힣]", text):
        out += _statements_ko(text)
    return out
