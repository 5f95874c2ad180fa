"""Training data of the question-type classifier (:mod:`core.qtype.model`).

Two sources:

- **MedQuAD** (Ben Abacha & Demner-Fushman 2019; CC BY 4.0): the ``title`` (the question) and
  ``qtype`` of each of its 16,407 rows, read from ``../shared/data/medquad/corpus.jsonl`` at
  training time only (never copied into the package). Labels are mapped to the team's ids
  (:data:`MEDQUAD_MAP`).
- **The team's questions** (``core/qtype/data/qtype_frames.jsonl``): consumer wording in Korean and
  English for every type, including the drug types MedQuAD lacks. A frame may hold slots
  (``{c}`` condition, ``{c2}`` another condition, ``{d}``/``{d2}`` drugs, ``{t}`` a test, ``{v}``
  a test with its value, ``{s}`` a staged disease) filled from ``core/qtype/data/qtype_fillers.json``;
  a Korean slot may carry its particle (``{c|은}`` picks 은 or 는 after the filler's last
  syllable). Each frame is expanded a fixed number of times with a seed derived from its text,
  so the examples are the same on every machine.

Held-out splits are by group, so no test question shares a disease (MedQuAD ``focus``) or a
frame with a training question: :func:`split_of`.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from core.qtype.model import QTYPES

MEDQUAD_MAP = {"exams and tests": "exams_and_tests", "genetic changes": "genetic_changes",
               "support groups": "information"}
"""MedQuAD qtype -> team id (the others are equal)."""

FRAMES_FILE = "qtype_frames.jsonl"
FILLERS_FILE = "qtype_fillers.json"
EXPANSIONS = 3  # instances per frame with slots
HELDOUT_SHARE = 0.2

_SLOT = re.compile(r"\{(\w+?)(?:\|([^}]+))?\}")

# Korean particles by whether the preceding syllable has a final consonant (batchim):
# (after a consonant, after a vowel); 으로/로 also takes 로 after ㄹ.
_PARTICLES = {"은": ("은", "는"), "는": ("은", "는"), "이": ("이", "가"), "가": ("이", "가"),
              "을": ("을", "를"), "를": ("을", "를"), "과": ("과", "와"), "와": ("과", "와"),
              "으로": ("으로", "로"), "으로부터": ("으로부터", "로부터"), "이라": ("이라", "라"),
              "이라는": ("이라는", "라는"), "이라고": ("이라고", "라고"), "이랑": ("이랑", "랑"),
              "이면": ("이면", "면"), "이었는데": ("이었는데", "였는데"), "인데": ("인데", "인데"),
              "이라는데": ("이라는데", "라는데"), "이란": ("이란", "란"),
              "일까요": ("일까요", "일까요"), "에": ("에", "에"), "에서": ("에서", "에서"),
              "에는": ("에는", "에는")}
# Final consonant of how a trailing digit / Latin letter is read in Korean (일, 삼, 육, 칠, 팔,
# 십/백 for 0; 엘, 엠, 엔, 알).
_DIGIT_BATCHIM = {"0": True, "1": True, "2": False, "3": True, "4": False, "5": False,
                  "6": True, "7": True, "8": True, "9": False}
_LATIN_BATCHIM = set("lmnr")


@dataclass(frozen=True)
class Example:
    """One labelled question: ``text``, ``qtype`` (a team id), ``lang``, ``source``
    (``medquad`` / ``team``) and ``group`` (MedQuAD focus or the frame: the split unit)."""

    text: str
    qtype: str
    lang: str
    source: str
    group: str


def _has_batchim(word: str) -> bool:
    last = word.rstrip()[-1:] if word.strip() else ""
    if "\uac00" <= last <= "\ud7a3":
        return (ord(last) - 0xAC00) % 28 != 0
    if last.isdigit():
        return _DIGIT_BATCHIM[last]
    return last.lower() in _LATIN_BATCHIM


def _ends_with_rieul(word: str) -> bool:
    last = word.rstrip()[-1:]
    return "\uac00" <= last <= "\ud7a3" and (ord(last) - 0xAC00) % 28 == 8


def with_particle(word: str, particle: str) -> str:
    """``word`` followed by the right form of a Korean particle (``당뇨병`` + 은 → ``당뇨병은``,
    ``통풍`` + 은 → ``통풍은``, ``치매`` + 은 → ``치매는``, ``간경화`` + 으로 → ``간경화로``).

    Raises:
        KeyError: the particle is not in the table.
    """
    after_consonant, after_vowel = _PARTICLES[particle]
    if particle.startswith("으로") and _ends_with_rieul(word):
        return word + after_vowel
    return word + (after_consonant if _has_batchim(word) else after_vowel)


def _data_path(name: str) -> Path:
    return Path(str(resources.files("core.qtype").joinpath("data", name)))


def load_frames() -> list[dict]:
    """The team's frames: ``{"qtype", "lang", "frame"}`` rows.

    Raises:
        ValueError: a row has an unknown qtype or language.
    """
    rows = [json.loads(line) for line in _data_path(FRAMES_FILE).read_text("utf-8").splitlines()
            if line.strip()]
    for r in rows:
        if r["qtype"] not in QTYPES or r["lang"] not in ("ko", "en"):
            raise ValueError(f"bad qtype frame: {r}")
    return rows


def expand_frame(frame: str, lang: str, fillers: dict, n: int | None = None) -> list[str]:
    """Instances of one frame: ``n`` fillings (distinct when possible) with a seed derived from
    the frame's text, or the frame itself when it has no slot."""
    if not _SLOT.search(frame):
        return [frame]
    n = n or EXPANSIONS
    rng = random.Random(hashlib.sha256(f"{lang}|{frame}".encode()).hexdigest())
    pool = fillers[lang]
    out: list[str] = []
    for _ in range(n * 3):
        chosen: dict[str, str] = {}

        def fill(m: re.Match) -> str:
            slot, particle = m.group(1), m.group(2)
            base = slot.rstrip("2")
            if slot not in chosen:
                taken = {v for k, v in chosen.items() if k.rstrip("2") == base}
                chosen[slot] = rng.choice([x for x in pool[base] if x not in taken])
            word = chosen[slot]
            return with_particle(word, particle) if particle else word

        text = _SLOT.sub(fill, frame)
        if text not in out:
            out.append(text)
        if len(out) == n:
            break
    return out


