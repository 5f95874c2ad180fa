"""Load the concept recognizer once per process (an explicitly cached resource)."""

from __future__ import annotations

import logging
import time
from functools import lru_cache
from pathlib import Path

from core.extraction.lexicon import Lexicon

log = logging.getLogger(__name__)


@lru_cache(maxsize=4)
def _load(pack: Path):
    from core.extraction.medcat_pack import load_pack
    from core.extraction.recognizer import MedCATRecognizer

    t0 = time.perf_counter()
    recognizer = MedCATRecognizer(load_pack(pack))
    log.info("MedCAT pack %s loaded in %.2f s", pack, time.perf_counter() - t0)
    return recognizer


def medcat_recognizer(lexicon: Lexicon, packs_dir: Path, model_pack: Path | None = None):
    """The MedCAT recognizer: an operator's pack (``MEDCAT_MODEL_PACK``) or the pack of the
    concept table, built under ``packs_dir`` on first use (about 0.5 s) and cached per process.

    Returns:
        :class:`core.extraction.recognizer.MedCATRecognizer`.
    Raises:
        FileNotFoundError: ``model_pack`` does not exist.
    """
    if model_pack is not None:
        return _load(Path(model_pack).resolve())
    from core.extraction.medcat_pack import bundled_lexicon_text, ensure_pack

    text = lexicon.text or bundled_lexicon_text()
    return _load(ensure_pack(Path(packs_dir), text, lexicon.rows).resolve())
