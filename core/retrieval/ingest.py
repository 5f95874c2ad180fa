"""``medbot ingest``: build an index directory from knowledge files.

Two stages. The BM25 stage reads, chunks, tokenises and indexes everything, then writes
``chunks.jsonl``, ``bm25/`` and ``manifest.json``: from then on the index answers queries.
The dense stage embeds the chunks that have no vector yet, batch by batch, committing each
batch; it can be interrupted at any moment and resumed by running the same command.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import bm25s
from tqdm import tqdm

from core.embedding import Embedder
from core.retrieval import tokenize as tok
from core.retrieval.documents import Chunk, ReadError, chunk_document, read_documents
from core.retrieval.index import FORMAT_VERSION
from core.retrieval.vectors import VectorStore
from core.tokens import count_tokens


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

    @property
    def embedded_total(self) -> int:
        """Chunks with a vector after this run."""
        return self.embedded_before + self.embedded_now

    @property
    def dense_rate(self) -> float:
        """Chunks embedded per second in this run (0 when none)."""
        return self.embedded_now / self.dense_seconds if self.dense_seconds > 0 else 0.0


def build_bm25_stage(paths: Sequence[Path], index_dir: Path, embedder_name: str | None,
                     chunk_tokens: int = 300, overlap_tokens: int = 50,
                     progress: bool = True) -> tuple[list[Chunk], IngestReport]:
    """Read, chunk and BM25-index ``paths`` into ``index_dir`` (replacing its previous content).

    Returns:
        The chunks in index order and a report (documents, chunks, read errors, seconds).
    Raises:
        FileNotFoundError: a path does not exist.
        ValueError: no readable document in any path.
    """
    t0 = time.perf_counter()
    report = IngestReport()
    chunks: list[Chunk] = []
    seen: set[str] = set()
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
            seen.add(doc.doc_id)
            report.documents += 1
            chunks.extend(chunk_document(doc, chunk_tokens, overlap_tokens))
    if not chunks:
        raise ValueError("no readable document in " + ", ".join(map(str, paths)))
    report.chunks = len(chunks)
    corpus_tokens: list[list[str]] = []
    batch = 256
    for i in tqdm(range(0, len(chunks), batch), desc="tokenise", unit="batch",
                  disable=not progress, file=sys.stderr):
        texts = [f"{c.title}\n{c.text}" for c in chunks[i:i + batch]]
        corpus_tokens.extend(toks or [""] for toks in tok.tokenize_many(texts))
    retriever = bm25s.BM25(k1=1.5, b=0.75, method="robertson")
    retriever.index(corpus_tokens, show_progress=False)
    _write_index(index_dir, chunks, retriever, embedder_name, paths)
    report.bm25_seconds = time.perf_counter() - t0
    return chunks, report


def _write_index(index_dir: Path, chunks: list[Chunk], retriever: bm25s.BM25,
                 embedder_name: str | None, paths: Sequence[Path]) -> None:
    index_dir.mkdir(parents=True, exist_ok=True)
    new_bm25 = index_dir / "bm25.new"
    shutil.rmtree(new_bm25, ignore_errors=True)
    retriever.save(str(new_bm25), show_progress=False)
    tmp_chunks = index_dir / "chunks.jsonl.new"
    with tmp_chunks.open("w", encoding="utf-8") as fh:
        for c in chunks:
            fh.write(json.dumps(c.to_json(), ensure_ascii=False) + "\n")
    avg = sum(count_tokens(c.text) for c in chunks[:2000]) / min(len(chunks), 2000)
    manifest = {"format": FORMAT_VERSION, "tokenizer": tok.NAME, "embedder": embedder_name,
                "documents": len({c.doc_id for c in chunks}), "chunks": len(chunks),
                "avg_chunk_tokens": round(avg, 1), "built_at": time.time(),
                "sources": [str(Path(p).resolve()) for p in paths]}
    old_bm25 = index_dir / "bm25"
    if old_bm25.exists():
        shutil.rmtree(index_dir / "bm25.old", ignore_errors=True)
        old_bm25.rename(index_dir / "bm25.old")
    new_bm25.rename(old_bm25)
    os.replace(tmp_chunks, index_dir / "chunks.jsonl")
    tmp_manifest = index_dir / "manifest.json.new"
    tmp_manifest.write_text(json.dumps(manifest, indent=2))
    os.replace(tmp_manifest, index_dir / "manifest.json")
    shutil.rmtree(index_dir / "bm25.old", ignore_errors=True)


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
