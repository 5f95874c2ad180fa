"""``medbot bench cache --pairs``: any pair file through the real cache path, JSON figures."""

from __future__ import annotations

import json

from bot.bench.cache import Outcome, bench_cache, choose_thresholds, half_of, scores
from conftest import make_settings


def _o(same, sim, keyed=True, concepts=True):
    return Outcome("s", "en", "", same, keyed, False, sim, concepts, "tune")


def test_scores_and_threshold_choice():
    outs = [_o(True, 0.97), _o(True, 0.93), _o(False, 0.95), _o(False, 0.99, keyed=False),
            _o(True, 0.985, concepts=False), _o(False, 0.97, concepts=False)]
    s = scores(outs, 0.9, 0.9)
    assert (s["false_hits"], s["recall"]) == (2, 1.0)
    t, te, best = choose_thresholds(outs)
    assert best["false_hits"] == 0 and best["precision"] == 1.0
    # the 0.93 paraphrase cannot hit without the 0.95 negative: the best is 2 of 3, and
    # among equal recalls the highest (safest) thresholds
    assert (t, te, best["recall"]) == (0.97, 0.985, 0.6667)
    assert half_of({"a": "x", "b": "y"}) in ("tune", "report")


def test_pairs_file_runs_through_the_cache(tmp_path, default_index, capsys):
    pairs = [{"a": "What are the side effects of metformin?",
              "b": "What are the side effects of metformin?", "same": True, "lang": "en"},
             {"a": "What are the side effects of metformin?",
              "b": "What is the usual dose of metformin?", "same": False, "lang": "en"},
             {"a": "메트포르민 부작용이 뭔가요?", "b": "인슐린 부작용이 뭔가요?", "same": False, "lang": "ko"}]
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(json.dumps(p, ensure_ascii=False) for p in pairs), "utf-8")
    result = bench_cache(make_settings(tmp_path, default_index), path, None, as_json=True)
    printed = json.loads(capsys.readouterr().out)
    assert printed["precision"] == result["precision"] == 1.0
    assert printed["recall"] == 1.0 and printed["false_hits"] == 0
    assert set(printed["by_language"]) == {"all", "en", "ko"}