def team_examples() -> list[Example]:
    """The team's questions, expanded from the frames (deterministic)."""
    fillers = json.loads(_data_path(FILLERS_FILE).read_text("utf-8"))
    out = []
    for r in load_frames():
        for text in expand_frame(r["frame"], r["lang"], fillers):
            out.append(Example(text, r["qtype"], r["lang"], "team", f"frame:{r['frame']}"))
    return out


def medquad_examples(path: Path) -> list[Example]:
    """MedQuAD's questions with team labels (group = the focus, case-folded).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: a row's qtype maps to no team id.
    """
    out = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            label = MEDQUAD_MAP.get(d["qtype"], d["qtype"])
            if label not in QTYPES:
                raise ValueError(f"MedQuAD qtype {d['qtype']!r} has no team id")
            out.append(Example(d["title"], label, d.get("lang", "en"), "medquad",
                               "focus:" + str(d.get("focus", d["title"])).casefold()))
    return out


def split_of(example: Example) -> str:
    """``heldout`` for 20% of the groups (by SHA-256 of the group), else ``train``."""
    h = int(hashlib.sha256(example.group.encode("utf-8")).hexdigest()[:8], 16)
    return "heldout" if h % 1000 < HELDOUT_SHARE * 1000 else "train"


def team_data_sha256() -> str:
    """SHA-256 over the team's frames and fillers files (what the artifact records)."""
    h = hashlib.sha256()
    for name in (FRAMES_FILE, FILLERS_FILE):
        h.update(_data_path(name).read_bytes())
    return h.hexdigest()


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()
