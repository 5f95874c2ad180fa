"""Identifiers by their shape, in English and Korean text: e-mail addresses, links and handles,
phone numbers (digits, spaced digits, digits spelled in words), long digit runs and formatted
ID numbers, tokens mixing letters and digits, dates and dates of birth, street and Korean
addresses, and the words that announce an identifier (``insurance number``, ``MRN``,
``주민번호 앞자리``, ``차트번호``).

The shapes follow what de-identification standards list as direct identifiers: the HIPAA Safe
Harbor method's eighteen identifiers (45 CFR §164.514(b)(2): names, geographic subdivisions
smaller than a state, dates other than the year, phone numbers, e-mail addresses, social
security, medical record, health plan, account and licence numbers, URLs, any other unique
identifying number or code) and Korea's Personal Information Protection Act's unique
identifiers (주민등록번호, 여권번호, 운전면허번호, 외국인등록번호; PIPA Article 24 and its
Enforcement Decree Article 19). Each detector over-matches on purpose: a false alarm only keeps
an answer from being shared.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.privacy.vocabulary import is_known_english, is_team_word


def is_known_word(word: str) -> bool:
    """A team or common English word, or an all-capital acronym of up to five letters."""
    return is_known_english(word) or (word.isupper() and len(word) <= 5)


@dataclass(frozen=True)
class Finding:
    """Something in a text that may be specific to one person.

    ``kind``: ``email``, ``link``, ``phone``, ``id_number``, ``code`` (letters and digits),
    ``date``, ``address``, ``id_cue``, ``name``, ``unknown_word``, ``age``, ``sex``,
    ``pregnancy``, ``instruction`` or ``statement``; ``start``/``end``: character offsets.
    """

    kind: str
    start: int
    end: int
    text: str


_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
                    r"|(?<![\w.+-])[\w.+-]+\s*[(\[<]?\s*(?:at|골뱅이)\s*[)\]>]?\s*[\w-]+\s*[(\[<]?\s*(?:dot|닷|점)\s*"
                    r"[)\]>]?\s*(?:com|net|org|kr|co|io|edu)\b", re.I)
_LINK = re.compile(r"https?://\S+|www\.\S+|(?<![\w-])[\w-]+\.(?:com|net|org|kr|io|me|co|info|biz|example)\b"
                   r"|(?<![\w@])@[A-Za-z0-9_.]{2,}"
                   r"|\b(?:instagram|insta|twitter|kakao\s*(?:talk)?\s*id|line\s*id|telegram|facebook"
                   r"|tiktok|snapchat|wechat|discord)\b\s*(?:id|handle)?\s*[:：]?\s*\S+"
                   r"|(?:인스타(?:그램)?|카톡|카카오톡|텔레그램|페이스북|페북|틱톡|아이디)\s*(?:아이디|id)?\s*[:：]?\s*"
                   r"[A-Za-z0-9_.@-]+", re.I)
_PHONE = re.compile(r"(?<!\w)(?<!\d\.)(?:\+\s?\d{1,3}[\s.-]?)?(?:\(\d{1,4}\)[\s.-]?)?\d{2,4}"
                    r"(?:[\s./-]{1,2}\d{2,4}){1,4}(?!\w)(?!\.\d)|(?<!\d)(?:\d[\s.-]){6,}\d(?!\d)")
_SPELLED_EN = re.compile(r"\b(?:(?:zero|oh|one|two|three|four|five|six|seven|eight|nine)[\s,-]+){6,}"
                         r"(?:zero|oh|one|two|three|four|five|six|seven|eight|nine)\b", re.I)
_SPELLED_KO = re.compile(r"(?:[공영일이삼사오육륙칠팔구]\s?){7,}")
_LONG_DIGITS = re.compile(r"\d{6,}")
_CODE = re.compile(r"(?<![A-Za-z0-9-])(?=[A-Za-z0-9-]*[A-Za-z])(?=[A-Za-z0-9-]*\d)"
                   r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?![A-Za-z0-9])")
_UNIT = re.compile(r"\d+(?:\.\d+)?(?:mg|mcg|ug|g|kg|ml|l|dl|mmhg|bpm|iu|u|h|hr|hrs|min|mins|am|pm|x"
                   r"|st|nd|rd|th|yo|cm|mm|m|ft|in|lb|lbs|oz|k|d|w|wk|wks|y|yr|yrs|mmol|s|s?ec|kcal"
                   r"|cal|mgdl|mmoll|f|c)", re.I)
_MEDICAL_CODES = frozenset({
    "hba1c", "a1c", "b1", "b2", "b3", "b5", "b6", "b7", "b9", "b12", "d2", "d3", "k1", "k2",
    "omega3", "coq10", "covid19", "sarscov2", "h1n1", "h5n1", "h3n2", "hpv16", "hpv18", "t2dm",
    "t1dm", "dm2", "dm1", "glp1", "sglt2", "dpp4", "cox1", "cox2", "ace2", "her2", "brca1",
    "brca2", "apoe4", "pm25", "pm10", "fev1", "5fu", "cd4", "cd8", "il6", "t3", "t4", "ft4",
    "ft3", "tsh2", "ckd3", "ckd4", "ckd5", "g6pd", "mmr2", "tdap2", "hiv1", "hiv2", "hsv1",
    "hsv2", "ebv1", "nt3", "icd10", "icd11", "ca125", "ca199", "p53", "rsv2", "n95", "kf94",
    "kf80", "spo2", "o2", "co2", "h2", "h2o", "ppi2", "1st", "2nd", "3rd", "4th", "24h", "12h"})
_DATE = re.compile(r"(?<!\d)(?:19|20)\d{2}\s*[-./년]\s*\d{1,2}\s*[-./월]\s*\d{1,2}(?:\s*일)?(?!\d)"
                   r"|(?<!\d)\d{1,2}\s*[-./]\s*\d{1,2}\s*[-./]\s*(?:19|20)?\d{2}(?!\d)"
                   r"|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}"
                   r"(?:st|nd|rd|th)?,?\s+(?:19|20)\d{2}\b"
                   r"|\b\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|"
                   r"nov|dec)[a-z]*\.?,?\s+(?:19|20)\d{2}\b", re.I)
_BIRTH = re.compile(r"\b(?:born|birthday|birth\s*date|date of birth|d\.?o\.?b\.?)\b"
                    r"|생일|생년월일|(?<!\d)\d{2,4}\s*년\s*생|(?<!\d)\d{1,2}\s*월\s*\d{1,2}\s*일\s*생|년생|생이에요|생입니다", re.I)
_STREET = re.compile(
    r"\b\d+[A-Za-z]?,?\s+(?:[A-Z][A-Za-z]+\s+){1,3}(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane"
    r"|Ln|Drive|Dr|Place|Pl|Way|Court|Ct|Parkway|Pkwy|Terrace|Loop|Square|Sq|Close|Crescent|street|avenue"
    r"|road|lane|drive)\b")
_ADDRESS = re.compile(
    r"\b(?:i live (?:at|in|on|near)|my (?:home )?address|address is|zip ?code|post ?code|postal code"
    r"|apartment|apt\.?\s*\d|suite\s*\d|unit\s*\d+[a-z]?|p\.?o\.? box)\b"
    r"|(?:서울|부산|대구|인천|광주|대전|울산|세종|경기|강원|충북|충남|충청|전북|전남|전라|경북|경남|경상|제주)"
    r"(?:특별시|광역시|특별자치시|특별자치도|도|시)?\s*[가-힣]{1,6}(?:시|구|군)"
    r"|[가-힣]{1,6}(?:구|군)\s+[가-힣]{1,6}(?:동|읍|면|리)(?![가-힣])|[가-힣]{2,8}(?:대로|로|길)\s?\d+-\d+"
    r"|(?<!\d)\d+\s*번길|(?<![\d-])\d+(?:-\d+)?\s*번지|(?<!\d)\d+\s*동\s*\d+\s*호"
    r"|(?<![가-힣])[가-힣]+(?:아파트|빌라|오피스텔)"
    r"|주소|사는\s*곳|살고\s*있|살아요|사는데", re.I)
_ID_CUE = re.compile(
    r"\b(?:ssn|social security|social insurance|national (?:id|insurance)|nhs (?:number|no)|id (?:number|no)"
    r"|passport|driver'?s? licen[cs]e|licen[cs]e (?:number|no)|insurance (?:number|no|id|card)"
    r"|policy (?:number|no|#)|member (?:id|number|no)|patient (?:id|number|no)|medical record|mrn"
    r"|(?:record|chart|case|claim|account|hospital|card|reference|ref|order|booking) (?:number|no|#)"
    r"|credit card|bank account|routing number|iban|health card|medicare (?:number|card)"
    r"|medicaid|last (?:four|4) (?:digits )?of|(?:phone|cell|mobile|contact|whatsapp|telephone|tel)\s*"
    r"(?:number|no|#|:))\b|\b(?:chart|claim|case|account|mrn)\s*#"
    r"|주민|외국인\s*등록|여권|면허\s*번호|운전\s*면허|보험증|증권\s*번호|가입자\s*번호|회원\s*번호|환자\s*번호"
    r"|차트\s*번호|병록\s*번호|등록\s*번호|진료\s*카드|카드\s*번호|계좌|학번|사번|군번|처방전\s*번호|접수\s*번호"
    r"|앞자리|뒷자리|예약\s*번호|연락처|전화\s*번호|휴대폰|핸드폰|폰\s*번호", re.I)


def _all(rx: re.Pattern[str], kind: str, text: str) -> list[Finding]:
    return [Finding(kind, m.start(), m.end(), m.group(0)) for m in rx.finditer(text)]


def _phones(text: str) -> list[Finding]:
    out = [f for f in _all(_PHONE, "phone", text) if sum(c.isdigit() for c in f.text) >= 7]
    out += _all(_SPELLED_EN, "phone", text) + _all(_SPELLED_KO, "phone", text)
    return out


def _known_code(part: str) -> bool:
    """A measurement (``120mg``), an ordinal or a known medical name (``HbA1c``, ``SGLT2``,
    ``COVID19``, or a word of the team's vocabulary)."""
    flat = part.replace("-", "").lower()
    return bool(_UNIT.fullmatch(part)) or flat in _MEDICAL_CODES or is_team_word(flat)


def _is_code(token: str) -> bool:
    """A letter-digit token that could identify someone: not a known code as a whole, and
    either a part of it mixes letters and digits, or (hyphenated: ``XKQ-48213``, ``type-2``)
    a digit part has three or more digits or a letter part is no known word."""
    if _known_code(token):
        return False
    parts = [p for p in token.split("-") if p]
    if any(re.search(r"[A-Za-z]", p) and re.search(r"\d", p) and not _known_code(p) for p in parts):
        return True
    return any((p.isdigit() and len(p) >= 3) or (p.isalpha() and not is_known_word(p)) for p in parts)


def _codes(text: str) -> list[Finding]:
    return [Finding("code", m.start(), m.end(), m.group(0)) for m in _CODE.finditer(text)
            if _is_code(m.group(0))]


def shape_findings(text: str) -> list[Finding]:
    """Every identifier of :mod:`this module <core.privacy.shapes>` in ``text`` (any order;
    spans may overlap)."""
    out = _all(_EMAIL, "email", text) + _all(_LINK, "link", text) + _phones(text)
    out += _all(_LONG_DIGITS, "id_number", text) + _codes(text) + _all(_DATE, "date", text)
    out += _all(_BIRTH, "date", text) + _all(_STREET, "address", text) + _all(_ADDRESS, "address", text)
    out += _all(_ID_CUE, "id_cue", text)
    return out
