"""``medbot bench cache``: calibrate the semantic-cache cosine threshold for the embedder.

Pairs (``core/cache/data/calibration_pairs.jsonl``, written by the team): paraphrases that
deserve the same answer (``same: true``) and hard negatives on the same topic that need a
different one. For each threshold the table gives precision (share of pairs served from cache
that were true paraphrases), recall, and the false-hit rate on negatives. A wrong cached answer
is worse than a miss, so the default is the lowest threshold whose precision is 1.0 on these
pairs, rounded up to 0.01.
"""

from __future__ import annotations

import json
from importlib import resources

import numpy as np


def load_pairs() -> list[dict]:
    """The bundled calibration pairs."""
    text = resources.files("core.cache").joinpath("data/calibration_pairs.jsonl").read_text("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def pair_scores(embedder, pairs: list[dict]) -> np.ndarray:
    """Cosine of each pair's two questions (query embeddings, as the cache embeds them)."""
    return np.asarray([float(embedder.embed_query(p["a"]) @ embedder.embed_query(p["b"]))
                       for p in pairs])


def threshold_table(scores: np.ndarray, same: np.ndarray, thresholds) -> list[dict]:
    """Precision, recall and false-hit rate of ``cosine ≥ t`` for each t."""
    rows = []
    for t in thresholds:
        hit = scores >= t
        tp, fp = int((hit & same).sum()), int((hit & ~same).sum())
        rows.append({"threshold": round(float(t), 3), "precision": tp / (tp + fp) if tp + fp else 1.0,
                     "recall": tp / int(same.sum()), "false_hit_rate": fp / int((~same).sum()),
                     "hits": tp + fp})
    return rows


def bench_cache(embedder) -> dict:
    """Print the calibration table per language and overall; returns the chosen threshold."""
    pairs = load_pairs()
    scores = pair_scores(embedder, pairs)
    same = np.asarray([bool(p["same"]) for p in pairs])
    out = {}
    for lang in ("ko", "en", "all"):
        mask = np.ones(len(pairs), bool) if lang == "all" else np.asarray([p["lang"] == lang for p in pairs])
        s, y = scores[mask], same[mask]
        neg_max = float(s[~y].max())
        print(f"\n[{lang}] {mask.sum()} pairs ({int(y.sum())} paraphrases): paraphrase cosine "
              f"median {np.median(s[y]):.3f}, min {s[y].min():.3f}; hard-negative median "
              f"{np.median(s[~y]):.3f}, max {neg_max:.3f}")
        print(f"{'threshold':>10}{'precision':>11}{'recall':>9}{'false hits':>12}")
        for row in threshold_table(s, y, np.arange(0.85, 0.991, 0.01)):
            print(f"{row['threshold']:>10.2f}{row['precision']:>11.3f}{row['recall']:>9.3f}"
                  f"{row['false_hit_rate']:>12.3f}")
        out[lang] = {"negative_max": neg_max}
    chosen = float(np.ceil(out["all"]["negative_max"] * 100 + 1e-9) / 100)
    print(f"\nlowest threshold with no false hit on these pairs: {chosen:.2f} ({embedder.name})")
    out["chosen"] = chosen
    return out
