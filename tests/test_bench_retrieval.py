"""``medbot bench retrieval``: BEIR loading, the MedQuAD-style derivation, truncation to the
model window, the sweep reproducing ``hybrid_search``, the report's shape, the CLI, and the
team's Korean set. No timing is asserted (speed is the bench's output, not a test)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from bot.bench import retrieval as br
from core.retrieval.index import HybridIndex, bm25_tokens, hangul_bigrams
from core.retrieval.search import FusionConfig, hybrid_search
from tests.test_index_lifecycle import FakeEmbedder

MEDBOT = Path(sys.executable).parent / "medbot"

DOCS = [
    ("d1", "Gout is caused by uric acid crystals; allopurinol lowers uric acid."),
    ("d2", "Asthma causes wheeze and cough; inhaled steroids control it."),
    ("d3", "Metformin is the usual first medicine for type 2 diabetes."),
    ("d4", "Statins lower LDL cholesterol and the risk of heart attack."),
    ("d5", "Stroke signs are face drooping, arm weakness and speech trouble."),
    ("d6", "Influenza vaccination every autumn protects older adults."),
]
QUERIES = [("q1", "what lowers uric acid", "d1"), ("q2", "wheeze inhaled steroids", "d2"),
           ("q3", "first medicine for diabetes", "d3"), ("q4", "LDL cholesterol statins", "d4")]


def write_beir(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": i, "title": "", "text": t}) + "\n"
                                               for i, t in DOCS))
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n"
                                                for q, t, _ in QUERIES)
                                        + json.dumps({"_id": "q-unjudged", "text": "x"}) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n"
                                             + "".join(f"{q}\t{d}\t1\n" for q, _, d in QUERIES)
                                             + "q4\td3\t0\n")
    return root


def test_load_beir_keeps_judged_queries_and_positive_judgements(tmp_path):
    ds = br.load_beir(write_beir(tmp_path / "set"))
    assert set(ds.queries) == {"q1", "q2", "q3", "q4"}      # q-unjudged dropped
    assert ds.qrels["q4"] == {"d4": 1}                      # score 0 dropped, header skipped
    with pytest.raises(FileNotFoundError):
        br.load_beir(tmp_path / "missing")


def test_derive_title_answer_set(tmp_path):
    src = tmp_path / "qa.jsonl"
    recs = [{"id": f"r{i}", "title": f"What is thing {i} ?", "text": f"Thing {i} is an answer."}
            for i in range(20)] + [{"id": "r3", "title": "Duplicate id?", "text": "Another answer."}]
    src.write_text("".join(json.dumps(r) + "\n" for r in recs))
    out = br.derive_title_answer_set(src, tmp_path / "a", n_queries=5, seed=7)
    again = br.derive_title_answer_set(src, tmp_path / "b", n_queries=5, seed=7)
    assert (out / "queries.jsonl").read_text() == (again / "queries.jsonl").read_text()
    corpus = [json.loads(x) for x in (out / "corpus.jsonl").read_text().splitlines()]
    assert len(corpus) == 21 and corpus[-1]["_id"] == "r3~2"
    assert all(d["title"] == "" for d in corpus)            # the question is not in the document
    ds = br.load_beir(out)
    assert len(ds.queries) == 5
    for qid, text in ds.queries.items():
        (doc,) = ds.qrels[qid]
        answer = next(d["text"] for d in corpus if d["_id"] == doc)
        source = next(r for r in recs if r["text"] == answer)
        assert text == source["title"] and qid == f"q-{doc}"


def test_truncate_to_window_is_the_longest_prefix_that_fits():
    count = lambda t: len(t.split())  # noqa: E731 - a word-count "tokenizer"
    text = " ".join(f"w{i}" for i in range(100))
    assert br.truncate_to_window(text, count, 200) == text
    cut = br.truncate_to_window(text, count, 10)
    assert cut == " ".join(f"w{i}" for i in range(10))


class _Model:
    @staticmethod
    def token_count(text: str) -> int:
        return len(text.split()) + 2


def test_window_embedder_truncates_passages_only():
    inner = FakeEmbedder()
    inner._model = _Model()
    seen: list[str] = []
    inner.hook = lambda _: None
    original = inner.embed_passages

    def spy(texts):
        seen.extend(texts)
        return original(texts)

    inner.embed_passages = spy
    emb = br.WindowEmbedder(inner, limit=12)
    assert emb.name == f"{inner.name}+first12" and emb.dim == inner.dim
    emb.embed_passages(["short text", " ".join(["word"] * 50)])
    assert seen[0] == "short text" and len(seen[1].split()) == 10 and emb.truncated == 1
    assert np.allclose(emb.embed_query("q"), inner.embed_query("q"))


def test_sweep_reproduces_hybrid_search(tmp_path):
    emb = FakeEmbedder()
    ds = br.load_beir(write_beir(tmp_path / "set"))
    index_dir, _ = br.prepare_index(ds, tmp_path / "cache", emb, "doc", progress=False)
    idx = HybridIndex(index_dir, emb)
    vectors = {q: emb.embed_query(t) for q, t in ds.queries.items()}
    cands = br.gather_candidates(idx, ds.queries, vectors)
    unit_doc = [c["doc_id"] for c in idx.chunks]
    for cfg in (FusionConfig("rrf", 5, 3, 2, 1.0, 2.0), FusionConfig("rrf", 60, 10, 10),
                FusionConfig("convex", 60, 4, 4, alpha=0.3),
                FusionConfig("convex", 60, 2, 6, alpha=0.8, normalization="tmm")):
        for q, text in ds.queries.items():
            docs, _ = hybrid_search(idx, text, vectors[q], 5, "hybrid", config=cfg)
            assert br.fuse_docs(cands[q], unit_doc, 5, cfg) == [d.doc_id for d in docs], (cfg, q)


def test_bench_report_shape_and_resume(tmp_path):
    data = write_beir(tmp_path / "set")
    emb = FakeEmbedder()
    result = br.bench_retrieval(data, cache=tmp_path / "cache", sweep=True, progress=False,
                                embedder=emb)
    assert set(result["methods"]) == set(br.METHODS)
    assert result["corpus"] == {"documents": 6, "units": 6, "dense_coverage": "6/6"}
    for name, r in result["methods"].items():
        assert list(r["metrics"]) == ["nDCG@10", "Recall@1", "Recall@5", "Recall@10",
                                      "Recall@20", "MRR@10"]
        assert all(0.0 <= v <= 1.0 for v in r["metrics"].values())
        assert {"search", "with_embedding"} <= set(r["latency_ms"])
    # lexical queries with one relevant document each: both BM25 implementations find them all
    assert result["methods"]["bm25s"]["metrics"]["Recall@1"] == 1.0
    assert result["methods"]["rank-bm25"]["metrics"]["Recall@1"] == 1.0
    assert result["build"]["dense"]["embedded"] == 6
    assert result["build"]["dense_sample"]["units"] == 6    # timed now, not stored
    assert len(result["sweep"]) == len(br.sweep_grid())
    assert set(result["sweep_two_fold"]) == {"rrf chosen on A", "rrf chosen on B",
                                             "convex chosen on A", "convex chosen on B"}
    text = br.render(result) + br.render_sweep(result["sweep"])
    assert "hybrid-rrf" in text and "best convex" in text
    json.dumps(result)  # JSON-ready

    counting = FakeEmbedder()
    again = br.bench_retrieval(data, methods=("bm25s", "dense"), cache=tmp_path / "cache",
                               progress=False, embedder=counting, throughput_sample=False,
                               end_to_end=False)
    assert counting.passages == 0                           # vectors came from the cache
    assert again["build"]["dense"]["embedded"] == 6 and set(again["methods"]) == {"bm25s", "dense"}


def test_cli_bench_retrieval_json(tmp_path):
    data = write_beir(tmp_path / "set")
    env = {"MEDBOT_DATA_DIR": str(tmp_path / "data"), "PATH": str(MEDBOT.parent)}
    proc = subprocess.run([str(MEDBOT), "bench", "retrieval", "--dataset", str(data), "--json",
                           "--methods", "bm25s", "--methods", "rank-bm25", "--k", "1", "--k", "3"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert set(result["methods"]) == {"bm25s", "rank-bm25"}
    assert set(result["methods"]["bm25s"]["metrics"]) == {"nDCG@10", "Recall@1", "Recall@3", "MRR@10"}
    assert (tmp_path / "data" / "bench" / "retrieval").is_dir()
    bad = subprocess.run([str(MEDBOT), "bench", "retrieval", "--dataset", str(data),
                          "--methods", "bm26"], capture_output=True, text=True, env=env, timeout=300)
    assert bad.returncode == 2 and "bm26" in bad.stderr


# ---------------------------------------------------------------------- graded qrels (--rel-min)

GRADED = [  # query id, text, {document: grade}; g4 is judged but has no relevant document
    ("g1", "what lowers uric acid", {"d1": 2, "d5": 1}),
    ("g2", "wheeze inhaled steroids", {"d2": 1}),
    ("g3", "first medicine for diabetes", {"d3": 2}),
    ("g4", "LDL cholesterol statins", {"d4": 0}),
    ("g5", "face drooping arm weakness", {"d5": 1, "d1": 2}),  # the grade-2 document shares no word
]


def write_graded(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": i, "title": "", "text": t}) + "\n"
                                               for i, t in DOCS))
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n"
                                                for q, t, _ in GRADED)
                                        + json.dumps({"_id": "q-unjudged", "text": "x"}) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{g}\n" for q, _, rel in GRADED for d, g in rel.items()))
    return root


def test_load_beir_rel_min_drops_and_counts_queries_without_a_relevant_document(tmp_path):
    data = write_graded(tmp_path / "set")
    one, two, three = (br.load_beir(data, rel_min=n) for n in (1, 2, 3))
    assert (set(one.queries), one.dropped) == ({"g1", "g2", "g3", "g5"}, 1)     # g4: grade 0 only
    assert (set(two.queries), two.dropped) == ({"g1", "g3", "g5"}, 2)           # and g2: grade 1
    assert (set(three.queries), three.dropped) == (set(), 5)                    # q-unjudged never
    assert two.qrels["g1"] == {"d1": 2, "d5": 1}                                # grades kept for nDCG
    assert set(two.qrels) == set(two.queries)


def test_bench_rel_min_counts_grades_at_or_above_it(tmp_path):
    """BM25 ranks the document sharing the query's words first: d1 for g1, d2 for g2, d3 for g3,
    d5 for g5 (d1, g5's grade-2 document, shares no word with it). By hand: with --rel-min 1,
    Recall@1 = (1/2 + 1 + 1 + 1/2) / 4 and every MRR is 1; with 2, Recall@1 = (1 + 1 + 0) / 3
    and g5's MRR is at most 1/2. nDCG uses the grades either way: g2's nDCG is 1, so the sums
    over the shared queries agree."""
    data = write_graded(tmp_path / "set")
    runs = {n: br.bench_retrieval(data, methods=("bm25s",), cache=tmp_path / "cache", progress=False,
                                  embedder=FakeEmbedder(), throughput_sample=False,
                                  end_to_end=False, rel_min=n) for n in (1, 2)}
    one, two = (runs[n]["methods"]["bm25s"]["metrics"] for n in (1, 2))
    assert (runs[1]["queries"], runs[1]["dropped_queries"]) == (4, 1)
    assert (runs[2]["queries"], runs[2]["dropped_queries"], runs[2]["rel_min"]) == (3, 2, 2)
    assert one["Recall@1"] == pytest.approx(0.75) and one["MRR@10"] == pytest.approx(1.0)
    assert two["Recall@1"] == pytest.approx(2 / 3)
    assert 2 / 3 <= two["MRR@10"] <= 2.5 / 3 + 1e-9
    assert 4 * one["nDCG@10"] - 1.0 == pytest.approx(3 * two["nDCG@10"])
    assert "2 judged queries dropped" in br.render(runs[2])


def test_dense_build_time_is_the_measured_full_build(tmp_path):
    data = write_beir(tmp_path / "set")
    cache = tmp_path / "cache"
    bm25_only = br.bench_retrieval(data, methods=("bm25s", "dense"), cache=cache, progress=False,
                                   embedder=FakeEmbedder(), embed=False, throughput_sample=False,
                                   end_to_end=False)
    assert bm25_only["methods"]["dense"]["build"]["seconds"] is None   # no vector: not timed
    slow = FakeEmbedder(hook=lambda _: time.sleep(0.05))               # 6 units: one batch of 16
    first = br.bench_retrieval(data, methods=("dense",), cache=cache, progress=False,
                               embedder=slow, throughput_sample=True, end_to_end=False)
    seconds = first["methods"]["dense"]["build"]["seconds"]
    assert seconds == first["build"]["dense"]["seconds"] >= 0.05       # this run's embedding time
    again = br.bench_retrieval(data, methods=("dense",), cache=cache, progress=False,
                               embedder=FakeEmbedder(), throughput_sample=True, end_to_end=False)
    assert again["methods"]["dense"]["build"]["seconds"] == seconds     # recorded, not sampled


def test_cli_rel_min(tmp_path):
    data = write_graded(tmp_path / "set")
    env = {"MEDBOT_DATA_DIR": str(tmp_path / "data"), "PATH": str(MEDBOT.parent)}
    proc = subprocess.run([str(MEDBOT), "bench", "retrieval", "--dataset", str(data), "--json",
                           "--methods", "bm25s", "--rel-min", "2"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert (result["queries"], result["dropped_queries"], result["rel_min"]) == (3, 2, 2)
    bad = subprocess.run([str(MEDBOT), "bench", "retrieval", "--dataset", str(data), "--rel-min", "0"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert bad.returncode == 2 and "--rel-min" in bad.stderr


# ---------------------------------------------------------------------------------- Korean

def test_korean_set_is_labelled_over_the_bundled_corpus():
    from core.knowledge import corpus_paths

    corpus = {}
    for p in corpus_paths():
        for line in p.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rec = json.loads(line)
                corpus[rec["id"]] = rec
    queries, qrels = br.load_korean()
    assert len(queries) >= 100 and set(queries) == set(qrels)
    assert len(set(queries.values())) == len(queries)
    for qid, rel in qrels.items():
        assert any(g == 2 for g in rel.values()), qid
        assert all(d in corpus and corpus[d]["lang"] == "ko" for d in rel), qid
        assert all(g in (1, 2) for g in rel.values())
    primary = {d for rel in qrels.values() for d, g in rel.items() if g == 2}
    assert primary == {d for d, r in corpus.items() if r["lang"] == "ko"}  # every Korean doc


def test_korean_tokenisations():
    text = "당뇨병이 있으면 SGLT2 억제제를 써요. 약"
    assert br.char_bigrams(text) == ["당뇨", "뇨병", "병이", "있으", "으면", "sglt2", "억제",
                                     "제제", "제를", "써요", "약"]
    assert br.whitespace_tokens(text) == ["당뇨병이", "있으면", "sglt2", "억제제를", "써요", "약"]
    assert hangul_bigrams("고혈압 약") == ["고혈", "혈압", "약"]
    assert bm25_tokens("당뇨병이 있어요") == ["당뇨병", "있", "당뇨", "뇨병", "병이", "있어", "어요"]
    assert bm25_tokens("metformin dose") == ["metformin", "dose"]  # English unchanged


def test_korean_bench_ranks_with_every_tokenisation(default_index):
    result = br.bench_korean(default_index, None)
    assert set(result["methods"]) == {f"bm25 {n}" for n in br.korean_tokenizers()}
    assert result["queries"] >= 100
    for r in result["methods"].values():
        assert 0.0 < r["metrics"]["nDCG@10"] <= 1.0
    assert "Korean set" in br.render_korean(result)


def _row(fusion: str, rrf_k: int, alpha: float, ndcg: float) -> dict:
    return {"fusion": fusion, "rrf_k": rrf_k, "depth_bm25": 40, "depth_dense": 40,
            "rrf_weight_bm25": 1.0, "rrf_weight_dense": 1.0, "alpha": alpha,
            "normalization": "minmax", "nDCG@10": ndcg}


def test_choose_across_ranks_configurations_present_in_every_set_by_mean():
    m = lambda v: {"metrics": {"nDCG@10": v}}  # noqa: E731
    results = {
        "a": {"methods": {"bm25s": m(0.5), "dense": m(0.7), "hybrid-rrf": m(0.95)},
              "sweep": [_row("rrf", 60, 0.5, 0.8), _row("convex", 60, 0.7, 0.6)]},
        "b": {"methods": {"bm25 kiwi": m(0.6), "dense": m(0.5)},
              "sweep": [_row("rrf", 60, 0.5, 0.5), _row("convex", 60, 0.7, 0.9),
                        _row("rrf", 5, 0.5, 1.0)]},          # not swept on "a": left out
    }
    rows = br.choose_across(results)
    assert [r["config"]["fusion"] for r in rows] == ["convex", "rrf"]
    assert rows[0]["mean"] == pytest.approx(0.75) and rows[1]["mean"] == pytest.approx(0.65)
    # gaps to the best *single* retriever (dense 0.7 on a, BM25 0.6 on b; fusion rows ignored)
    assert rows[0]["worst_gap"] == pytest.approx(0.6 - 0.7)
    assert rows[1]["worst_gap"] == pytest.approx(0.5 - 0.6)
    text = br.render_choice(rows, results)
    assert "a dense 0.700, b bm25 kiwi 0.600" in text and "a=0.7 minmax" in text
    loo = br.leave_one_set_out(rows, results)
    assert loo["a / convex"]["held_out"] == pytest.approx(0.6)     # the only convex row
    assert loo["a / rrf"]["config"]["rrf_k"] == 60                 # k 5 is not in both sets
    assert loo["b / rrf"]["held_out"] == pytest.approx(0.5)
    assert loo["b / rrf"]["best_single_method"] == "bm25 kiwi"
    with pytest.raises(ValueError):
        br.choose_across({"c": {"methods": {"dense": m(0.5)}}})
