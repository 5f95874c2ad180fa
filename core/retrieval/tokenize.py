"""BM25 tokenisation: Kiwi morphemes for Korean, lower-cased word tokens for English.

Korean keeps content morphemes only (SPEC.md §7: nouns, verbs, adjectives): Kiwi tags NNG, NNP
(nouns), VV, VA (verb and adjective stems), XR (roots), SL (Latin words inside Korean text),
SN (numbers) and SH (Hanja). Particles and endings are dropped, so ``당뇨병이`` and ``당뇨병과``
both index as ``당뇨병``. English keeps ``[a-z0-9]+`` words that are not in bm25s's English
stop-word list.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache

from bm25s.stopwords import STOPWORDS_EN_PLUS

NAME = "kiwi-morph+en-words/v2"
_KEEP_TAGS = {"NNG", "NNP", "VV", "VA", "XR", "SL", "SN", "SH"}
_HANGUL = re.compile(r"[\uac00-\ud7a3]")
_WORD = re.compile(r"[a-z0-9]+(?:[.'][a-z0-9]+)*")
_STOP = frozenset(STOPWORDS_EN_PLUS)
_lock = threading.Lock()


# Kiwi's construction (docs/benchmarks.md "Kiwi's model and memory"): the CoNg
# language model (kiwipiepy-model ships no other since 0.22), one thread (-1: no worker pool;
# 0 starts one per core since 0.21), and neither the WikiData multi-word dictionary (195 MB of
# RSS, 4x the load time, same nDCG@10 on the Korean set) nor the typo dictionary (typo
# correction is off).
KIWI_OPTIONS = {"model_type": "cong", "num_workers": -1, "load_multi_dict": False, "load_typo_dict": False}


@lru_cache(maxsize=1)
def _kiwi():
    from kiwipiepy import Kiwi  # the model ships in kiwipiepy-model; nothing is downloaded

    return Kiwi(**KIWI_OPTIONS)


def load() -> None:
    """Load Kiwi's model now (about 0.5 s idle, far more on a busy machine), so that the first
    Korean turn does not pay for it: the service calls this at start."""
    tokenize("제가 먹는 약 때문에 다리가 부을 수 있나요? 아침마다 머리가 아파요.")  # CoNg builds its
    # caches on the first real sentence: do it here, not in the first Korean turn


def versions() -> dict[str, str]:
    """What the Korean tokens depend on: kiwipiepy and kiwipiepy-model versions and the Kiwi
    options. Stamped into the bundled index's manifest (another value rebuilds its BM25 side)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {"name": NAME, "options": ",".join(f"{k}={v}" for k, v in sorted(KIWI_OPTIONS.items()))}
    for pkg in ("kiwipiepy", "kiwipiepy_model"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "absent"
    return out


def _english(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP and (len(w) > 1 or w.isdigit())]


def tokenize(text: str) -> list[str]:
    """Tokens for BM25 indexing or querying.

    Args:
        text: Korean, English or mixed text of any length.
    Returns:
        Lower-cased tokens; Korean morpheme forms for Hangul text. Empty for text with no
        indexable words.
    """
    if not _HANGUL.search(text):
        return _english(text)
    with _lock:
        tokens = _kiwi().tokenize(text)
    return [t for t in _merge(tokens) if t not in _STOP]


def _merge(tokens) -> list[str]:
    """Content forms, with two repairs of Kiwi's split: adjacent Latin letters and digits join
    (``SGLT2``, ``HbA1c`` as in English text), and a noun prefix (XPN: 고-, 저-) joins the noun
    right after it (``고혈당`` and ``저혈당`` stay different words)."""
    out: list[str] = []
    prev_end, prev_tag, pending = -1, "", ""
    for tok in tokens:
        form, tag = tok.form.lower(), tok.tag
        touching = tok.start == prev_end
        if tag in ("SL", "SN") and touching and prev_tag in ("SL", "SN") and out:
            out[-1] += form
        elif tag in ("NNG", "NNP") and touching and prev_tag == "XPN":
            out.append(pending + form)
        elif tag in _KEEP_TAGS:
            out.append(form)
        pending = form if tag == "XPN" else ""
        prev_end, prev_tag = tok.start + tok.len, tag
    return out


def tokenize_many(texts: list[str]) -> list[list[str]]:
    """Tokenise a batch of texts (same result as :func:`tokenize` on each)."""
    out: list[list[str]] = [[] for _ in texts]
    ko_idx = [i for i, t in enumerate(texts) if _HANGUL.search(t)]
    ko_set = set(ko_idx)
    for i, t in enumerate(texts):
        if i not in ko_set:
            out[i] = _english(t)
    for i in ko_idx:
        out[i] = tokenize(texts[i])
    return out
