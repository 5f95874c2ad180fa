"""The labelled question pairs the cache decision learns from, and how they are split.

Sources (each pair ``{"a", "b", "same"}``; ``same``: ``a``'s answer serves ``b``):

- the team's pairs in both languages, bundled in ``bot/bench/data``:
  ``cache_calibration_pairs.jsonl`` (group ``team:calibration``) and ``cache_dev_pairs.jsonl``
  (group ``team:dev15b``); ``cache_blind_pairs.jsonl`` is never trained or tuned on;
- the Medical Question Pairs of doctors 1–6 (McCreery et al. 2020, "Effective Transfer
  Learning for Identifying Similar Questions: Matching User Questions to COVID-19 FAQs",
  KDD; ``../shared/data/mqp/pairs_dr1-6.jsonl``, outside the repository), one group per
  doctor (``mqp:dr1`` ...).

Split rule (fixed before any tuning): the MQP pairs of doctors :data:`TEST_DOCTORS` (5 and 6)
are the project's own held-out test; training and cross-validation use doctors
:data:`TRAIN_DOCTORS` (1–4) and the team's pairs. Cross-validation folds are whole groups
(a doctor, or one team file), so a fold is always a writer the model has not seen.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

TRAIN_DOCTORS = (1, 2, 3, 4)
TEST_DOCTORS = (5, 6)
TEAM_FILES = {"cache_calibration_pairs.jsonl": "team:calibration", "cache_dev_pairs.jsonl": "team:dev15b"}


def default_mqp_path() -> Path:
    """``$MEDBOT_SHARED_DATA/mqp/pairs_dr1-6.jsonl``, by default ``../shared/data`` relative
    to the project root."""
    base = os.environ.get("MEDBOT_SHARED_DATA") or Path(__file__).resolve().parents[2].parent / "shared" / "data"
    return Path(base) / "mqp" / "pairs_dr1-6.jsonl"


@dataclass(frozen=True)
class Pair:
    """One labelled pair: the two questions, the label, the language and the CV group."""

    a: str
    b: str
    same: bool
    lang: str
    group: str


def _rows(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def team_pairs(names: dict[str, str] | None = None) -> list[Pair]:
    """The bundled team pairs (``TEAM_FILES``: file name -> group)."""
    out = []
    for name, group in (names or TEAM_FILES).items():
        path = resources.files("bot.bench").joinpath("data", name)
        for r in _rows(path.read_text("utf-8")):
            out.append(Pair(r["a"], r["b"], bool(r["same"]), r.get("lang") or "en", group))
    return out


def mqp_pairs(path: Path, doctors: tuple[int, ...]) -> list[Pair]:
    """The MQP pairs of ``doctors`` in ``path`` (``[]`` when the file is absent)."""
    if not path.is_file():
        return []
    return [Pair(r["a"], r["b"], bool(r["same"]), "en", f"mqp:dr{r['dr']}")
            for r in _rows(path.read_text("utf-8")) if int(r["dr"]) in doctors]


def training_pairs(mqp: Path | None = None, doctors: tuple[int, ...] = TRAIN_DOCTORS) -> list[Pair]:
    """Team pairs plus the MQP pairs of ``doctors`` (default: the training doctors)."""
    return team_pairs() + mqp_pairs(mqp or default_mqp_path(), doctors)


def read_pair_file(path: Path) -> list[Pair]:
    """Any JSONL of ``{"a", "b", "same"[, "lang", "dr"]}``; the group is the doctor or the
    file name."""
    return [Pair(r["a"], r["b"], bool(r["same"]), r.get("lang") or "en",
                 f"mqp:dr{r['dr']}" if "dr" in r else path.stem)
            for r in _rows(path.read_text("utf-8"))]
