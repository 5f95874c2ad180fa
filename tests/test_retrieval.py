"""Hybrid retrieval: BM25 against the rank-bm25 reference, RRF, Korean/English tokenisation,
hybrid search over a small index built here, embedder mismatch, and the bundled corpus."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from core.retrieval.fusion import rrf
from core.retrieval.index import HybridIndex, IndexMismatchError
from core.retrieval.ingest import build_bm25_stage, embed_missing
from core.retrieval.search import FusionConfig, hybrid_search
from core.retrieval.tokenize import tokenize, tokenize_many

K1 = 1.5  # as in core.retrieval.ingest.build_bm25_stage


def _write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                    encoding="utf-8")
    return path


# --------------------------------------------------------------------------- BM25 vs rank-bm25

BM25_CORPUS = [
    "Metformin is the usual first medicine for type 2 diabetes and lowers blood glucose.",
    "Diarrhea and nausea are common side effects of metformin, usually early in treatment.",
    "Insulin lowers blood glucose; insulin doses are adjusted to glucose readings.",
    "High blood pressure raises the risk of stroke, heart attack and kidney disease.",
    "Reducing salt, losing weight and regular exercise lower blood pressure.",
    "Amlodipine is a calcium channel blocker used for high blood pressure; ankle swelling may occur.",
    "ACE inhibitors can cause a dry cough; an angiotensin receptor blocker is an alternative.",
    "Statins lower LDL cholesterol and reduce heart attack and stroke risk.",
    "Muscle aches on statins are uncommon; severe muscle pain with dark urine needs urgent care.",
    "Asthma causes wheeze, cough and chest tightness, often worse at night.",
    "Inhaled corticosteroids reduce airway inflammation in asthma; rinse the mouth after each dose.",
    "COPD is a lung disease usually caused by smoking; quitting smoking slows its progression.",
    "Pneumonia causes fever, cough and breathlessness; older adults may only show confusion.",
    "Chronic kidney disease is staged by eGFR and urine albumin.",
    "Ibuprofen and other NSAIDs can harm the kidneys, especially with dehydration.",
    "Gout is caused by uric acid crystals; allopurinol lowers uric acid over time.",
    "A gout flare makes a joint, often the big toe, hot, red and very painful.",
    "Warfarin thins the blood; vitamin K in leafy greens changes its effect, so keep intake steady.",
    "Atrial fibrillation is an irregular heartbeat that raises stroke risk; anticoagulants lower it.",
    "Stroke warning signs: face drooping, arm weakness, speech difficulty; call emergency services.",
    "Hypoglycemia causes sweating, shaking and confusion; take fifteen grams of fast sugar.",
    "Check feet daily in diabetes; numbness and poor circulation make foot ulcers likely.",
    "Diabetic retinopathy damages the retina; yearly eye examinations find it early.",
    "Influenza vaccination every autumn is advised for older adults and chronic illness.",
    "Sleep apnea causes loud snoring and daytime sleepiness; CPAP therapy treats it.",
    "Insomnia is treated first with cognitive behavioural therapy rather than sleeping pills.",
    "Thyroid hormone deficiency causes tiredness, weight gain and feeling cold; levothyroxine replaces it.",
    "Osteoporosis weakens bones; calcium, vitamin D and weight-bearing exercise help.",
    "Migraine headaches can bring nausea and light sensitivity; triptans relieve attacks.",
    "Depression lasting two weeks or more with loss of interest should be discussed with a doctor.",
]

# each term occurs in fewer than half of the documents (checked in the test)
BM25_QUERIES = [
    "metformin side effects",
    "blood pressure salt",
    "stroke risk",
    "cough night asthma",
    "kidney disease ibuprofen",
    "uric acid gout flare",
    "muscle pain statins",
    "vitamin",
    "nausea",
    "insulin glucose",
]


@pytest.fixture(scope="module")
def bm25_index(tmp_path_factory) -> HybridIndex:
    d = tmp_path_factory.mktemp("bm25ref")
    src = _write_jsonl(d / "docs.jsonl",
                       [{"id": f"d{i:02d}", "text": t} for i, t in enumerate(BM25_CORPUS)])
    chunks, report = build_bm25_stage([src], d / "index", None, progress=False)
    assert report.documents == len(BM25_CORPUS) and len(chunks) == len(BM25_CORPUS)
    return HybridIndex(d / "index", None)


@pytest.mark.parametrize("query", BM25_QUERIES)
def test_bm25s_scores_match_rank_bm25(bm25_index, query):
    corpus_tokens = [tokenize(t) for t in BM25_CORPUS]
    reference = BM25Okapi(corpus_tokens, k1=K1, b=0.75)
    q = tokenize(query)
    assert q, query
    n = len(corpus_tokens)
    for term in q:
        df = sum(term in doc for doc in corpus_tokens)
        assert 0 < df < n / 2, (term, df)  # precondition: positive idf in both libraries
    assert len(set(q)) == len(q)

    # chunks are in corpus order (one short document = one chunk)
    assert [c["doc_id"] for c in bm25_index.chunks] == [f"d{i:02d}" for i in range(n)]
    ours = np.asarray(bm25_index.bm25.get_scores(q), dtype=float) * (K1 + 1)
    ref = np.asarray(reference.get_scores(q), dtype=float)
    assert ref.max() > 0
    np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-9)

    ref_top = [i for i in np.argsort(-ref, kind="stable")[:10] if ref[i] > 0]
    got = bm25_index.search_bm25(query, 10)
    assert got.ids == ref_top
    np.testing.assert_allclose(np.asarray(got.scores) * (K1 + 1), ref[ref_top], rtol=1e-4)


# --------------------------------------------------------------------------- RRF

def test_rrf_hand_computed():
    fused = rrf([["a", "b", "c"], ["c", "a", "d"]])
    expected = {"a": 1 / 61 + 1 / 62, "b": 1 / 62, "c": 1 / 63 + 1 / 61, "d": 1 / 63}
    assert [item for item, _ in fused] == ["a", "c", "b", "d"]
    for item, score in fused:
        assert score == pytest.approx(expected[item], rel=1e-12)


def test_rrf_other_k_and_top_k():
    fused = rrf([["x", "y", "z"], ["z"]], k=1)
    assert fused == [("z", pytest.approx(1 / 4 + 1 / 2)), ("x", pytest.approx(1 / 2)),
                     ("y", pytest.approx(1 / 3))]
    top = rrf([["a", "b", "c"], ["c", "a", "d"]], top_k=2)
    assert [item for item, _ in top] == ["a", "c"]
    assert rrf([["a", "b", "c"]], top_k=0) == []
    assert rrf([]) == [] and rrf([[], []]) == []


def test_rrf_duplicates_within_a_ranking_count_once():
    fused = dict(rrf([["a", "a", "b"]]))
    assert set(fused) == {"a", "b"}
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["b"] < fused["a"]
    both = dict(rrf([["a", "b", "a"], ["b", "b"]]))
    assert both["a"] == pytest.approx(1 / 61)
    assert both["b"] == pytest.approx(1 / 62 + 1 / 61)


def test_rrf_ties_keep_first_appearance():
    assert [item for item, _ in rrf([["x"], ["y"]])] == ["x", "y"]
    assert [item for item, _ in rrf([["y"], ["x"]])] == ["y", "x"]


@pytest.mark.parametrize("k", [0, -1, -60])
def test_rrf_rejects_non_positive_k(k):
    with pytest.raises(ValueError):
        rrf([["a"]], k=k)


# --------------------------------------------------------------------------- tokenisation

KOREAN_PARTICLES = {"이", "가", "은", "는", "을", "를", "과", "와", "도", "에", "의", "로", "으로", "에서"}
KOREAN_ENDINGS = {"어요", "아요", "요", "습니다", "니다", "다", "고"}


@pytest.mark.parametrize("text", ["당뇨병이 있어요", "당뇨병과 고혈압", "당뇨병은 위험해요",
                                  "당뇨병을 치료해요"])
def test_korean_keeps_noun_drops_particles(text):
    tokens = tokenize(text)
    assert "당뇨병" in tokens
    assert not set(tokens) & KOREAN_PARTICLES, tokens
    assert not set(tokens) & KOREAN_ENDINGS, tokens
    assert not any(t.startswith("당뇨병") and t != "당뇨병" for t in tokens)


def test_korean_same_noun_with_different_particles_matches():
    a, b = tokenize("메트포르민이 부작용이 있나요"), tokenize("메트포르민의 부작용을 알려주세요")
    assert {"메트포르민", "부작용"} <= set(a) and {"메트포르민", "부작용"} <= set(b)


def test_korean_prefix_nouns_stay_distinct():
    assert tokenize("고혈당 증상") != tokenize("저혈당 증상")


def test_english_stop_words_dropped_and_lowercased():
    tokens = tokenize("What are THE side effects of Metformin?")
    assert tokens == ["side", "effects", "metformin"]
    assert tokenize("the and of is are") == []
    assert tokenize("") == []


def test_mixed_korean_english_text():
    tokens = tokenize("혈압약을 먹는데 Metformin과 the aspirin 7.2 같이 먹어도 되나요")
    assert {"혈압", "약", "metformin", "aspirin", "7.2"} <= set(tokens), tokens
    assert "the" not in tokens
    assert not set(tokens) & KOREAN_PARTICLES
    texts = ["당뇨병이 있어요", "side effects of metformin", "혈압약과 aspirin"]
    assert tokenize_many(texts) == [tokenize(t) for t in texts]


@pytest.mark.parametrize("term", ["SGLT2", "HbA1c"])
def test_alphanumeric_terms_tokenised_alike_in_korean_and_english(term):
    english = tokenize(f"{term} level")
    assert english[0] == term.lower()
    assert term.lower() in tokenize(f"{term} 수치")


# --------------------------------------------------------------------------- hybrid search

HF_SENTENCES = [
    "Heart failure means the heart muscle cannot pump enough blood to meet the body's needs.",
    "Common symptoms of heart failure include breathlessness on exertion, swollen ankles and tiredness.",
    "Patients with heart failure should weigh themselves every morning after using the toilet.",
    "A weight gain of more than two kilograms in three days can signal fluid build-up and should be reported.",
    "Diuretics such as furosemide remove excess fluid and relieve congestion in heart failure.",
    "ACE inhibitors, beta blockers and mineralocorticoid antagonists improve survival in reduced ejection fraction.",
    "SGLT2 inhibitors are now recommended for heart failure regardless of diabetes status.",
    "Limiting salt intake and following fluid advice from the care team helps prevent hospital admissions.",
    "Regular, supervised exercise through cardiac rehabilitation improves heart failure symptoms and quality of life.",
    "Vaccination against influenza and pneumococcus is advised because infections can worsen heart failure.",
    "Nonsteroidal anti-inflammatory drugs can cause fluid retention and should be avoided in heart failure.",
    "An echocardiogram measures the ejection fraction and guides the choice of heart failure treatment.",
    "Blood tests for natriuretic peptides help diagnose heart failure and follow its course.",
    "Sudden severe breathlessness, chest pain or fainting with heart failure needs emergency care.",
    "Heart failure self-care also includes taking medicines as prescribed and keeping follow-up appointments.",
]

HYBRID_DOCS = [
    {"id": "en-metformin-se", "title": "Metformin side effects", "lang": "en",
     "text": "The most common side effects of metformin are diarrhea, nausea, bloating and a metallic "
             "taste. Taking it with meals and starting at a low dose reduces stomach upset. Long-term "
             "use can lower vitamin B12."},
    {"id": "ko-metformin-se", "title": "메트포르민 부작용", "lang": "ko",
     "text": "메트포르민의 흔한 부작용은 설사, 구역, 복부 팽만과 금속 맛입니다. 식사와 함께 복용하고 "
             "적은 용량으로 시작하면 위장 증상이 줄어듭니다."},
    {"id": "en-gout", "title": "Gout and uric acid", "lang": "en",
     "text": "Gout is inflammatory arthritis caused by uric acid crystals in a joint, often the big "
             "toe. Allopurinol lowers uric acid over the long term; colchicine treats acute flares."},
    {"id": "ko-stroke", "title": "뇌졸중 경고 증상", "lang": "ko",
     "text": "한쪽 얼굴이나 팔다리에 갑자기 힘이 빠지거나 말이 어눌해지면 뇌졸중일 수 있으니 즉시 "
             "119에 연락해야 합니다."},
    {"id": "en-insomnia", "title": "Insomnia", "lang": "en",
     "text": "Insomnia is persistent difficulty initiating or maintaining sleep despite adequate "
             "opportunity, with daytime impairment. Cognitive behavioural therapy is the first-line "
             "treatment; hypnotics are used short term."},
    {"id": "ko-hypertension", "title": "고혈압 생활 습관", "lang": "ko",
     "text": "고혈압이 있으면 소금 섭취를 줄이고 규칙적으로 운동하며 체중을 관리하고 금연과 절주를 하는 "
             "것이 혈압을 낮추는 데 도움이 됩니다."},
    {"id": "en-asthma", "title": "Asthma inhalers", "lang": "en",
     "text": "Asthma is treated with inhaled corticosteroids to control airway inflammation and a "
             "reliever inhaler for symptoms. Rinse the mouth after using a steroid inhaler to prevent "
             "thrush."},
    {"id": "en-ckd", "title": "Chronic kidney disease stages", "lang": "en",
     "text": "Chronic kidney disease is staged by eGFR and albuminuria. An eGFR below 60 for more than "
             "three months defines stage 3 or worse."},
    {"id": "ko-insulin", "title": "인슐린 보관", "lang": "ko",
     "text": "개봉하지 않은 인슐린은 냉장고에 보관하고, 사용 중인 인슐린 펜은 실온에서 4주 정도 쓸 수 "
             "있습니다. 얼리면 안 됩니다."},
    {"id": "en-flu-vaccine", "title": "Influenza vaccination", "lang": "en",
     "text": "An annual influenza vaccine is recommended for adults, especially older people and "
             "those with chronic illness, ideally before winter."},
    {"id": "en-sunburn", "title": "Sun protection", "lang": "en",
     "text": "Broad-spectrum sunscreen of SPF 30 or higher, shade and protective clothing reduce "
             "sunburn and skin cancer risk."},
    {"id": "hf-guide", "title": "Living with heart failure", "lang": "en",
     "text": " ".join(HF_SENTENCES)},
]


class Renamed:
    """The real embedder under another name (delegates everything else)."""

    def __init__(self, inner, name: str) -> None:
        self._inner, self.name, self.dim = inner, name, inner.dim

    def embed_query(self, text):
        return self._inner.embed_query(text)

    def embed_passages(self, texts):
        return self._inner.embed_passages(texts)


@pytest.fixture(scope="module")
def small_index(tmp_path_factory, embedder) -> Path:
    d = tmp_path_factory.mktemp("hybrid")
    src = _write_jsonl(d / "docs.jsonl", HYBRID_DOCS)
    index_dir = d / "index"
    chunks, report = build_bm25_stage([src], index_dir, embedder.name, chunk_tokens=100,
                                      overlap_tokens=20, progress=False)
    assert report.documents == len(HYBRID_DOCS) and not report.errors
    assert len(chunks) < 40
    embed_missing(chunks, index_dir, embedder, report, progress=False)
    assert report.embedded_total == len(chunks) and not report.interrupted
    return index_dir


@pytest.fixture(scope="module")
def small(small_index, embedder) -> HybridIndex:
    return HybridIndex(small_index, embedder)


def test_small_index_layout(small):
    hf = [c for c in small.chunks if c["doc_id"] == "hf-guide"]
    assert len(hf) >= 3, "the long document should be split"
    assert [c["chunk_id"] for c in hf] == [f"hf-guide#{i}" for i in range(len(hf))]
    assert small.dense_coverage == (len(small.chunks), len(small.chunks))


@pytest.mark.parametrize("query, expected", [("allopurinol", "en-gout"),
                                             ("뇌졸중이 의심되면", "ko-stroke"),
                                             ("인슐린을 어디에 보관해요?", "ko-insulin")])
def test_bm25_only_query_finds_doc_first(small, embedder, query, expected):
    docs, trace = hybrid_search(small, query, embedder.embed_query(query), 5, mode="bm25")
    assert docs and docs[0].doc_id == expected
    assert docs[0].bm25_rank == 1 and docs[0].dense_rank is None
    assert trace["dense_hits"] == 0 and trace["bm25_hits"] >= 1


def test_dense_only_finds_a_paraphrase(small, embedder):
    query = "I can't fall asleep at night"
    insomnia = next(d for d in HYBRID_DOCS if d["id"] == "en-insomnia")
    # no word in common: BM25 cannot find it
    assert not set(tokenize(query)) & set(tokenize(insomnia["title"] + " " + insomnia["text"]))
    bm25_docs, _ = hybrid_search(small, query, None, 5, mode="bm25")
    assert "en-insomnia" not in [d.doc_id for d in bm25_docs]

    docs, trace = hybrid_search(small, query, embedder.embed_query(query), 5, mode="dense")
    assert docs[0].doc_id == "en-insomnia"
    assert docs[0].dense_rank == 1 and docs[0].bm25_rank is None
    assert trace["bm25_hits"] == 0 and trace["dense_hits"] >= 1
    assert -1.0 <= docs[0].score <= 1.0 + 1e-5


def test_hybrid_returns_documents_not_chunks(small, embedder):
    query = "heart failure"
    bm25_chunks = small.search_bm25(query, 10)
    hf_hits = [i for i in bm25_chunks.ids if small.chunks[i]["doc_id"] == "hf-guide"]
    assert len(hf_hits) >= 2, "precondition: several chunks of the long doc match"

    docs, trace = hybrid_search(small, query, embedder.embed_query(query), 5, mode="hybrid")
    ids = [d.doc_id for d in docs]
    assert len(ids) == len(set(ids)) == 5
    assert ids[0] == "hf-guide"
    assert ids.count("hf-guide") == 1
    assert re.fullmatch(r"hf-guide#\d+", docs[0].chunk_id)
    assert docs[0].title == "Living with heart failure"
    # the default fusion is convex (docs/benchmarks.md): α·cos + (1 − α)·bm25, each min-max
    # normalised to [0, 1], best first
    assert all(a.score >= b.score for a, b in zip(docs, docs[1:]))
    assert trace["fusion"].startswith("convex") and 0.0 <= docs[-1].score <= docs[0].score <= 1.0
    rrf_docs, rrf_trace = hybrid_search(small, query, embedder.embed_query(query), 5, mode="hybrid",
                                        config=FusionConfig(fusion="rrf", rrf_k=60))
    assert rrf_trace["fusion"] == "rrf k=60" and rrf_docs[0].doc_id == "hf-guide"
    assert all(a.score >= b.score for a, b in zip(rrf_docs, rrf_docs[1:]))
    assert rrf_docs[0].score <= 2 / 61 + 1e-12          # at most rank 1 on both sides
    assert trace["mode"] == "hybrid" and trace["k"] == 5
    assert re.fullmatch(r"\d+/\d+", trace["dense_coverage"])
    n = len(small.chunks)
    assert trace["dense_coverage"] == f"{n}/{n}"
    assert "dense_note" not in trace


def test_hybrid_without_query_vector_is_bm25(small):
    docs, trace = hybrid_search(small, "allopurinol gout", None, 3, mode="hybrid",
                                config=FusionConfig(fusion="convex", rrf_k=60))
    assert docs[0].doc_id == "en-gout"
    assert trace["dense_hits"] == 0
    assert docs[0].score == pytest.approx(1 / 61)   # no dense side: BM25's ranks through RRF


def test_index_refuses_another_embedder(small_index, embedder):
    with pytest.raises(IndexMismatchError):
        HybridIndex(small_index, Renamed(embedder, "some-other-embedder/v2"))
    # the same model under its own name loads; no embedder at all (BM25 only) loads too
    assert HybridIndex(small_index, Renamed(embedder, embedder.name)).dense_coverage[0] > 0
    assert HybridIndex(small_index, None).dense_coverage[0] == 0


# --------------------------------------------------------------------------- bundled corpus

@pytest.fixture(scope="module")
def default(default_index, embedder) -> HybridIndex:
    return HybridIndex(default_index, embedder)


def _metformin_side_effect_docs(index: HybridIndex) -> set[str]:
    out = set()
    for c in index.chunks:
        t = c["title"].lower()
        if ("metformin" in t and "side effect" in t) or ("메트포르민" in t and "부작용" in t):
            out.add(c["doc_id"])
    return out


@pytest.mark.parametrize("query", ["메트포르민 부작용", "What are the side effects of metformin?"])
def test_default_corpus_metformin_side_effects(default, embedder, query):
    targets = _metformin_side_effect_docs(default)
    assert targets, "the bundled corpus should have a metformin side-effects document"
    assert default.dense_coverage[0] == default.dense_coverage[1]
    docs, trace = hybrid_search(default, query, embedder.embed_query(query), 5, mode="hybrid")
    top2 = [d.doc_id for d in docs[:2]]
    assert set(top2) & targets, [(d.doc_id, d.title) for d in docs]
    assert trace["bm25_hits"] > 0 and trace["dense_hits"] > 0
    assert math.isfinite(docs[0].score)
