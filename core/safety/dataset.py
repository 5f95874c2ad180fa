"""The team's labelled triage messages (package data ``core/safety/data/train/*.tsv``), and
the team's annotated sets imported with their labels mapped (``core/safety/data/imported/``).

One file per category id (``none.tsv`` for everyday messages), one message per line, tab-
separated: ``lang  emergency  person  kind  text`` where ``lang`` is ``ko`` / ``en``,
``emergency`` ``1`` / ``0``, ``person`` ``s`` (the writer), ``o`` (another adult) or ``c``
(a baby or child), and ``kind`` says how it is written: ``plain``, ``third``, ``typo``,
``slang``, ``mixed`` (Korean and English together) for emergencies; ``neg`` (negated),
``past``, ``fam`` (family history), ``gen`` (general question), ``hyp`` (hypothetical or
fiction), ``mild``, ``routine`` (a routine medication schedule), ``urgent`` (see a doctor
today, not 999), ``other`` for the rest. A ``0`` row in a category's file is a hard negative:
it borrows that category's words. Lines starting with ``#`` are comments.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from core.safety.taxonomy import IDS, NONE

PERSONS = {"s": "self", "o": "other", "c": "child"}


@dataclass(frozen=True)
class Example:
    """One labelled message. ``category`` is the file's id for an emergency, ``none`` for a
    non-emergency; ``borrows`` keeps the category whose words a hard negative borrows."""

    id: str
    lang: str
    text: str
    emergency: bool
    category: str
    person: str
    kind: str
    borrows: str = NONE


def _data(sub: str):
    return resources.files("core.safety").joinpath(f"data/{sub}")


def train_files() -> list[tuple[str, str]]:
    """``(file name, text)`` of every training file, sorted by name: the team's written
    messages (``train/<category>.tsv``) and the imported ones (``imported/*.tsv``)."""
    out = []
    for sub in ("train", "imported"):
        d = _data(sub)
        out += sorted((f"{sub}/{p.name}", p.read_text("utf-8")) for p in d.iterdir() if p.name.endswith(".tsv"))
    return out


def parse_tsv(name: str, text: str) -> list[Example]:
    """Rows of one training file.

    Raises:
        ValueError: a row without five tab-separated fields, a bad language, label or
            person code, or a file named after no category.
    """
    category = name.rsplit(".", 1)[0]
    if category not in IDS and category != NONE:
        raise ValueError(f"{name}: not a category id")
    rows: list[Example] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 5:
            raise ValueError(f"{name}:{n}: expected 5 tab-separated fields, got {len(parts)}")
        lang, y, person, kind, msg = parts
        if lang not in ("ko", "en") or y not in ("0", "1") or person not in PERSONS:
            raise ValueError(f"{name}:{n}: bad lang/emergency/person {parts[:3]}")
        emergency = y == "1"
        if emergency and category == NONE:
            raise ValueError(f"{name}:{n}: an emergency in none.tsv")
        rows.append(Example(f"{category}:{n}", lang, msg.strip(), emergency,
                            category if emergency else NONE, PERSONS[person], kind, category))
    return rows


def parse_imported(name: str, text: str) -> list[Example]:
    """Rows of an imported file: ``lang  emergency  category  person  kind  text  source``
    (the team's annotated sets, their first labels mapped to these ids; ``source`` is
    ``file:id``, kept as the example's id).

    Raises:
        ValueError: a malformed row or an unknown category.
    """
    rows: list[Example] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 7:
            raise ValueError(f"{name}:{n}: expected 7 tab-separated fields, got {len(parts)}")
        lang, y, cat, person, kind, msg, source = parts
        if lang not in ("ko", "en") or y not in ("0", "1") or person not in PERSONS or \
                (cat not in IDS and cat != NONE) or (y == "1") == (cat == NONE):
            raise ValueError(f"{name}:{n}: bad lang/emergency/category/person {parts[:4]}")
        rows.append(Example(source, lang, msg.strip(), y == "1", cat, PERSONS[person], kind, cat))
    return rows


def load_training(written_only: bool = False) -> list[Example]:
    """Every training row of the package, in file order (``written_only``: the team's
    written messages of ``train/`` alone, without the imported sets)."""
    out: list[Example] = []
    for name, text in train_files():
        if name.startswith("train/"):
            out.extend(parse_tsv(name.split("/", 1)[1], text))
        elif not written_only:
            out.extend(parse_imported(name, text))
    return out


def training_hash() -> str:
    """SHA-256 over the training files' names and bytes: the artifact's stamp."""
    h = hashlib.sha256()
    for name, text in train_files():
        h.update(name.encode())
        h.update(b"\0")
        h.update(text.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


def load_jsonl(path: str | Path) -> list[dict]:
    """A benchmark file: one JSON object per line with ``lang``, ``text``, ``emergency`` and
    ``category`` (the issue's schema), or the first triage's ``red_flag`` (``null`` or an old category).

    Returns:
        Rows normalised to ``id``, ``lang``, ``text``, ``emergency`` (bool), ``category``
        (``none`` for a non-emergency) and ``legacy`` (True for the first triage's labels); other keys
        (``person``, ``kind``) are kept.
    Raises:
        ValueError: a line that is not JSON or lacks ``text`` / ``lang``.
    """
    rows: list[dict] = []
    for n, line in enumerate(Path(path).read_text("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{n}: not JSON ({exc.msg})") from exc
        if not isinstance(r, dict) or "text" not in r or "lang" not in r:
            raise ValueError(f"{path}:{n}: needs at least 'text' and 'lang'")
        legacy = "emergency" not in r and "red_flag" in r
        if legacy:
            cat = r.get("red_flag") or NONE
            emergency = cat != NONE
        else:
            emergency = bool(r.get("emergency"))
            cat = r.get("category") or NONE
        rows.append({**r, "id": str(r.get("id", n)), "emergency": emergency,
                     "category": cat if emergency else NONE, "gold_category": cat, "legacy": legacy})
    return rows
