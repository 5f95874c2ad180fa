"""Index lifecycle: add without re-embedding, delete, atomic rebuild/swap under a live reader,
refusing another embedder or tokenizer, format-1 indexes, one writer at a time.

The embedder here is a deterministic fake (a vector from the text's hash), so a query equal to
a chunk's ``title\\ntext`` finds it by cosine 1.0 and every call can be counted; the real e5
model is exercised by tests/test_retrieval.py and tests/test_ingest.py.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from core.retrieval import ingest
from core.retrieval.index import HybridIndex, IndexMismatchError, read_manifest
from core.retrieval.ingest import (IndexBusyError, add_documents, build_bm25_stage,
                                   delete_documents, embed_missing, rebuild_index, write_lock)
from core.retrieval.search import FusionConfig, hybrid_search
from core.retrieval.vectors import VectorStore

DIM = 16


class FakeEmbedder:
    """Hash vectors; counts passages embedded; optional hook called before each batch."""

    def __init__(self, name: str = "fake-embedder/v1", hook=None) -> None:
        self.name, self.dim, self.hook = name, DIM, hook
        self.passages = 0
        self.chunk_passages = 0  # a chunk is embedded as "title\ntext"; a sentence has no line break
        self.calls = 0

    @staticmethod
    def vector(text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha1(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
        return v / np.linalg.norm(v)

    def embed_query(self, text: str) -> np.ndarray:
        return self.vector(text)

    def embed_passages(self, texts):
        if self.hook:
            self.hook(self.calls)
        self.calls += 1
        self.passages += len(texts)
        self.chunk_passages += sum("\n" in t for t in texts)
        return np.stack([self.vector(t) for t in texts]) if texts else np.zeros((0, DIM), np.float32)


def doc(i: int, topic: str) -> dict:
    return {"id": f"d{i}", "title": f"{topic} {i}", "text": f"All about {topic} number {i}."}


V1 = [doc(i, "gout") for i in range(6)]
V2 = [doc(i, "asthma") for i in range(10, 15)]


def write(path: Path, docs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    return path


def build(tmp_path: Path, docs: list[dict], emb: FakeEmbedder) -> Path:
    index_dir = tmp_path / "index"
    chunks, report = build_bm25_stage([write(tmp_path / "v1.jsonl", docs)], index_dir, emb.name,
                                      progress=False)
    embed_missing(chunks, index_dir, emb, report, progress=False)
    return index_dir


def doc_ids(index: HybridIndex) -> set[str]:
    return {c["doc_id"] for c in index.chunks}


def dense_top(index: HybridIndex, d: dict) -> str | None:
    vec = FakeEmbedder.vector(f"{d['title']}\n{d['text']}")
    docs, _ = hybrid_search(index, "", vec, 1, mode="dense")
    return docs[0].doc_id if docs else None


# ------------------------------------------------------------------------------------- add

def test_add_embeds_only_the_new_documents(tmp_path):
    first = FakeEmbedder()
    index_dir = build(tmp_path, V1, first)
    assert first.passages == len(V1)
    before = VectorStore(index_dir / "vectors.sqlite").hashes(first.name)

    counting = FakeEmbedder()
    report = add_documents([write(tmp_path / "new.jsonl", V2)], index_dir, counting, progress=False)
    assert counting.chunk_passages == len(V2)           # the old chunks were not re-embedded
    assert counting.passages == 2 * len(V2)               # and each new chunk's one sentence
    assert report.embedded_before == 0 and report.embedded_now == len(V2)
    assert report.replaced == [] and report.generation
    idx = HybridIndex(index_dir, counting)
    assert doc_ids(idx) == {d["id"] for d in V1 + V2}
    assert idx.dense_coverage == (len(V1) + len(V2),) * 2
    assert before <= VectorStore(index_dir / "vectors.sqlite").hashes(first.name)
    assert dense_top(idx, V2[0]) == "d10" and dense_top(idx, V1[0]) == "d0"
    docs, _ = hybrid_search(idx, "asthma", None, 3, mode="bm25")
    assert docs and docs[0].doc_id.startswith("d1")
    assert read_manifest(index_dir)["documents"] == len(V1) + len(V2)


def test_add_with_a_known_id_replaces_that_document(tmp_path):
    index_dir = build(tmp_path, V1, FakeEmbedder())
    changed = {"id": "d2", "title": "gout 2", "text": "Colchicine treats a gout flare."}
    counting = FakeEmbedder()
    report = add_documents([write(tmp_path / "upd.jsonl", [changed])], index_dir, counting,
                           progress=False)
    assert report.replaced == ["d2"] and counting.chunk_passages == 1 and counting.passages == 2
    idx = HybridIndex(index_dir, counting)
    assert [c["text"] for c in idx.chunks if c["doc_id"] == "d2"] == [changed["text"]]
    assert len(idx.chunks) == len(V1)
    docs, _ = hybrid_search(idx, "colchicine", None, 1, mode="bm25")
    assert docs[0].doc_id == "d2"


def test_adding_again_embeds_nothing(tmp_path):
    index_dir = build(tmp_path, V1, FakeEmbedder())
    src = write(tmp_path / "new.jsonl", V2)
    add_documents([src], index_dir, FakeEmbedder(), progress=False)
    again = FakeEmbedder()
    report = add_documents([src], index_dir, again, progress=False)
    assert again.passages == 0 and sorted(report.replaced) == [d["id"] for d in V2]


# ---------------------------------------------------------------------------------- delete

def test_delete_removes_documents_and_their_vectors(tmp_path):
    emb = FakeEmbedder()
    index_dir = build(tmp_path, V1, emb)
    live = HybridIndex(index_dir, emb)
    report = delete_documents(index_dir, ["d1", "d3", "nope"], progress=False)
    assert report.deleted == ["d1", "d3"] and report.missing == ["nope"]
    assert report.pruned_vectors == 2
    idx = HybridIndex(index_dir, emb)
    assert doc_ids(idx) == {"d0", "d2", "d4", "d5"}
    assert dense_top(idx, V1[1]) != "d1"
    docs, _ = hybrid_search(idx, "gout 1", None, 10, mode="bm25")
    assert "d1" not in {d.doc_id for d in docs}
    assert len(VectorStore(index_dir / "vectors.sqlite").hashes(emb.name)) == 4
    # the running index follows on its next refresh
    assert "d1" in doc_ids(live)
    live.refresh_dense(force=True)
    assert doc_ids(live) == {"d0", "d2", "d4", "d5"} and live.dense_coverage == (4, 4)


def test_delete_unknown_ids_changes_nothing_and_all_is_refused(tmp_path):
    index_dir = build(tmp_path, V1, FakeEmbedder())
    gen = read_manifest(index_dir)["generation"]
    report = delete_documents(index_dir, ["zzz"], progress=False)
    assert report.deleted == [] and report.missing == ["zzz"]
    assert read_manifest(index_dir)["generation"] == gen
    with pytest.raises(ValueError):
        delete_documents(index_dir, [d["id"] for d in V1], progress=False)
    assert read_manifest(index_dir)["generation"] == gen


# -------------------------------------------------------------------- rebuild and the swap

def test_rebuild_swaps_atomically_while_a_reader_keeps_answering(tmp_path):
    emb = FakeEmbedder()
    index_dir = build(tmp_path, V1, emb)
    live = HybridIndex(index_dir, emb)
    old_gen = live.manifest["generation"]
    seen: list[tuple[str, frozenset[str]]] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def reader() -> None:
        q = "gout asthma"
        vec = FakeEmbedder.vector(q)
        while not stop.is_set():
            try:
                live.refresh_dense(every_s=0.0)
                before = live.manifest["generation"]
                docs, _ = hybrid_search(live, q, vec, 20, mode="hybrid")
                assert docs, "the reader got no answer"
                if live.manifest["generation"] == before:  # else it switched mid-query
                    seen.append((before, frozenset(d.doc_id for d in docs)))
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
                return
            time.sleep(0.005)

    mid_rebuild: dict[str, object] = {}

    def during_embedding(call: int) -> None:
        if call == 0:  # the new generation is staged, not live: everyone still sees v1
            time.sleep(0.2)
            mid_rebuild["fresh_loader_docs"] = doc_ids(HybridIndex(index_dir, emb))
            mid_rebuild["reader_answers"] = len(seen)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        time.sleep(0.1)
        slow = FakeEmbedder(hook=during_embedding)
        report = rebuild_index([write(tmp_path / "v2.jsonl", V2)], index_dir, slow,
                               batch_size=2, progress=False)
        deadline = time.monotonic() + 10
        while live.manifest["generation"] == old_gen and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.05)
    finally:
        stop.set()
        thread.join()
    assert not errors, errors
    assert mid_rebuild["fresh_loader_docs"] == {d["id"] for d in V1}
    assert mid_rebuild["reader_answers"] > 0
    assert slow.chunk_passages == len(V2)
    new_gen = report.generation
    assert live.manifest["generation"] == new_gen != old_gen
    v1, v2 = frozenset(d["id"] for d in V1), frozenset(d["id"] for d in V2)
    gens = [g for g, _ in seen]
    assert gens[0] == old_gen and gens[-1] == new_gen
    assert gens == sorted(gens)                      # never back to the old generation
    for gen, ids in seen:                           # every answer comes from one generation
        assert ids <= (v1 if gen == old_gen else v2)
    assert live.dense_coverage == (len(V2), len(V2))


def test_interrupted_rebuild_swaps_nothing_and_resumes(tmp_path):
    emb = FakeEmbedder()
    index_dir = build(tmp_path, V1, emb)
    gen = read_manifest(index_dir)["generation"]

    def interrupt(call: int) -> None:
        if call == 1:
            raise KeyboardInterrupt

    src = write(tmp_path / "v2.jsonl", V2)
    first = FakeEmbedder(hook=interrupt)
    report = rebuild_index([src], index_dir, first, batch_size=2, progress=False)
    assert report.interrupted and first.passages == 2
    assert read_manifest(index_dir)["generation"] == gen
    assert doc_ids(HybridIndex(index_dir, emb)) == {d["id"] for d in V1}
    resume = FakeEmbedder()
    report = rebuild_index([src], index_dir, resume, batch_size=2, progress=False)
    assert not report.interrupted and resume.chunk_passages == len(V2) - 2
    assert doc_ids(HybridIndex(index_dir, emb)) == {d["id"] for d in V2}
    gens = sorted(p.name for p in index_dir.iterdir() if p.name.startswith("g"))
    assert gens == [gen, report.generation]          # the old one kept, the orphan removed


# ------------------------------------------------------------------ embedder and tokenizer

def test_refuses_another_embedder_and_tokenizer(tmp_path):
    emb = FakeEmbedder()
    index_dir = build(tmp_path, V1, emb)
    other = FakeEmbedder("another-model/v3")
    with pytest.raises(IndexMismatchError, match="another-model/v3"):
        HybridIndex(index_dir, other)
    with pytest.raises(IndexMismatchError):
        add_documents([write(tmp_path / "new.jsonl", V2)], index_dir, other, progress=False)
    assert HybridIndex(index_dir, None).manifest["embedder"] == emb.name  # BM25-only loads

    manifest = read_manifest(index_dir)
    (index_dir / "manifest.json").write_text(json.dumps({**manifest, "tokenizer": "whitespace/v0"}))
    with pytest.raises(IndexMismatchError, match="whitespace/v0"):
        HybridIndex(index_dir, emb)
    with pytest.raises(IndexMismatchError):
        HybridIndex(index_dir, None)


def test_live_index_keeps_serving_when_a_rebuild_uses_another_embedder(tmp_path):
    emb = FakeEmbedder()
    index_dir = build(tmp_path, V1, emb)
    live = HybridIndex(index_dir, emb)
    rebuild_index([write(tmp_path / "v2.jsonl", V2)], index_dir, FakeEmbedder("another/v2"),
                  progress=False)
    live.refresh_dense(force=True)
    assert isinstance(live.reload_error, IndexMismatchError)
    assert doc_ids(live) == {d["id"] for d in V1}
    docs, _ = hybrid_search(live, "gout 3", None, 3, mode="bm25")
    assert docs and docs[0].doc_id == "d3"


# ------------------------------------------------------------------------- format, writers

def test_format_1_index_loads_and_is_upgraded_by_a_change(tmp_path):
    emb = FakeEmbedder()
    index_dir = build(tmp_path, V1, emb)
    gen = read_manifest(index_dir)["generation"]
    # turn it into the flat format-1 layout that earlier versions wrote
    shutil.move(str(index_dir / gen / "bm25"), str(index_dir / "bm25"))
    shutil.move(str(index_dir / gen / "chunks.jsonl"), str(index_dir / "chunks.jsonl"))
    shutil.rmtree(index_dir / gen)
    m = read_manifest(index_dir)
    for key in ("generation", "previous"):
        m.pop(key)
    (index_dir / "manifest.json").write_text(json.dumps({**m, "format": 1}))
    assert doc_ids(HybridIndex(index_dir, emb)) == {d["id"] for d in V1}

    counting = FakeEmbedder()
    add_documents([write(tmp_path / "new.jsonl", V2)], index_dir, counting, progress=False)
    assert counting.chunk_passages == len(V2)
    assert (index_dir / "chunks.jsonl").exists()    # kept while it is the previous version
    delete_documents(index_dir, ["d0"], progress=False)
    assert not (index_dir / "chunks.jsonl").exists() and not (index_dir / "bm25").exists()
    assert len(doc_ids(HybridIndex(index_dir, emb))) == len(V1) + len(V2) - 1


def test_one_writer_at_a_time(tmp_path):
    index_dir = build(tmp_path, V1, FakeEmbedder())
    with write_lock(index_dir):
        with pytest.raises(IndexBusyError):
            delete_documents(index_dir, ["d0"], progress=False)
        with pytest.raises(IndexBusyError):
            with write_lock(index_dir, wait_s=0.3):
                pass
    assert delete_documents(index_dir, ["d0"], progress=False).deleted == ["d0"]


def test_a_crashed_staging_directory_is_ignored_and_cleaned(tmp_path):
    emb = FakeEmbedder()
    index_dir = build(tmp_path, V1, emb)
    (index_dir / "g000099.staging").mkdir()
    assert doc_ids(HybridIndex(index_dir, emb)) == {d["id"] for d in V1}
    delete_documents(index_dir, ["d0"], progress=False)
    assert not (index_dir / "g000099.staging").exists()


def test_convex_fusion_uses_exact_scores_of_both_sides(tmp_path):
    emb = FakeEmbedder()
    index_dir = build(tmp_path, V1 + V2, emb)
    idx = HybridIndex(index_dir, emb)
    target = V2[2]
    vec = FakeEmbedder.vector(f"{target['title']}\n{target['text']}")
    cfg = FusionConfig(fusion="convex", alpha=1.0, depth_bm25=3, depth_dense=1)
    docs, trace = hybrid_search(idx, "gout 3", vec, 3, mode="hybrid", config=cfg)
    assert trace["fusion"].startswith("convex") and docs[0].doc_id == target["id"]
    assert docs[0].score == pytest.approx(1.0)  # alpha 1: the min-max normalised cosine
    cfg0 = FusionConfig(fusion="convex", alpha=0.0, depth_bm25=3, depth_dense=1)
    docs0, _ = hybrid_search(idx, "gout 3", vec, 3, mode="hybrid", config=cfg0)
    assert docs0[0].doc_id == "d3" and docs0[0].score == pytest.approx(1.0)


def test_ingest_module_keeps_its_public_names():
    for name in ("build_bm25_stage", "embed_missing", "IngestReport", "add_documents",
                 "delete_documents", "rebuild_index"):
        assert hasattr(ingest, name)


def test_ingest_entry_points_rebuild_add_and_delete(tmp_path, capsys):
    from bot.ingest import run_add, run_delete, run_ingest

    index_dir = tmp_path / "index"
    assert run_ingest([write(tmp_path / "v1.jsonl", V1)], index_dir, True, 16) == 0
    first = read_manifest(index_dir)["generation"]
    live = HybridIndex(index_dir, None)
    assert run_ingest([write(tmp_path / "v2.jsonl", V2)], index_dir, True, 16) == 0
    assert "rebuilding beside it" in capsys.readouterr().err
    assert read_manifest(index_dir)["generation"] != first
    assert doc_ids(live) == {d["id"] for d in V1}            # until it follows the swap
    live.refresh_dense(force=True)
    assert doc_ids(live) == {d["id"] for d in V2}
    assert run_add([write(tmp_path / "more.jsonl", V1[:2])], index_dir, bm25_only=True) == 0
    assert doc_ids(HybridIndex(index_dir, None)) == {d["id"] for d in V2 + V1[:2]}
    assert run_delete(["d0", "nope"], index_dir) == 0
    assert "not in the index: nope" in capsys.readouterr().err
    assert run_delete(["nope"], index_dir) == 2
    assert run_add([tmp_path / "v1.jsonl"], tmp_path / "no-index", bm25_only=True) == 2


def test_sentence_vectors_follow_add_and_delete(tmp_path):
    from core.retrieval.sentences import FILE, sentence_key

    emb = FakeEmbedder()
    index_dir = build(tmp_path, V1, emb)
    add_documents([write(tmp_path / "new.jsonl", V2)], index_dir, emb, progress=False)
    idx = HybridIndex(index_dir, emb)
    keys = [sentence_key(d["text"]) for d in V2]
    found = idx.sentence_vectors(keys)
    assert set(found) == set(keys)
    assert np.allclose(found[keys[0]], FakeEmbedder.vector(V2[0]["text"]))
    delete_documents(index_dir, ["d10"], progress=False)
    assert VectorStore(index_dir / FILE).hashes(emb.name) == set(keys[1:])
