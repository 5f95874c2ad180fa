"""``medbot ingest``: build an index directory from knowledge files, and change it later.

Two stages. The BM25 stage reads, chunks, tokenises and indexes everything, then publishes a
new generation (``chunks.jsonl`` + ``bm25/``, see :mod:`core.retrieval.index`) by swapping
``manifest.json``: from then on the index answers queries. The dense stage embeds the chunks
that have no vector yet, batch by batch, committing each batch; it can be interrupted at any
moment and resumed by running the same command. It then embeds every sentence of every chunk
(``sentences.sqlite``, :mod:`core.retrieval.sentences`): the offline generator picks evidence
sentences by meaning with them.

Lifecycle of an existing index (each takes the directory's write lock; readers never wait):

- :func:`add_documents`: new documents (a known id replaces that document); only their chunks
  are embedded, then the new generation is swapped in complete.
- :func:`delete_documents`: drop documents by id; their vectors are pruned from the store.
- :func:`rebuild_index`: build from sources beside the live generation, embed what is missing,
  then swap; a loaded index keeps answering from the old generation until the swap.

Cost: bm25s has no incremental update, so every change re-tokenises and re-indexes all chunks
(seconds for 16k English documents); embeddings, the slow part, are never recomputed for an
unchanged chunk (they are keyed by text hash in ``vectors.sqlite``).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import bm25s
from tqdm import tqdm

from core.language.embedding import Embedder
from core.retrieval.documents import Chunk, ReadError, chunk_document, read_documents
from core.retrieval.screen import record_instruction
from core.retrieval.index import (BM25_TOKENIZER, FORMAT_VERSION, bm25_tokens_many,
                                  check_compatible, generation_dir, read_manifest)
from core.retrieval import sentences as sent
from core.retrieval.vectors import VectorStore
from core.language.tokens import count_tokens

_GEN = re.compile(r"^g(\d{6})(?:\.staging)?$")


class IndexBusyError(RuntimeError):
    """Another process is writing this index (its ``.lock`` is held)."""


@dataclass
class IngestReport:
    """What an ingest did. Times in seconds; rates in chunks per second."""

    documents: int = 0
    chunks: int = 0
    errors: list[ReadError] = field(default_factory=list)
    warnings: list[ReadError] = field(default_factory=list)
    bm25_seconds: float = 0.0
    embedded_before: int = 0
    embedded_now: int = 0
    dense_seconds: float = 0.0
    interrupted: bool = False
    generation: str = ""
    replaced: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    pruned_vectors: int = 0
    sentences_embedded: int = 0
    sentences_before: int = 0
    sentences_seconds: float = 0.0

    @property
    def embedded_total(self) -> int:
        """Chunks with a vector after this run."""
        return self.embedded_before + self.embedded_now

    @property
    def dense_rate(self) -> float:
        """Chunks embedded per second in this run (0 when none)."""
        return self.embedded_now / self.dense_seconds if self.dense_seconds > 0 else 0.0


@contextmanager
def write_lock(index_dir: Path, wait_s: float = 0.0) -> Iterator[None]:
    """Hold ``index_dir/.lock`` (``flock``, released if the process dies), waiting up to
    ``wait_s`` seconds for another writer to finish.

    Raises:
        IndexBusyError: another writer still holds it after ``wait_s``.
    """
    index_dir.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait_s
    with (index_dir / ".lock").open("a") as fh:
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise IndexBusyError(f"another process is writing the index {index_dir}") from None
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def read_chunks(paths: Sequence[Path], report: IngestReport, chunk_tokens: int = 300,
                overlap_tokens: int = 50, progress: bool = True,
                seen: set[str] | None = None) -> list[Chunk]:
    """Read and chunk ``paths``; bad records go to ``report.errors``, and so do records that
    carry an instruction to the assistant or the reader (skipped:
    :func:`core.retrieval.screen.record_instruction`); an id already in ``seen`` (or earlier in
    these files) is kept as ``id~2``, ``id~3``... with a warning.

    Raises:
        FileNotFoundError: a path does not exist.
    """
    seen = set() if seen is None else seen
    chunks: list[Chunk] = []
    for path in paths:
        for doc in tqdm(read_documents(Path(path), report.errors), desc=f"read {Path(path).name}",
                        unit="doc", disable=not progress, file=sys.stderr):
            if doc.doc_id in seen:
                n = 2
                while f"{doc.doc_id}~{n}" in seen:
                    n += 1
                report.warnings.append(ReadError(str(path), doc.line,
                                                 f"duplicate id {doc.doc_id!r} kept as {doc.doc_id}~{n}"))
                doc = doc.with_id(f"{doc.doc_id}~{n}")
            refused = record_instruction(doc.title, doc.text)
            if refused is not None:  # untrusted as a whole (README "Ingesting a corpus")
                report.errors.append(ReadError(str(path), doc.line, refused))
                continue
            seen.add(doc.doc_id)
            report.documents += 1
            chunks.extend(chunk_document(doc, chunk_tokens, overlap_tokens))
    return chunks


def bm25_for(chunks: Sequence[Chunk], progress: bool = True) -> bm25s.BM25:
    """A bm25s Okapi index (k1 1.5, b 0.75, Robertson IDF; SPEC.md §7) over ``title + text``
    of each chunk, tokenised by :func:`core.retrieval.index.bm25_tokens_many`."""
    corpus_tokens: list[list[str]] = []
    batch = 256
    for i in tqdm(range(0, len(chunks), batch), desc="tokenise", unit="batch",
                  disable=not progress, file=sys.stderr):
        texts = [f"{c.title}\n{c.text}" for c in chunks[i:i + batch]]
        corpus_tokens.extend(toks or [""] for toks in bm25_tokens_many(texts))
    retriever = bm25s.BM25(k1=1.5, b=0.75, method="robertson")
    retriever.index(corpus_tokens, show_progress=False)
    return retriever


def build_bm25_stage(paths: Sequence[Path], index_dir: Path, embedder_name: str | None,
                     chunk_tokens: int = 300, overlap_tokens: int = 50,
                     progress: bool = True) -> tuple[list[Chunk], IngestReport]:
    """Read, chunk and BM25-index ``paths`` into ``index_dir``, replacing its previous content
    at once (a new generation swapped in; readers of the old one are not disturbed).

    Returns:
        The chunks in index order and a report (documents, chunks, read errors, seconds).
    Raises:
        FileNotFoundError: a path does not exist.
        ValueError: no readable document in any path.
        IndexBusyError: another writer holds the index.
    """
    t0 = time.perf_counter()
    report = IngestReport()
    chunks = read_chunks(paths, report, chunk_tokens, overlap_tokens, progress)
    if not chunks:
        raise ValueError("no readable document in " + ", ".join(map(str, paths)))
    report.chunks = len(chunks)
    retriever = bm25_for(chunks, progress)
    with write_lock(Path(index_dir), wait_s=600.0):
        gen = stage_generation(Path(index_dir), chunks, retriever)
        report.generation = gen
        publish(Path(index_dir), gen, chunks, embedder_name, [str(Path(p).resolve()) for p in paths])
    report.bm25_seconds = time.perf_counter() - t0
    return chunks, report


def _generations(index_dir: Path) -> list[tuple[int, str]]:
    out = []
    for p in index_dir.iterdir() if index_dir.exists() else []:
        m = _GEN.match(p.name)
        if m and p.is_dir():
            out.append((int(m.group(1)), p.name))
    return sorted(out)


def stage_generation(index_dir: Path, chunks: Sequence[Chunk], retriever: bm25s.BM25) -> str:
    """Write ``chunks.jsonl`` and ``bm25/`` as the next generation (not yet live); call under
    :func:`write_lock`. Returns its name (``g000001``, ``g000002``...)."""
    index_dir.mkdir(parents=True, exist_ok=True)
    for _, name in _generations(index_dir):
        if name.endswith(".staging"):  # left by a crashed writer
            shutil.rmtree(index_dir / name, ignore_errors=True)
    gens = _generations(index_dir)
    name = f"g{(gens[-1][0] if gens else 0) + 1:06d}"
    staging = index_dir / f"{name}.staging"
    staging.mkdir()
    retriever.save(str(staging / "bm25"), show_progress=False)
    with (staging / "chunks.jsonl").open("w", encoding="utf-8") as fh:
        for c in chunks:
            fh.write(json.dumps(c.to_json(), ensure_ascii=False) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    staging.rename(index_dir / name)
    return name


def publish(index_dir: Path, gen: str, chunks: Sequence[Chunk], embedder_name: str | None,
            sources: list[str], extra: dict | None = None) -> dict:
    """Make generation ``gen`` live by atomically replacing ``manifest.json``, then remove
    generations older than the one it replaces (and a format-1 index's flat files). Call under
    :func:`write_lock`. ``extra``: more manifest keys (the bundled index's version stamps).
    Returns the new manifest."""
    try:
        previous = read_manifest(index_dir).get("generation", "")
    except FileNotFoundError:
        previous = None
    sample = chunks[:2000]
    manifest = {"format": FORMAT_VERSION, "generation": gen, "previous": previous,
                "tokenizer": BM25_TOKENIZER, "embedder": embedder_name,
                "documents": len({c.doc_id for c in chunks}), "chunks": len(chunks),
                "avg_chunk_tokens": round(sum(count_tokens(c.text) for c in sample) / max(len(sample), 1), 1),
                "built_at": time.time(), "sources": sources,
                "sentence_splitter": sent.SPLITTER, **(extra or {})}
    tmp = index_dir / "manifest.json.new"
    with tmp.open("w") as fh:
        fh.write(json.dumps(manifest, indent=2))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, index_dir / "manifest.json")
    keep = {gen, previous}
    for _, name in _generations(index_dir):
        if name not in keep and not name.endswith(".staging"):
            shutil.rmtree(index_dir / name, ignore_errors=True)
    if previous:  # the generation before was format 2: the flat format-1 files are unused
        shutil.rmtree(index_dir / "bm25", ignore_errors=True)
        (index_dir / "chunks.jsonl").unlink(missing_ok=True)
    return manifest


def live_chunks(index_dir: Path) -> tuple[dict, list[Chunk]]:
    """The live generation's manifest and chunks (as :class:`Chunk`, in index order).

    Raises:
        IndexNotFoundError: no index there.
    """
    manifest = read_manifest(index_dir)
    chunks = []
    with (generation_dir(index_dir, manifest) / "chunks.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            c = json.loads(line)
            chunks.append(Chunk(c["chunk_id"], c["doc_id"], c["title"], c["text"], c["source"],
                                c["url"], c["lang"], c.get("meta") or {}))
    return manifest, chunks


def add_documents(paths: Sequence[Path], index_dir: Path, embedder: Embedder | None,
                  chunk_tokens: int = 300, overlap_tokens: int = 50, batch_size: int = 16,
                  progress: bool = True) -> IngestReport:
    """Add the documents of ``paths`` to an existing index without re-embedding the others.

    A document whose id is already in the index replaces it (``report.replaced``). The new
    chunks are embedded first (resumable, as :func:`embed_missing`), then the new generation
    is swapped in, so readers see the new documents complete or not at all. If embedding is
    interrupted nothing is swapped; rerun to finish (the vectors made so far are kept).
    Raises:
        IndexNotFoundError: no index there (use :func:`build_bm25_stage`).
        IndexMismatchError: the index was embedded by another embedder than ``embedder``.
        IndexBusyError: another writer holds the index.
    """
    t0 = time.perf_counter()
    report = IngestReport()
    index_dir = Path(index_dir)
    with write_lock(index_dir):
        manifest, old = live_chunks(index_dir)
        check_compatible({**manifest, "tokenizer": BM25_TOKENIZER}, embedder.name if embedder else None,
                         index_dir)
        new = read_chunks(paths, report, chunk_tokens, overlap_tokens, progress)
        new_ids = {c.doc_id for c in new}
        report.replaced = sorted(new_ids & {c.doc_id for c in old})
        chunks = [c for c in old if c.doc_id not in new_ids] + new
        report.chunks = len(chunks)
        gen = stage_generation(index_dir, chunks, bm25_for(chunks, progress))
        report.bm25_seconds = time.perf_counter() - t0
        name = embedder.name if embedder else manifest.get("embedder")
        if embedder is not None:
            embed_missing(new, index_dir, embedder, report, batch_size, progress=progress)
            if not report.interrupted:
                embed_chunk_sentences(new, index_dir, embedder, report, progress=progress)
            if report.interrupted:
                return report
        report.generation = gen
        publish(index_dir, gen, chunks, name, manifest.get("sources", []) +
                [str(Path(p).resolve()) for p in paths])
    return report


def delete_documents(index_dir: Path, doc_ids: Sequence[str], progress: bool = True
                     ) -> IngestReport:
    """Remove documents (all their chunks) by id and prune their vectors from the store.

    Unknown ids are listed in ``report.missing``; nothing is swapped when none was found.
    A vector still used by a remaining chunk (same text) is kept.
    Raises:
        IndexNotFoundError, IndexBusyError: as :func:`add_documents`.
        ValueError: every document would be deleted (an index needs one; delete the directory).
    """
    t0 = time.perf_counter()
    report = IngestReport()
    index_dir = Path(index_dir)
    with write_lock(index_dir):
        manifest, old = live_chunks(index_dir)
        present = {c.doc_id for c in old}
        wanted = set(doc_ids)
        report.deleted = sorted(wanted & present)
        report.missing = sorted(wanted - present)
        if not report.deleted:
            return report
        chunks = [c for c in old if c.doc_id not in wanted]
        if not chunks:
            raise ValueError("deleting every document would leave an empty index")
        report.chunks, report.documents = len(chunks), len(present) - len(report.deleted)
        gen = stage_generation(index_dir, chunks, bm25_for(chunks, progress))
        report.generation = gen
        publish(index_dir, gen, chunks, manifest.get("embedder"), manifest.get("sources", []))
        if (index_dir / "vectors.sqlite").exists():
            store = VectorStore(index_dir / "vectors.sqlite")
            try:
                report.pruned_vectors = store.prune({c.hash for c in chunks})
            finally:
                store.close()
        if (index_dir / sent.FILE).exists():  # a deleted document's sentences go too
            store = VectorStore(index_dir / sent.FILE)
            try:
                report.pruned_vectors += store.prune(set(sent.distinct_sentences(c.text for c in chunks)))
            finally:
                store.close()
    report.bm25_seconds = time.perf_counter() - t0
    return report


def rebuild_index(paths: Sequence[Path], index_dir: Path, embedder: Embedder | None,
                  chunk_tokens: int = 300, overlap_tokens: int = 50, batch_size: int = 16,
                  progress: bool = True, extra: dict | None = None) -> IngestReport:
    """Rebuild ``index_dir`` from ``paths`` beside the live generation and swap it in only
    when complete (BM25 and every vector), so a running service answers from the old index
    until then. Unchanged chunks reuse their stored vectors. The embedder may differ from the
    old index's (the new manifest records it). If embedding is interrupted nothing is swapped
    (``report.interrupted``); rerun to continue. ``extra``: more manifest keys (see :func:`publish`).
    Raises:
        FileNotFoundError, ValueError, IndexBusyError: as :func:`build_bm25_stage`.
    """
    t0 = time.perf_counter()
    report = IngestReport()
    index_dir = Path(index_dir)
    chunks = read_chunks(paths, report, chunk_tokens, overlap_tokens, progress)
    if not chunks:
        raise ValueError("no readable document in " + ", ".join(map(str, paths)))
    report.chunks = len(chunks)
    with write_lock(index_dir):
        gen = stage_generation(index_dir, chunks, bm25_for(chunks, progress))
        report.bm25_seconds = time.perf_counter() - t0
        if embedder is not None:
            embed_missing(chunks, index_dir, embedder, report, batch_size, progress=progress)
            if not report.interrupted:
                embed_chunk_sentences(chunks, index_dir, embedder, report, progress=progress)
            if report.interrupted:
                return report
        report.generation = gen
        publish(index_dir, gen, chunks, embedder.name if embedder else None,
                [str(Path(p).resolve()) for p in paths], extra)
    return report


def embed_missing(chunks: Sequence[Chunk], index_dir: Path, embedder: Embedder,
                  report: IngestReport, batch_size: int = 16, max_chunks: int | None = None,
                  progress: bool = True, on_batch: Callable[[int], None] | None = None) -> None:
    """Embed the chunks that have no vector yet, committing each batch.

    Args:
        max_chunks: stop after this many new embeddings (``None``: all).
        on_batch: called with the running count after each committed batch.
    A ``KeyboardInterrupt`` stops after the last committed batch and sets
    ``report.interrupted``; nothing committed is lost.
    """
    store = VectorStore(index_dir / "vectors.sqlite")
    try:
        have = store.hashes(embedder.name)
        todo: list[Chunk] = []
        queued: set[str] = set()
        for c in chunks:
            if c.hash not in have and c.hash not in queued:
                todo.append(c)
                queued.add(c.hash)
        report.embedded_before = len({c.hash for c in chunks} & have)
        if max_chunks is not None:
            todo = todo[:max_chunks]
        t0 = time.perf_counter()
        bar = tqdm(total=len(todo), desc="embed (dense)", unit="chunk", disable=not progress,
                   file=sys.stderr, smoothing=0.1)
        try:
            for i in range(0, len(todo), batch_size):
                batch = todo[i:i + batch_size]
                vecs = embedder.embed_passages([f"{c.title}\n{c.text}" for c in batch])
                store.put_many(embedder.name, [c.hash for c in batch], vecs)
                report.embedded_now += len(batch)
                bar.update(len(batch))
                if on_batch:
                    on_batch(report.embedded_now)
        except KeyboardInterrupt:
            report.interrupted = True
        finally:
            bar.close()
            report.dense_seconds = time.perf_counter() - t0
    finally:
        store.close()


def embed_chunk_sentences(chunks: Sequence[Chunk], index_dir: Path, embedder: Embedder,
                          report: IngestReport, batch_size: int = 64, progress: bool = True) -> None:
    """Embed every sentence of ``chunks`` that has no vector yet (the offline generator's
    sentence selection, :mod:`core.retrieval.sentences`), committing each batch.

    Fills ``report.sentences_embedded`` / ``sentences_before`` / ``sentences_seconds``; a
    ``KeyboardInterrupt`` stops after the last committed batch and sets ``report.interrupted``.
    """
    t0 = time.perf_counter()
    try:
        now, before, _ = sent.embed_sentences([c.text for c in chunks], Path(index_dir), embedder,
                                              batch_size, progress)
        report.sentences_embedded, report.sentences_before = now, before
    except KeyboardInterrupt:
        report.interrupted = True
    report.sentences_seconds = time.perf_counter() - t0
