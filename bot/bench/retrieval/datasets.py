"""Retrieval test sets in the BEIR layout (Thakur et al. 2021), and the MedQuAD title → answer
set derived from question/answer records."""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class BeirSet:
    """A retrieval test set: documents, queries and graded relevance (``qrels[qid][doc_id]``).

    Attributes:
        rel_min: the lowest grade counted as relevant by Recall and MRR (``--rel-min``).
        dropped: judged queries left out for having no document graded ``rel_min`` or more.
    """

    name: str
    directory: Path
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    rel_min: int = 1
    dropped: int = 0
    corpus_path: Path = field(init=False)

    def __post_init__(self) -> None:
        self.corpus_path = self.directory / "corpus.jsonl"


def load_beir(directory: Path, split: str = "test", rel_min: int = 1) -> BeirSet:
    """Read a BEIR-layout directory's queries and ``qrels/<split>.tsv``.

    Only queries with at least one document graded ``rel_min`` or more are kept (with the
    default 1, any positive judgement: BEIR's evaluation does the same); the judged queries
    left out are counted in ``dropped``. Only positive grades are kept in ``qrels``.
    Raises:
        FileNotFoundError: ``corpus.jsonl``, ``queries.jsonl`` or the qrels file is missing.
    """
    directory = Path(directory)
    for rel in ("corpus.jsonl", "queries.jsonl", f"qrels/{split}.tsv"):
        if not (directory / rel).exists():
            raise FileNotFoundError(f"{directory / rel} not found (BEIR layout expected)")
    qrels: dict[str, dict[str, int]] = {}
    with (directory / "qrels" / f"{split}.tsv").open(encoding="utf-8") as fh:
        for n, line in enumerate(fh):
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3 or (n == 0 and not parts[2].strip().lstrip("-").isdigit()):
                continue
            judged = qrels.setdefault(parts[0], {})
            if int(parts[2]) > 0:
                judged[parts[1]] = int(parts[2])
    queries: dict[str, str] = {}
    with (directory / "queries.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                rec = json.loads(line)
                if str(rec["_id"]) in qrels:
                    queries[str(rec["_id"])] = rec["text"]
    qrels, dropped = keep_relevant({q: r for q, r in qrels.items() if q in queries}, rel_min)
    queries = {q: t for q, t in queries.items() if q in qrels}
    return BeirSet(directory.name, directory, queries, qrels, rel_min, len(dropped))


def keep_relevant(qrels: dict[str, dict[str, int]], rel_min: int = 1
                  ) -> tuple[dict[str, dict[str, int]], list[str]]:
    """``qrels`` without the queries that have no document graded ``rel_min`` or more, and the
    ids of those queries (in ``qrels`` order)."""
    keep = {q: r for q, r in qrels.items() if any(g >= rel_min for g in r.values())}
    return keep, [q for q in qrels if q not in keep]


def derive_title_answer_set(src: Path, out_dir: Path, n_queries: int = 500, seed: int = 0) -> Path:
    """Write a BEIR set from question/answer records: every answer is a document (without its
    question), and ``n_queries`` questions sampled with ``random.Random(seed)`` are the queries,
    each with its own answer as the only relevant document.

    Duplicate ids get ``~2``, ``~3`` ... as ``medbot ingest`` names them. Returns ``out_dir``;
    an existing complete set there is reused.
    """
    out_dir = Path(out_dir)
    if (out_dir / "qrels" / "test.tsv").exists():
        return out_dir
    records, seen = [], set()
    with Path(src).open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            rec = json.loads(line)
            doc_id, n = str(rec["id"]), 2
            while doc_id in seen:
                doc_id, n = f"{rec['id']}~{n}", n + 1
            seen.add(doc_id)
            records.append((doc_id, rec["title"].strip(), rec["text"].strip()))
    picked = random.Random(seed).sample(range(len(records)), n_queries)
    (out_dir / "qrels").mkdir(parents=True, exist_ok=True)
    tmp = out_dir / "corpus.jsonl.tmp"
    with tmp.open("w", encoding="utf-8") as fh:
        for doc_id, _, text in records:
            fh.write(json.dumps({"_id": doc_id, "title": "", "text": text}, ensure_ascii=False) + "\n")
    tmp.replace(out_dir / "corpus.jsonl")
    with (out_dir / "queries.jsonl").open("w", encoding="utf-8") as fh:
        for i in picked:
            fh.write(json.dumps({"_id": f"q-{records[i][0]}", "text": records[i][1]},
                                ensure_ascii=False) + "\n")
    with (out_dir / "qrels" / "test.tsv.tmp").open("w", encoding="utf-8") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for i in picked:
            fh.write(f"q-{records[i][0]}\t{records[i][0]}\t1\n")
    (out_dir / "qrels" / "test.tsv.tmp").replace(out_dir / "qrels" / "test.tsv")
    return out_dir


def dataset_key(ds: BeirSet) -> str:
    """``<dir name>-<8 hex of the corpus and qrels content>``: a cache key per set version."""
    h = hashlib.sha1()
    for p in (ds.corpus_path, ds.directory / "qrels" / "test.tsv"):
        h.update(p.read_bytes())
    return f"{ds.name}-{h.hexdigest()[:8]}"


def default_cache() -> Path:
    """``$MEDBOT_DATA_DIR/bench/retrieval``: derived sets and cached indexes (outside the repo)."""
    from config.settings import get_settings

    return get_settings().data_dir / "bench" / "retrieval"


def resolve_dataset(path: Path, cache: Path, n_queries: int = 500, seed: int = 0,
                    rel_min: int = 1) -> BeirSet:
    """A BEIR directory as is; a question/answer ``.jsonl`` file derived into ``cache`` first
    (``rel_min``: see :func:`load_beir`)."""
    path = Path(path)
    if path.is_file():
        out = cache / "derived" / f"{path.parent.name}-title2answer-{n_queries}q-seed{seed}"
        return load_beir(derive_title_answer_set(path, out, n_queries, seed), rel_min=rel_min)
    return load_beir(path, rel_min=rel_min)
