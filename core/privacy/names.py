"""Names and unknown words in a question, English and Korean.

A name has no shape, so it is found by what surrounds it and by not being a known word
(:mod:`core.privacy.vocabulary`):

- **cues** that introduce a person: ``my name is``, ``call me``, ``this is``, a title
  (``Dr.``, ``Mrs``), a sign-off at the end (``thanks, Grace``, ``- Raj Patel``), a vocative or
  self-introduction at the start (``Minji here``, ``Tomasz, ...``); ``제 이름은``, ``…라고 해요``,
  an honorific after a word (``김철수 씨``, ``정하늘님``, ``… 교수님``);
- **capitalised words** that are not the first word of a sentence, not the team's vocabulary
  and not an acronym (``Hi, Tomasz Wojcik asking``);
- **unknown words**: English words that are neither team nor common words (``minji``,
  ``okafor``, ``zorbexitol``); Korean proper nouns (Kiwi's ``NNP``) and nouns of two or more
  syllables (``NNG``) outside the team's vocabulary (``홍길순``, ``조르벡시톨``, ``강남구``).

Every rule over-matches on purpose (an unfamiliar drug or place is kept as possibly the
asker's): a false alarm only keeps an answer from being shared.
"""

from __future__ import annotations

import re

from core.privacy.shapes import Finding, is_known_word
from core.privacy.vocabulary import is_team_korean_span, is_team_word

