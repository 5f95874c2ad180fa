"""The scoring rules of ``medbot bench answers`` and the console's log level."""

from __future__ import annotations

import subprocess
import sys

import pytest

from bot.bench.answers.data import Question, korean_questions, split_of
from bot.bench.answers.scoring import on_topic, parse_bullets, rouge_l


def q(relevant: dict[str, int]) -> Question:
    return Question("q1", "Can amlodipine make my ankles swell?", "en", relevant, "ref", "A")


def test_split_is_fixed_by_id_and_both_halves_are_used():
    assert split_of("ko-q001") == split_of("ko-q001")
    splits = [x.split for x in korean_questions()]
    assert len(splits) == 133
    assert 40 < splits.count("holdout") < 93 and splits.count("tune") + splits.count("holdout") == 133


def test_parse_bullets_maps_citations_to_source_ids():
    text = ("Opening line.\n\n- First quote. [2]\n- Second quote. [1] (quoted from a Korean source)\n"
            "- Cites nothing real. [9]\n\nNote: disclaimer.")
    sources = [{"doc_id": "A"}, {"doc_id": "B"}]
    assert parse_bullets(text, sources) == [("First quote.", "B"), ("Second quote.", "A")]


def test_on_topic_rule():
    texts = {"A": "Amlodipine often causes ankle swelling. It is taken once daily.",
             "B": "Related text. Amlodipine often causes ankle swelling.",
             "C": "Bisphosphonates are taken on an empty stomach."}
    question = q({"A": 2, "B": 1})
    assert on_topic("Any sentence.", "A", question, texts)                    # cites a relevant document
    assert on_topic("Amlodipine often causes ankle swelling.", "C", question, texts)  # verbatim in one
    assert not on_topic("Bisphosphonates are taken on an empty stomach.", "C", question, texts)
    assert on_topic("Related text.", "B", question, texts)
    assert not on_topic("Related text.", "B", question, texts, strict=True)    # grade 1 only


def test_korean_relevance_includes_the_english_twin():
    first = korean_questions()[0]
    assert first.relevant["kb-ckd-ko-001"] == 2 and first.relevant["kb-ckd-en-001"] == 2
    assert first.reference_doc == "kb-ckd-ko-001" and "콩팥" in first.reference


def test_rouge_l_counts_korean_words():
    ref = "가장 흔한 부작용은 발목과 발이 붓는 것입니다"
    assert rouge_l(ref, ref) == pytest.approx(1.0)
    assert 0 < rouge_l("발목과 발이 붓는 것", ref) < 1
    assert rouge_l("완전히 다른 문장", ref) == 0.0


def test_console_logging_drops_library_debug_lines():
    code = ("import logging, bm25s\nfrom bot.cli import _setup_logging\n_setup_logging()\n"
            "logging.getLogger('bm25s').debug('DEBUG-LINE')\nlogging.getLogger('x').warning('WARN-LINE')\n")
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin"}).stderr
    assert "WARN-LINE" in err and "DEBUG-LINE" not in err
