"""Question sets, splits and the answer record of ``medbot bench answers``."""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
K_DOCS = 3


def log(msg: str) -> None:
    """A progress line on stderr (the tables go to stdout)."""
    print(msg, file=sys.stderr, flush=True)


def split_of(qid: str) -> str:
    """``holdout`` when the MD5 of the id ends in an odd hex digit, else ``tune``."""
    return "holdout" if int(hashlib.md5(qid.encode()).hexdigest()[-1], 16) % 2 else "tune"


@dataclass
class Question:
    """One benchmark question: relevance grades by document id and the reference answer."""

    qid: str
    text: str
    lang: str
    relevant: dict[str, int]
    reference: str
    reference_doc: str
    split: str = ""

    def __post_init__(self) -> None:
        self.split = self.split or split_of(self.qid)


@dataclass
class Answer:
    """A generated answer reduced to what is scored: bullets (text, cited doc id), latency."""

    bullets: list[tuple[str, str]]
    ms: float
    cpu_ms: float


# -- question sets --------------------------------------------------------------------------------

def korean_questions(path: Path | None = None) -> list[Question]:
    """The team's Korean set over the bundled corpus; references are the grade-2 documents."""
    from bot.bench.retrieval.korean import KOREAN_SET
    from core.knowledge import corpus_paths

    texts = {}
    for p in corpus_paths():
        for line in p.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            texts[rec["id"]] = rec["text"]
    out = []
    for line in Path(path or KOREAN_SET).read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        rel = dict(rec["relevant"])
        for d, g in list(rel.items()):  # the English twin of a relevant document says the same
            rel.setdefault(d.replace("-ko-", "-en-"), g)
        best = max(rec["relevant"], key=lambda d: rec["relevant"][d])
        out.append(Question(rec["id"], rec["query"], "ko", rel, texts[best], best))
    return out


def medquad_questions(corpus: Path, cache: Path, n: int = 500, seed: int = 0) -> tuple[list[Question], Path]:
    """The retrieval bench's MedQuAD sample; relevance extended to same focus + qtype answers.

    Returns:
        (questions, the bench's index directory for that set).
    Raises:
        FileNotFoundError: the index was never built (run ``medbot bench retrieval`` first).
    """
    from bot.bench.retrieval.datasets import dataset_key, resolve_dataset

    ds = resolve_dataset(Path(corpus), cache, n, seed)
    index_dir = cache / f"{dataset_key(ds)}-doc"
    if not (index_dir / "manifest.json").exists():
        raise FileNotFoundError(f"no MedQuAD index at {index_dir}: run `medbot bench retrieval "
                                f"--dataset {corpus}` first")
    recs, seen = {}, set()
    for line in Path(corpus).read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        doc_id, k = str(rec["id"]), 2
        while doc_id in seen:
            doc_id, k = f"{rec['id']}~{k}", k + 1
        seen.add(doc_id)
        recs[doc_id] = rec
    groups: dict[tuple[str, str], list[str]] = {}
    for doc_id, rec in recs.items():
        groups.setdefault((str(rec.get("focus", "")).lower(), str(rec.get("qtype", ""))), []).append(doc_id)
    out = []
    for qid, text in ds.queries.items():
        gold = next(iter(ds.qrels[qid]))
        rec = recs[gold]
        same = groups.get((str(rec.get("focus", "")).lower(), str(rec.get("qtype", ""))), [])
        rel = {d: 1 for d in same} | {gold: 2}
        out.append(Question(qid, text, "en", rel, rec["text"], gold))
    return out, index_dir


