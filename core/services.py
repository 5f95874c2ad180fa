"""The resources the graph's nodes share, built once per process (SPEC.md §4)."""

from __future__ import annotations

import functools
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from config.settings import Settings
from core.privacy.audit import audit_key, subject_hash
from core.cache.response_cache import ResponseCache
from core.language.embedding import E5Embedder, Embedder, OpenAIEmbedder
from core.extraction import Extractor
from core.extraction.lexicon import load_lexicon
from core.extraction.loader import medcat_recognizer
from core.knowledge import ensure_default_index
from core.llm.client import ChatClient, make_openai_client
from core.retrieval.index import HybridIndex
from storage.db import make_engine
from storage.repositories import Repository

log = logging.getLogger(__name__)


def make_embedder(settings: Settings, client=None) -> Embedder:
    """The configured embedder: OpenAI-compatible when ``EMBEDDING_BACKEND=openai``, else the
    bundled multilingual-e5-small."""
    if settings.embedding_backend == "openai":
        return OpenAIEmbedder(client or make_openai_client(settings), settings.embedding_model)
    return E5Embedder(settings.embed_threads, settings.embed_query_max_tokens)


def make_extractor(settings: Settings) -> Extractor:
    """The slot extractor over the configured concept table and MedCAT pack (SPEC.md §3.1).

    Raises:
        FileNotFoundError: ``MEDCAT_MODEL_PACK`` or ``MEDBOT_LEXICON`` names a missing file.
    """
    lexicon = load_lexicon(str(settings.lexicon_path) if settings.lexicon_path else None)
    recognizer = medcat_recognizer(lexicon, settings.resolved_medcat_packs_dir,
                                   settings.medcat_model_pack)
    return Extractor(lexicon, recognizer)


@dataclass
class Services:
    """Shared resources. ``index`` is loaded on first use; ``llm`` is ``None`` offline.

    Attributes:
        index_dir: the knowledge index searched by ``retrieve``.
        default_index: True when ``index_dir`` is the bundled corpus's (built if missing).
    """

    settings: Settings
    repo: Repository
    extractor: Extractor
    embedder: Embedder
    cache: ResponseCache
    llm: ChatClient | None
    index_dir: Path
    default_index: bool
    _index: HybridIndex | None = field(default=None, repr=False)
    _index_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _type_vecs: dict[tuple[str, str], np.ndarray | None] = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, settings: Settings, index_dir: Path | None = None) -> "Services":
        """Create every shared resource from settings.

        Args:
            index_dir: overrides ``MEDBOT_INDEX_DIR`` (e.g. ``medbot ask --index``).
        Raises:
            sqlalchemy.exc.OperationalError: the database is unreachable.
            ValueError / OSError: the audit key is too short or cannot be read or made.
        """
        key = audit_key(settings)  # erasure tombstones are keyed by the audit pseudonym
        repo = Repository(make_engine(settings.resolved_database_url),
                          pseudonym=functools.partial(subject_hash, key=key))
        client = make_openai_client(settings) if (settings.llm_configured
                                                  or settings.embedding_backend == "openai") else None
        embedder = make_embedder(settings, client)
        llm = ChatClient(client, settings.llm_model) if settings.llm_configured and client else None
        chosen = index_dir or settings.index_dir
        return cls(settings=settings, repo=repo, extractor=make_extractor(settings), embedder=embedder,
                   cache=ResponseCache(repo, embedder.name, embedder.dim), llm=llm,
                   index_dir=Path(chosen or settings.resolved_index_dir),
                   default_index=chosen is None)

    def warm_up(self) -> None:
        """Load what the first turn would otherwise wait for: the knowledge index (installing
        the shipped one on first run), Kiwi's model, the vocabulary the cache's ownership rule
        reads (:mod:`core.privacy.vocabulary`) and the embedder's first call. The service calls
        this at start (Kiwi's load took 2.5 s idle, 17 s on a busy machine)."""
        from core.privacy.vocabulary import team_vocabulary
        from core.retrieval import tokenize

        if self.default_index:  # a rebuild (rare: the shipped index does not match) shows progress here,
            ensure_default_index(self.index_dir, self.embedder, progress=True)  # not in the chat
        self.index()
        tokenize.load()
        team_vocabulary()
        self.embedder.embed_query("warm-up")
        _trim_heap()


    def checker(self):  # noqa: ANN201 (core.verification.OfflineChecker: imported lazily)
        """The offline faithfulness checker over this process's embedder and the index's stored
        sentence vectors (cheap to build: its calibration is loaded once per process)."""
        from core.verification.offline import OfflineChecker

        return OfflineChecker(self.embedder, lookup=self.index().sentence_vectors)

    def qtype_vector(self, label: str | None, lang: str) -> np.ndarray | None:
        """The e5 query vector of the question type's prototype
        (:data:`core.answer.evidence.TYPE_PROTOTYPES`), embedded once per process; ``None`` for a type
        without one or when the embedder fails."""
        from core.answer.evidence import TYPE_PROTOTYPES

        key = (label or "", lang if lang in ("ko", "en") else "en")
        if key not in self._type_vecs:
            text = TYPE_PROTOTYPES.get(key[0], {}).get(key[1])
            try:
                self._type_vecs[key] = self.embedder.embed_query(text) if text else None
            except Exception as exc:  # ranking only: never cost the user the answer
                log.warning("question-type vector failed: %s", exc)
                return None
        return self._type_vecs[key]

    @property
    def index_loaded(self) -> bool:
        """True once :meth:`index` has loaded the knowledge index (readiness)."""
        return self._index is not None

    def index(self) -> HybridIndex:
        """The knowledge index, loaded once (building the bundled one on first run).

        Raises:
            IndexNotFoundError: an explicitly chosen index directory does not exist.
            IndexMismatchError: it was made with another embedder or tokenizer.
        """
        with self._index_lock:
            if self._index is None:
                if self.default_index:
                    ensure_default_index(self.index_dir, self.embedder, progress=False)
                self._index = HybridIndex(self.index_dir, self.embedder)
            else:
                self._index.refresh_dense()
            return self._index


def _trim_heap() -> None:
    """Give the heap pages freed while loading the models back to the OS (glibc
    ``malloc_trim``; about 15 MB of RSS here). A no-op where glibc is absent."""
    import ctypes
    import ctypes.util
    import gc

    gc.collect()
    try:
        ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
