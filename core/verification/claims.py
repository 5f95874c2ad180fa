"""The checkable sentences ("claims") of an answer and the citations each one carries.

An answer sentence is a claim when it states something: it has at least one content term
(:func:`core.answer.evidence.terms`) and is not fixed framing (the disclaimer, the offline generator's
opening and profile lines). A claim cites the evidence documents named by its ``[n]`` markers
(``[1]``, ``[1, 3]``, ``[1][3]``); a claim with no marker is checked against every evidence
document (it must be supported by one of them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.answer import prompts
from core.answer.evidence import terms
from core.language.text import split_sentences

_CITE = re.compile(r"\[(\d+(?:\s*[,;]\s*\d+)*)\]")
_LIST_MARK = re.compile(r"^\s*(?:[-*•]|\d+[.)]|#+)\s*")
_MARKDOWN = re.compile(r"\*\*|__|`")


@dataclass(frozen=True)
class Claim:
    """One answer sentence to check.

    Attributes:
        index: position among the answer's claims (0-based).
        text: the sentence as written (citations kept), for splicing a repair back.
        plain: the sentence without citation markers, list marks or Markdown emphasis.
        cited: the citation numbers in order (empty: none given).
    """

    index: int
    text: str
    plain: str
    cited: tuple[int, ...]


def cited_numbers(sentence: str) -> list[int]:
    """The citation numbers in ``sentence``, in order, without repeats."""
    nums: list[int] = []
    for m in _CITE.finditer(sentence):
        nums.extend(int(x) for x in re.split(r"\s*[,;]\s*", m.group(1)))
    return list(dict.fromkeys(nums))


def strip_citations(sentence: str) -> str:
    """``sentence`` without ``[n]`` markers, list marks and Markdown emphasis, spaces tidied."""
    text = _LIST_MARK.sub("", _MARKDOWN.sub("", _CITE.sub(" ", sentence)))
    return re.sub(r"\s+([.,;:!?])", r"\1", re.sub(r"\s{2,}", " ", text)).strip()


def _framing(sentence: str) -> bool:
    """True for the disclaimer and the offline generator's fixed lines (opening, profile,
    value, refusal), which state nothing about medicine."""
    from core.llm.offline import FRAMING_PREFIXES

    low = sentence.strip().lower()
    if any(low and low in d.lower() for d in prompts.DISCLAIMER.values()):
        return True
    return any(low.startswith(p.lower()) for p in FRAMING_PREFIXES)


_TRAILING_CITE = re.compile(r"[ \t]*(?:\[\d+(?:\s*[,;]\s*\d+)*\][ \t]*)+")


def split_claims(answer: str) -> list[Claim]:
    """The claims of ``answer`` in reading order (see the module docstring). A citation written
    after the sentence's full stop (``... ankles. [1]``, the offline generator's quotes) belongs
    to that sentence: its text then includes the marker, so a repair removes both."""
    out: list[Claim] = []
    pos = 0
    for sentence in split_sentences(answer):
        at = answer.find(sentence, pos)
        if at >= 0:
            pos = at + len(sentence)
            tail = _TRAILING_CITE.match(answer, pos)
            if tail and tail.group(0).strip():
                sentence, pos = answer[at:tail.end()].rstrip(), tail.end()
        plain = strip_citations(sentence)
        if not plain or not terms(plain) or _framing(plain) or plain.endswith(":"):
            continue
        out.append(Claim(len(out), sentence, plain, tuple(cited_numbers(sentence))))
    return out


def evidence_for(claim: Claim, documents: list[str]) -> list[str]:
    """The evidence texts ``claim`` cites (``documents`` in citation order, 1-based numbers);
    every document when it cites none; ``[]`` when it cites only numbers that do not exist."""
    if not claim.cited:
        return list(documents)
    return [documents[n - 1] for n in claim.cited if 1 <= n <= len(documents)]
