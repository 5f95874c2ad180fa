"""The MedCAT 2 model pack: built from the team's concept table, or an operator's own pack.

The bundled concept table (``data/lexicon.jsonl``: UMLS CUI, TUI, Korean and English preferred
names, synonyms, lay terms and abbreviations) is compiled into a MedCAT concept database (CDB)
on first use and saved as a model pack under ``<data_dir>/medcat/<hash>/``; the hash covers the
table, this module's pack format and the medcat version, so a changed table builds a new pack
and an unchanged one is loaded (about 0.4 s) instead of rebuilt (about 0.5 s).

Settings that make MedCAT 2.9 work on Korean without spaCy or torch (found in a trial here,
the first extractor's): the regex tokenizer; ``cdb_maker.min_letters_required = 0`` (otherwise every Hangul
name is dropped, since MedCAT counts only a-z as letters); a tagger that treats Hangul as word
characters (:class:`HangulTagger`); the dictionary (Aho-Corasick) NER from ``medcat[dict-ner]``,
because Korean particles stay attached to nouns (``당뇨병과`` is one token); minimum name
length 2; the preferred name alone on its ``P`` row; ``MEDCAT_DISABLE_VERSION_CHECK=true``
(medcat's import otherwise calls PyPI). The linker is MedCAT's primary-name-only linker: an
untrained pack has no context vectors, so a name maps to its concept only when unambiguous.

An operator with a licensed UMLS or SNOMED model pack sets ``MEDCAT_MODEL_PACK`` to its path.
"""

from __future__ import annotations

import csv
import hashlib
import logging
import os
import re
import shutil
import tempfile
from importlib import resources
from pathlib import Path

os.environ.setdefault("MEDCAT_DISABLE_VERSION_CHECK", "true")  # before medcat is imported

from medcat import __version__ as MEDCAT_VERSION  # noqa: E402
from medcat.cat import CAT  # noqa: E402
from medcat.components.tagging.tagger import TagAndSkipTagger  # noqa: E402
from medcat.components.types import CoreComponentType, register_core_component  # noqa: E402
from medcat.config import Config  # noqa: E402
from medcat.model_creation.cdb_maker import CDBMaker  # noqa: E402

log = logging.getLogger(__name__)

PACK_FORMAT = 1  # bump when the CSV layout or the config below changes
TAGGER_NAME = "hangul"


class HangulTagger(TagAndSkipTagger):
    """MedCAT's tag-and-skip tagger with Hangul syllables counted as word characters.

    The stock tagger marks every token matching ``[^a-z0-9]+`` as punctuation and skips it,
    which drops all Korean tokens.
    """

    name = "hangul-tagger"

    def __init__(self, preprocessing) -> None:  # noqa: ANN001 (medcat's Preprocessing)
        super().__init__(preprocessing)
        self.punct_checker = re.compile(r"[^a-z0-9\uac00-\ud7a3]+")


register_core_component(CoreComponentType.tagging, TAGGER_NAME, HangulTagger.create_new_component)


def pack_config() -> Config:
    """The MedCAT config of the bundled pack (see the module docstring for each setting)."""
    cfg = Config()
    cfg.general.log_level = logging.WARNING
    cfg.general.nlp.provider = "regex"
    cfg.general.usage_monitor.enabled = False
    cfg.cdb_maker.min_letters_required = 0
    cfg.components.tagging.comp_name = TAGGER_NAME
    cfg.components.ner.comp_name = "dict"
    cfg.components.ner.min_name_len = 2
    cfg.components.ner.upper_case_limit_len = 2
    cfg.components.ner.check_upper_case_names = True  # "DM", "HTN" only when typed in capitals
    cfg.components.linking.comp_name = "primary_name_only_linker"
    return cfg


def write_concept_csv(rows: list[dict], path: Path) -> int:
    """Write MedCAT's concept CSV (``cui,name,name_status,type_ids``) from lexicon rows.

    The English preferred name is alone on its ``P`` row; the Korean name, synonyms, lay terms
    and abbreviations are ``A`` rows. Returns the number of name rows written.
    """
    n = 0
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["cui", "name", "name_status", "type_ids"])
        for r in rows:
            preferred = r.get("name_en") or r["name_ko"]
            w.writerow([r["cui"], preferred, "P", r.get("tui", "")])
            n += 1
            others = [r.get("name_ko"), *r.get("synonyms_en", []), *r.get("synonyms_ko", [])]
            for name in dict.fromkeys(x for x in others if x and x != preferred):
                w.writerow([r["cui"], name, "A", r.get("tui", "")])
                n += 1
    return n


def build_pack(rows: list[dict], target: Path) -> Path:
    """Compile ``rows`` into a model pack saved at ``target`` (replaced atomically).

    Returns:
        ``target``. Raises ``ValueError`` for an empty table.
    """
    if not rows:
        raise ValueError("the concept table is empty")
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=target.parent))
    try:
        csv_path = work / "concepts.csv"
        write_concept_csv(rows, csv_path)
        cdb = CDBMaker(pack_config()).prepare_csvs([str(csv_path)])
        saved = Path(CAT(cdb, config=cdb.config).save_model_pack(
            str(work), pack_name="medbot", make_archive=False, add_hash_to_pack_name=False))
        try:
            os.replace(saved, target)
        except OSError:  # another process built the same pack first: keep theirs
            if not target.exists():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def pack_hash(lexicon_text: str) -> str:
    """12 hex digits of SHA-256 over the table, :data:`PACK_FORMAT` and the medcat version."""
    h = hashlib.sha256(f"{PACK_FORMAT}|{MEDCAT_VERSION}|".encode() + lexicon_text.encode("utf-8"))
    return h.hexdigest()[:12]


def bundled_lexicon_text() -> str:
    """The bundled concept table as text."""
    return resources.files("core.extraction").joinpath("data/lexicon.jsonl").read_text("utf-8")


def ensure_pack(packs_dir: Path, lexicon_text: str, rows: list[dict]) -> Path:
    """The pack of this concept table under ``packs_dir``, built if it is missing.

    Args:
        packs_dir: e.g. ``<data_dir>/medcat``.
        lexicon_text: the table's text (hashed into the folder name).
        rows: the parsed table.
    """
    target = packs_dir / f"lexicon-{pack_hash(lexicon_text)}"
    if not (target / "cdb").exists():
        log.info("building the MedCAT model pack at %s", target)
        build_pack(rows, target)
    return target


def load_pack(path: Path) -> CAT:
    """Load a model pack (a folder or a ``.zip``).

    Raises:
        FileNotFoundError: ``path`` does not exist.
    """
    if not path.exists():
        raise FileNotFoundError(f"MedCAT model pack not found: {path}")
    return CAT.load_model_pack(str(path))
