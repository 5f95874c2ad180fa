"""Which words of a question are the team's, which are common, and which could be anyone's.

The ownership rule of the response cache (:mod:`core.cache.ownership`) shares an answer only
when nothing in its question can be specific to the asker. A word is *known* when it is

- in the **team vocabulary**: the words of the bundled knowledge corpus (the prebuilt BM25
  vocabulary, ``core/knowledge/index/bm25/vocab.index.json``), of the concept table
  (``core/extraction/data/lexicon.jsonl``: names, synonyms, Korean names) and of the
  question-type frames and fillers (``core/qtype/data/qtype_*``); Korean text is added as Kiwi
  morphemes (:func:`core.retrieval.tokenize.tokenize`), English as lower-cased letter runs; or
- for a lower-case English word only, a **common word**: one cl100k_base token with its leading
  space (``" together"``). Byte-pair merges are learnt in order of frequency (Sennrich et al.
  2016, ACL, "Neural Machine Translation of Rare Words with Subword Units"), so a word that is
  a single token of a 100k vocabulary is among the most frequent strings of that tokenizer's
  training text. Lower-cased names mostly are not (``" minji"``, ``" okafor"``, ``" sarah"``
  take 2–3 tokens), nor are invented drug names (``" zorbexitol"``: 4).

Anything else is *unknown* and, in doubt, treated as possibly the asker's own.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources

_LATIN = re.compile(r"[A-Za-z]+")
_HANGUL_WORD = re.compile(r"[가-힣]{2,}")


def _team_texts() -> list[str]:
    """Every text the team's vocabulary is made from (concept names, frames, fillers)."""
    texts: list[str] = []
    lexicon = resources.files("core.extraction").joinpath("data/lexicon.jsonl").read_text("utf-8")
    for line in lexicon.splitlines():
        if line.strip():
            row = json.loads(line)
            texts += [row.get("name_en") or "", row.get("name_ko") or ""]
            texts += list(row.get("synonyms_en") or []) + list(row.get("synonyms_ko") or [])
    data = resources.files("core.qtype").joinpath("data")
    for line in data.joinpath("qtype_frames.jsonl").read_text("utf-8").splitlines():
        if line.strip():
            texts.append(re.sub(r"[{}]", " ", json.loads(line).get("frame", "")))
    fillers = json.loads(data.joinpath("qtype_fillers.json").read_text("utf-8"))
    for per_lang in fillers.values():
        for values in per_lang.values():
            texts += [str(v) for v in values]
    return texts


@lru_cache(maxsize=1)
def team_vocabulary() -> frozenset[str]:
    """Lower-cased words and Korean morphemes of the team's texts (module docstring); built
    once per process (about 0.3 s)."""
    from core.retrieval.tokenize import tokenize

    words: set[str] = set()
    corpus = resources.files("core.knowledge").joinpath("index/bm25/vocab.index.json")
    try:
        words.update(str(w).lower() for w in json.loads(corpus.read_text("utf-8")))
    except (FileNotFoundError, ValueError):  # a package without the prebuilt index
        pass
    texts = _team_texts()
    words.update(tokenize("\n".join(t for t in texts if re.search(r"[가-힣]", t))))  # one Kiwi call
    for text in texts:
        words.update(w.lower() for w in _LATIN.findall(text))
        words.update(w for w in text.split() if _HANGUL_WORD.fullmatch(w))  # whole names: 만성콩팥병
    return frozenset(words)


@lru_cache(maxsize=1)
def _korean_sorted() -> list[str]:
    return sorted(w for w in team_vocabulary() if _HANGUL_WORD.fullmatch(w))


def is_team_korean_span(word: str, end: int) -> bool:
    """True when the first ``end`` characters of the Korean ``word`` (a whitespace-delimited
    word, particles included) are covered by a team word: a team word is a prefix of ``word``
    at least ``end`` long (``오메프라졸`` in ``오메프라졸을``), or ``word[:end]`` begins a team
    word (``수족구`` of ``수족구병``). Kiwi cuts unfamiliar drug and disease names into pieces;
    the word as written is what the team's vocabulary knows."""
    import bisect

    vocab = team_vocabulary()
    if any(word[:n] in vocab for n in range(end, len(word) + 1)):
        return True
    head = word[:end]
    words = _korean_sorted()
    i = bisect.bisect_left(words, head)
    return i < len(words) and words[i].startswith(head)


def _variants(word: str) -> set[str]:
    """``word`` and its English inflection variants (plural, -ed, -ing; ``triglyceride`` for
    ``triglycerides`` and back): a light suffix stripping, never a dictionary."""
    w = word.lower()
    out = {w, w + "s", w + "es"}
    for suffix, repl in (("ies", "y"), ("es", ""), ("s", ""), ("ed", ""), ("ed", "e"), ("ing", ""),
                         ("ing", "e"), ("'s", "")):
        if w.endswith(suffix) and len(w) > len(suffix) + 2:
            out.add(w[: -len(suffix)] + repl)
    return out


def is_team_word(word: str) -> bool:
    """True when ``word`` (any case; a Korean morpheme form) or one of its English inflections
    is in :func:`team_vocabulary`."""
    vocab = team_vocabulary()
    return word.lower() in vocab or (word.isascii() and not _variants(word).isdisjoint(vocab))


@lru_cache(maxsize=8192)
def is_common_english(word: str) -> bool:
    """True when the lower-cased ``word`` is a single cl100k_base token after a space (module
    docstring): a frequent English word written in lower case."""
    from core.language.tokens import encoding

    return len(encoding().encode(" " + word.lower(), disallowed_special=())) == 1


def is_known_english(word: str) -> bool:
    """A word of Latin letters that is the team's or common (module docstring)."""
    return is_team_word(word) or is_common_english(word)