_WORD = re.compile(r"[A-Za-z][A-Za-z'’]*[A-Za-z]|[A-Za-z]")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\n]|[-–—(\"“'])\s*$")
"""Matched against the eight characters before a word: a sentence starts there."""
_CUE = re.compile(
    r"\b(?:my name(?:'s| is)|name\s*[:：]|i am called|i'?m called|call me|signed|on behalf of|named|called"
    r"|patient\s*[:：]|my (?:doctor|dr|gp|physician|nurse|husband|wife|son|daughter|mom|mum|dad|mother"
    r"|father|friend|neighbou?r|partner|boss|colleague|child|kid|sister|brother)(?:'s name)?\s+(?:is|named"
    r"|called))\s*[A-Za-z][\w'’.-]*", re.I)
_WEAK_CUE = re.compile(r"\b(?:[Tt]his is|I'?m|I am|[Aa]sking for|[Ff]rom|[Rr]egards,?|[Ss]incerely,?"
                       r"|Dr|Mr|Mrs|Ms|Miss|Mx|Prof|Sir|Madam|Dame|dr|mr|mrs|ms|prof)\.?\s+"
                       r"([A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*){0,2})")
_SIGN_OFF = re.compile(r"(?:\b(?:thanks|thank you|thx|regards|cheers|best|love|xoxo|sincerely)\b[,!.]?"
                       r"|[-–—~]|\bfrom)\s*([A-Za-z][\w'’.-]*(?:\s+[A-Za-z][\w'’.-]*){0,2})\s*[.!]?\s*$", re.I)
_VOCATIVE = re.compile(r"^\s*(?i:hi|hello|hey|dear)?[,!]?\s*([A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*){0,2})\s*"
                       r"(?:,|:|\bhere\b|\bspeaking\b|\bagain\b|\basking\b|\bfrom\b)")
_DISCOURSE = frozenset({
    "hi", "hello", "hey", "dear", "doctor", "doc", "ok", "okay", "also", "so", "well", "yes", "no",
    "please", "sorry", "thanks", "question", "quick", "however", "now", "then", "and", "but",
    "again", "plus", "btw", "fyi", "first", "second", "honestly", "actually", "basically",
    "anyway", "alright", "um", "uh", "oh", "wait", "listen", "look", "nurse", "pharmacist",
    "bot", "medbot", "hmm", "good", "morning", "evening", "afternoon", "help", "urgent",
    "important", "update", "follow", "next", "last", "one", "another", "other", "i", "and"})
_KO_CUE = re.compile(r"(?:제|내|저의|나의|본인)\s*이름|이름\s*(?:은|이)\s*\S+\s*(?:이에요|예요|입니다|이고|이요|인데)"
                     r"|(?<!\S)\S+\s*(?:이?라고|이?라구)\s*(?:해요|합니다|하는데|불러)")
_KO_HONORIFIC = re.compile(r"([가-힣]{1,4})\s?(?:씨|님|선생님|교수님|원장님|과장님|간호사님|약사님)(?![가-힣])")
_KO_TITLES = frozenset({"선생", "의사", "교수", "약사", "간호사", "원장", "과장", "환자", "고객", "회원", "보호자",
                        "어머", "아버", "할머", "할아버", "부모", "사장", "선배", "아드", "따", "손", "여러분",
                        "의사 선생", "담당", "주치의", "형", "누", "언", "고모", "이모", "삼촌", "사모"})


def _capitalised(text: str) -> list[Finding]:
    """Capitalised Latin words that start no sentence and are neither team words nor acronyms."""
    out = []
    for m in _WORD.finditer(text):
        word = re.sub(r"['’]s?$", "", m.group(0))
        if not word[:1].isupper() or word.isupper() or re.split(r"['’]", word)[0] == "I":
            continue
        if _SENTENCE_START.search(text[max(0, m.start() - 8):m.start()]) or is_team_word(word):
            continue
        out.append(Finding("name", m.start(), m.end(), m.group(0)))
    return out


def _unknown_english(text: str) -> list[Finding]:
    return [Finding("unknown_word", m.start(), m.end(), m.group(0)) for m in _WORD.finditer(text)
            if len(m.group(0)) > 2 and not is_known_word(m.group(0).replace("’", "'").split("'")[0])]


def _ordinary(words: str) -> bool:
    """Every word is a discourse word (``Hi``, ``Doctor``), a team word or a common word."""
    return all(w.lower() in _DISCOURSE or is_known_word(w) for w in words.split())


def _english_cues(text: str) -> list[Finding]:
    out = [Finding("name", m.start(), m.end(), m.group(0)) for m in _CUE.finditer(text)]
    out += [Finding("name", m.start(1), m.end(1), m.group(1)) for m in _WEAK_CUE.finditer(text)
            if not all(is_team_word(w) or w.lower() in _DISCOURSE for w in m.group(1).split())]
    for rx in (_SIGN_OFF, _VOCATIVE):
        m = rx.search(text)
        if m and not _ordinary(m.group(1)):
            out.append(Finding("name", m.start(1), m.end(1), m.group(1)))
    return out


def _team_span(text: str, start: int, end: int) -> bool:
    """The token ``text[start:end]`` is part of a team word as written (its whitespace-delimited
    word begins with one that covers the token: :func:`is_team_korean_span`)."""
    a = max(text.rfind(ch, 0, start) for ch in " \t\n,.!?()\"'") + 1
    b = len(text)
    for ch in " \t\n,.!?()\"'":
        i = text.find(ch, end)
        if i != -1:
            b = min(b, i)
    return is_team_korean_span(text[a:b], end - a)


def _korean(text: str) -> list[Finding]:
    """Unknown Korean proper nouns and nouns (Kiwi), name cues and honorifics."""
    from core.retrieval.tokenize import _kiwi, _lock

    out = [Finding("name", m.start(), m.end(), m.group(0)) for m in _KO_CUE.finditer(text)]
    out += [Finding("name", m.start(), m.end(), m.group(0)) for m in _KO_HONORIFIC.finditer(text)
            if m.group(1) not in _KO_TITLES and not is_team_word(m.group(1))]
    with _lock:
        tokens = _kiwi().tokenize(text)
    for t, nxt in zip(tokens, [*tokens[1:], None]):
        if not re.search(r"[가-힣]", t.form):
            continue
        surname = (t.tag == "NNP" and len(t.form) == 1 and nxt is not None and nxt.start == t.start + t.len
                   and nxt.tag in ("NNG", "NNP", "NNB"))  # 박/NNP 서/NNG 준/NNG: a name cut up
        if surname or ((t.tag == "NNP" or (t.tag == "NNG" and t.oov)) and not is_team_word(t.form)
                       and not _team_span(text, t.start, t.start + t.len)):
            kind = "name" if t.tag == "NNP" else "unknown_word"
            out.append(Finding(kind, t.start, t.start + t.len, text[t.start:t.start + t.len]))
    return out


def name_findings(text: str) -> list[Finding]:
    """Names, name cues and unknown words in ``text`` (module docstring)."""
    out = _english_cues(text) + _capitalised(text) + _unknown_english(text)
    if re.search(r"[가-힣]", text):
        out += _korean(text)
    return out
