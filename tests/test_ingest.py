"""Ingest: reading knowledge files, chunking, resumable embedding, the ``medbot ingest`` CLI
and a MedQuAD subset."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from core.retrieval.documents import Document, ReadError, chunk_document, read_documents
from core.retrieval.index import HybridIndex
from core.retrieval.ingest import IngestReport, build_bm25_stage, embed_missing
from core.retrieval.search import hybrid_search
from core.retrieval.vectors import VectorStore
from core.language.tokens import count_tokens

MEDBOT = Path(sys.executable).parent / "medbot"


def _write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _read(path: Path) -> tuple[list[Document], list[ReadError]]:
    errors: list[ReadError] = []
    docs = list(read_documents(path, errors))
    return docs, errors


# --------------------------------------------------------------------------- read_documents

def test_read_jsonl_reports_bad_lines_and_keeps_good_ones(tmp_path):
    path = _write_lines(tmp_path / "kb.jsonl", [
        json.dumps({"id": "good-1", "title": "Gout", "text": "Gout is caused by uric acid.",
                    "url": "https://example.org/gout", "focus": "Gout", "cuis": ["C0018099"]}),
        '{"id": "broken", "text": "unterminated',
        json.dumps(["not", "an", "object"]),
        json.dumps({"id": "no-text", "title": "Nothing here"}),
        "",
        json.dumps({"_id": "beir-7", "title": "Asthma", "text": "Asthma causes wheeze.",
                    "source": "BEIR"}),
        json.dumps({"id": "empty-text", "text": "   "}),
        json.dumps({"title": "No id", "text": "당뇨병이 있으면 발을 매일 살펴보세요."}),
    ])
    docs, errors = _read(path)

    assert [d.doc_id for d in docs] == ["good-1", "beir-7", "kb:8"]
    assert [(e.path, e.line) for e in errors] == [(str(path), 2), (str(path), 3),
                                                   (str(path), 4), (str(path), 7)]
    assert all(str(e).startswith(f"{path}:{e.line}: ") for e in errors)
    assert "JSON" in errors[0].reason
    assert "object" in errors[1].reason
    assert "text" in errors[2].reason and "text" in errors[3].reason

    good, beir, no_id = docs
    assert good.meta == {"focus": "Gout", "cuis": ["C0018099"]}
    assert good.title == "Gout" and good.url == "https://example.org/gout"
    assert good.source == "kb.jsonl" and good.line == 1 and good.lang == "en"
    assert beir.title == "Asthma" and beir.source == "BEIR" and beir.meta == {}
    assert "_id" not in beir.meta and beir.line == 6
    assert no_id.lang == "ko" and no_id.line == 8


def test_read_markdown_title_from_heading(tmp_path):
    md = tmp_path / "heart-notes.md"
    md.write_text("Some preface line.\n\n# Living with heart failure\n\nWeigh yourself daily.\n"
                  "## Medicines\nTake them as prescribed.\n", encoding="utf-8")
    docs, errors = _read(md)
    assert not errors and len(docs) == 1
    doc = docs[0]
    assert doc.title == "Living with heart failure"
    assert doc.doc_id == "heart-notes" and doc.source == "heart-notes.md"
    assert "Weigh yourself daily." in doc.text
    assert doc.url.startswith("file://")

    plain = tmp_path / "notes.md"
    plain.write_text("No heading here.\n#hashtag is not a heading\n", encoding="utf-8")
    assert _read(plain)[0][0].title == "notes"

    txt = tmp_path / "advice.txt"
    txt.write_text("# Not markdown\nPlain text file.\n", encoding="utf-8")
    assert _read(txt)[0][0].title == "advice"


def test_read_empty_text_file_is_reported(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n", encoding="utf-8")
    docs, errors = _read(empty)
    assert docs == [] and len(errors) == 1 and errors[0].path == str(empty)


def test_read_missing_file_raises(tmp_path):
    with pytest.raises(FileNotFoundError):
        _read(tmp_path / "missing.jsonl")


# --------------------------------------------------------------------------- chunk_document

def _long_english(n_tokens: int = 2000) -> str:
    rng = random.Random(7)
    words = ("blood pressure heart kidney glucose insulin patient doctor medicine dose daily "
             "morning evening exercise walking salt sodium potassium cholesterol statin").split()
    sentences: list[str] = []
    i = 0
    while count_tokens(" ".join(sentences)) < n_tokens:
        body = " ".join(rng.choice(words) for _ in range(rng.randint(6, 24)))
        sentences.append(f"Sentence {i} says {body}.")
        i += 1
    return " ".join(sentences)


@pytest.mark.parametrize("chunk_tokens, overlap", [(300, 50), (120, 30), (64, 0)])
def test_chunk_long_document(chunk_tokens, overlap):
    text = _long_english()
    assert 1900 <= count_tokens(text) <= 2200
    doc = Document("guide", "A long guide", text, source="guide.jsonl",
                   url="https://example.org/guide", meta={"focus": "BP"})
    chunks = chunk_document(doc, chunk_tokens, overlap)

    assert len(chunks) >= count_tokens(text) // chunk_tokens
    assert [c.chunk_id for c in chunks] == [f"guide#{i}" for i in range(len(chunks))]
    for c in chunks:
        assert count_tokens(c.text) <= chunk_tokens, c.chunk_id
        assert c.doc_id == "guide" and c.title == "A long guide"
        assert c.url == "https://example.org/guide" and c.meta == {"focus": "BP"}
    # every sentence lands in a chunk, in order; consecutive chunks share at most `overlap`
    # tokens of whole sentences (the end of one is the start of the next)
    sentence_text = {int(m.group(1)): m.group(0)
                     for m in re.finditer(r"Sentence (\d+) says [^.]*\.", text)}
    ids = [[int(x) for x in re.findall(r"Sentence (\d+) says", c.text)] for c in chunks]
    shared_any = False
    flat: list[int] = list(ids[0])
    for a, b in zip(ids, ids[1:]):
        n_shared = max(n for n in range(min(len(a), len(b)) + 1) if n == 0 or a[-n:] == b[:n])
        assert not set(b[n_shared:]) & set(a), (a, b)
        shared_tokens = sum(count_tokens(sentence_text[i]) for i in b[:n_shared])
        assert shared_tokens <= overlap
        shared_any = shared_any or n_shared > 0
        flat.extend(b[n_shared:])
    assert flat == sorted(sentence_text)
    assert shared_any == (overlap > 0)
    assert len({c.hash for c in chunks}) == len(chunks)


def test_chunk_short_document_is_one_chunk():
    doc = Document("short-1", "Short", "Metformin can cause diarrhea.", lang="en")
    chunks = chunk_document(doc, 300, 50)
    assert len(chunks) == 1
    assert chunks[0].chunk_id == chunks[0].doc_id == "short-1"
    assert chunks[0].text == doc.text
    assert chunks[0].to_json()["hash"] == chunks[0].hash


def test_chunk_cuts_overlong_sentence_within_limit():
    text = "혈압을 낮추려면 소금 섭취를 줄이고 규칙적으로 운동하며 체중을 관리하는 것이 좋습니다 " * 40
    doc = Document("ko-long", "고혈압", text.strip(), lang="ko")
    chunks = chunk_document(doc, 100, 20)
    assert len(chunks) > 1
    assert all(count_tokens(c.text) <= 100 for c in chunks)
    assert all("\ufffd" not in c.text for c in chunks)


def test_chunk_overlong_korean_sentence_loses_no_characters():
    text = ("혈압을 낮추려면 소금 섭취를 줄이고 규칙적으로 운동하며 체중을 관리하는 것이 좋습니다 " * 40).strip()
    chunks = chunk_document(Document("ko-long", "고혈압", text, lang="ko"), 100, 0)
    squeeze = lambda s: "".join(s.split())  # noqa: E731
    assert squeeze("".join(c.text for c in chunks)) == squeeze(text)


# --------------------------------------------------------------------------- resumable embedding

class Counting:
    """The real embedder, counting what it is asked to embed; can raise KeyboardInterrupt on
    its n-th ``embed_passages`` call."""

    def __init__(self, inner, interrupt_on_call: int | None = None) -> None:
        self._inner = inner
        self.name, self.dim = inner.name, inner.dim
        self.calls = 0
        self.passages = 0
        self.interrupt_on_call = interrupt_on_call

    def embed_query(self, text):
        return self._inner.embed_query(text)

    def embed_passages(self, texts):
        self.calls += 1
        if self.calls == self.interrupt_on_call:
            raise KeyboardInterrupt
        self.passages += len(texts)
        return self._inner.embed_passages(texts)


EMBED_DOCS = [
    {"id": "gout", "title": "Gout", "text": "Allopurinol lowers uric acid in gout."},
    {"id": "asthma", "title": "Asthma", "text": "Inhaled corticosteroids control asthma."},
    {"id": "ckd", "title": "Kidney disease", "text": "Chronic kidney disease is staged by eGFR."},
    {"id": "flu", "title": "Flu vaccine", "text": "Get an influenza vaccine every autumn."},
    {"id": "insomnia", "title": "Insomnia", "text": "Insomnia is persistent difficulty sleeping."},
    {"id": "stroke", "title": "Stroke", "text": "Face drooping and arm weakness may be a stroke."},
    {"id": "statin", "title": "Statins", "text": "Statins lower LDL cholesterol."},
    {"id": "warfarin", "title": "Warfarin", "text": "Keep vitamin K intake steady on warfarin."},
    {"id": "ko-insulin", "title": "인슐린 보관", "text": "개봉하지 않은 인슐린은 냉장고에 보관합니다."},
    {"id": "ko-bp", "title": "고혈압", "text": "소금 섭취를 줄이면 혈압이 내려갑니다."},
    {"id": "migraine", "title": "Migraine", "text": "Triptans relieve migraine attacks."},
    {"id": "sun", "title": "Sun protection", "text": "Sunscreen reduces sunburn risk."},
    # same title and text as "gout": the same hash, embedded once
    {"id": "gout-copy", "title": "Gout", "text": "Allopurinol lowers uric acid in gout."},
]


def _build(tmp_path: Path, embedder_name: str):
    src = tmp_path / "docs.jsonl"
    src.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in EMBED_DOCS),
                   encoding="utf-8")
    index_dir = tmp_path / "index"
    chunks, report = build_bm25_stage([src], index_dir, embedder_name, progress=False)
    return index_dir, chunks, report


def _stored(index_dir: Path, name: str) -> set[str]:
    store = VectorStore(index_dir / "vectors.sqlite")
    try:
        return store.hashes(name)
    finally:
        store.close()


def test_embed_missing_is_resumable(tmp_path, embedder):
    index_dir, chunks, report = _build(tmp_path, embedder.name)
    m = len(chunks)
    unique = {c.hash for c in chunks}
    assert m == len(EMBED_DOCS) and len(unique) == m - 1

    # BM25 stage only: searchable, no dense side yet
    idx = HybridIndex(index_dir, embedder)
    assert idx.dense_coverage == (0, m)
    q = "allopurinol uric acid"
    docs, trace = hybrid_search(idx, q, embedder.embed_query(q), 3, mode="hybrid")
    assert docs[0].doc_id in {"gout", "gout-copy"}
    assert trace["dense_coverage"] == f"0/{m}" and trace["dense_hits"] == 0
    assert "dense_note" in trace

    counting = Counting(embedder)
    embed_missing(chunks, index_dir, counting, report, batch_size=4, max_chunks=5, progress=False)
    assert counting.passages == 5 and counting.calls == 2
    assert report.embedded_before == 0 and report.embedded_now == 5 and not report.interrupted
    first = _stored(index_dir, embedder.name)
    assert len(first) == 5 and first <= unique

    partial = HybridIndex(index_dir, embedder)
    covered = sum(c["hash"] in first for c in partial.chunks)
    assert partial.dense_coverage == (covered, m) and covered >= 5
    docs, trace = hybrid_search(partial, q, embedder.embed_query(q), 3, mode="hybrid")
    assert trace["dense_coverage"] == f"{covered}/{m}"

    counting2 = Counting(embedder)
    report2 = IngestReport()
    seen: list[int] = []
    embed_missing(chunks, index_dir, counting2, report2, batch_size=4, progress=False,
                  on_batch=seen.append)
    assert counting2.passages == len(unique) - 5
    assert report2.embedded_before == 5 and report2.embedded_now == len(unique) - 5
    assert seen == sorted(seen) and seen[-1] == len(unique) - 5
    assert _stored(index_dir, embedder.name) == unique

    # the loaded index picks up the new vectors when refreshed
    partial.refresh_dense(every_s=0.0)
    assert partial.dense_coverage == (m, m)

    counting3 = Counting(embedder)
    report3 = IngestReport()
    embed_missing(chunks, index_dir, counting3, report3, batch_size=4, progress=False)
    assert counting3.passages == 0
    assert report3.embedded_before == len(unique) and report3.embedded_now == 0
    assert report3.embedded_total == len(unique)

    full = HybridIndex(index_dir, embedder)
    assert full.dense_coverage == (m, m)
    docs, trace = hybrid_search(full, q, embedder.embed_query(q), 3, mode="hybrid")
    assert trace["dense_coverage"] == f"{m}/{m}" and "dense_note" not in trace


def test_embed_missing_keeps_committed_batches_on_interrupt(tmp_path, embedder):
    index_dir, chunks, report = _build(tmp_path, embedder.name)
    unique = {c.hash for c in chunks}
    interrupting = Counting(embedder, interrupt_on_call=3)
    embed_missing(chunks, index_dir, interrupting, report, batch_size=2, progress=False)
    assert report.interrupted
    assert interrupting.calls == 3 and interrupting.passages == 4
    assert report.embedded_now == 4
    stored = _stored(index_dir, embedder.name)
    assert len(stored) == 4 and stored <= unique
    assert HybridIndex(index_dir, embedder).dense_coverage[0] >= 4

    # rerunning embeds only what is missing
    resume = Counting(embedder)
    report2 = IngestReport()
    embed_missing(chunks, index_dir, resume, report2, batch_size=8, progress=False)
    assert not report2.interrupted
    assert report2.embedded_before == 4 and resume.passages == len(unique) - 4
    assert _stored(index_dir, embedder.name) == unique


# --------------------------------------------------------------------------- CLI

def _cli_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["MEDBOT_DATA_DIR"] = str(tmp_path / "data")
    env.pop("MEDBOT_INDEX_DIR", None)
    return env


def test_cli_ingest_bm25_only_skips_bad_line(tmp_path):
    assert MEDBOT.exists(), MEDBOT
    src = _write_lines(tmp_path / "kb.jsonl", [
        json.dumps({"id": "a", "title": "Gout", "text": "Allopurinol lowers uric acid."}),
        '{"id": "b", "text": ',
        json.dumps({"id": "c", "title": "Asthma", "text": "Inhalers control asthma."}),
        json.dumps({"id": "d", "title": "Statins", "text": "Statins lower cholesterol."}),
    ])
    index_dir = tmp_path / "index"
    proc = subprocess.run([str(MEDBOT), "ingest", str(src), "--index", str(index_dir),
                           "--bm25-only"], capture_output=True, text=True, cwd=tmp_path,
                          env=_cli_env(tmp_path), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert f"skipped {src}:2" in proc.stderr
    assert "BM25 ready" in proc.stderr
    assert "3 documents" in proc.stderr and "1 skipped" in proc.stderr
    idx = HybridIndex(index_dir, None)
    assert sorted(c["doc_id"] for c in idx.chunks) == ["a", "c", "d"]
    assert idx.manifest["embedder"] is None
    docs, _ = hybrid_search(idx, "allopurinol", None, 2, mode="bm25")
    assert docs[0].doc_id == "a"


def test_cli_ingest_missing_file_exits_2(tmp_path):
    index_dir = tmp_path / "index"
    proc = subprocess.run([str(MEDBOT), "ingest", str(tmp_path / "missing.jsonl"), "--index",
                           str(index_dir)], capture_output=True, text=True, cwd=tmp_path,
                          env=_cli_env(tmp_path), timeout=120)
    assert proc.returncode == 2
    assert "no such file" in proc.stderr
    assert "missing.jsonl" in proc.stderr
    assert not (index_dir / "manifest.json").exists()


# --------------------------------------------------------------------------- MedQuAD subset

def test_medquad_subset_acromegaly(tmp_path, shared_data):
    corpus = shared_data / "medquad" / "corpus.jsonl"
    acro: list[str] = []
    others: list[str] = []
    with corpus.open(encoding="utf-8") as fh:
        for line in fh:
            if "Acromegaly" in line and "Acromegaly" in json.loads(line).get("focus", ""):
                acro.append(line)
            elif len(others) < 200:
                others.append(line)
    assert len(acro) >= 3 and len(others) == 200
    acro_ids = {json.loads(line)["id"] for line in acro}

    src = tmp_path / "medquad-subset.jsonl"
    src.write_text("".join(others + acro), encoding="utf-8")
    chunks, report = build_bm25_stage([src], tmp_path / "index", None, progress=False)
    assert report.documents == 200 + len(acro) and not report.errors

    idx = HybridIndex(tmp_path / "index", None)
    docs, trace = hybrid_search(idx, "What are the symptoms of acromegaly?", None, 5, mode="bm25")
    assert docs[0].doc_id in acro_ids, [(d.doc_id, d.title) for d in docs]
    assert docs[0].url.startswith("http")
    assert trace["bm25_hits"] > 0
