"""Token plan, budgeted sections, quality formulas, cache-serving rule, intent rules."""

from __future__ import annotations

import pytest

from config.flags import FeatureFlags
from core.cache.response_cache import CacheCandidate, usable
from core.answer.context import (SEPARATOR_RESERVE, assemble_messages, frame_tokens, plan_tokens,
                          prompt_tokens, render_dialogue, render_documents, render_section)
from core.nodes.intent import classify
from core.answer.quality import heuristic_score
from core.language.tokens import count_tokens


def test_plan_splits_history_semantic_20_compressed_30_working_50():
    p = plan_tokens(4000, 400, 900, 100)
    rem = 4000 - 400 - 900 - 100 - SEPARATOR_RESERVE - frame_tokens()
    assert (p.semantic, p.compressed) == (int(rem * 0.2), int(rem * 0.3))
    assert p.semantic + p.compressed + p.working == rem
    assert p.working >= rem // 2


def test_question_too_long_for_budget_raises():
    with pytest.raises(ValueError):
        plan_tokens(1000, 400, 900, 50)


def test_assembled_prompt_never_exceeds_budget():
    long_text = "혈압 관리와 당뇨병 식단에 대한 아주 긴 설명입니다. " * 400
    p = plan_tokens(4000, 400, 900, count_tokens("질문"))
    docs = [{"title": f"doc{i}", "source": "s", "score": 0.1, "text": long_text} for i in range(8)]
    doc_text, n = render_documents(docs, p.documents, "ko")
    sections = [render_section("profile", long_text, p.semantic, "ko"),
                render_section("long_term", long_text, p.compressed, "ko"),
                render_dialogue([(long_text, long_text)] * 5 + [("짧은 질문", "짧은 답")], p.working, "ko"),
                doc_text]
    msgs = assemble_messages(long_text[:300], sections, "질문")
    assert count_tokens(doc_text) <= p.documents and 1 <= n <= 8
    assert prompt_tokens(msgs) <= 4000


def test_dialogue_keeps_newest_turns():
    text = render_dialogue([("첫 번째 " * 50, None), ("마지막 질문", "답")], 40, "ko")
    assert "마지막 질문" in text and "첫 번째" not in text


def test_checker_quality_formula():
    from core.answer.quality import checker_score
    from core.verification.result import SentenceVerdict, Verification

    check = Verification("offline", 0.5, [SentenceVerdict(0, "a", (1,), 0.9, True),
                                          SentenceVerdict(1, "b", (1,), 0.2, False)])
    answer = "메트포르민의 흔한 부작용은 설사입니다 [1]. " * 20
    q = checker_score(check, answer, ["메트포르민", "고혈압"], ["고혈압"])
    assert q.grounding == 0.5 and q.length == 1.0 and q.personalization == 0.5
    assert q.overall == pytest.approx(0.3 * 1.0 + 0.4 * 0.5 + 0.3 * 0.5)
    assert q.missing_info == ["고혈압"] and q.method == "checker:offline"
    assert checker_score(Verification("offline", 0.5), "", [], []).grounding == 0.0  # no claim: nothing grounded


def test_heuristic_formula():
    answer = "메트포르민의 흔한 부작용은 설사입니다 [1]. " * 20
    q = heuristic_score(answer, n_docs=3, profile_terms=["메트포르민"], uncovered_terms=[])
    assert q.length == 1.0 and q.evidence == pytest.approx(1 / 3, abs=1e-3) and q.personalization == 1.0
    assert q.overall == pytest.approx(0.3 + 0.4 / 3 + 0.3, abs=1e-3)
    assert heuristic_score("짧은 답", 0, [], []).evidence == 0.0


def test_personalised_cache_entries_serve_only_their_owner():
    generic = CacheCandidate(1, 0.99, "semantic", None, None)
    mine = CacheCandidate(2, 1.0, "exact", "u1", "fp1")
    assert usable(generic, "anyone", "x")
    assert usable(mine, "u1", "fp1")
    assert not usable(mine, "u2", "fp1")
    assert not usable(mine, "u1", "fp-changed")


@pytest.mark.parametrize("text,label", [("안녕하세요", "greeting"), ("Hello!", "greeting"),
                                        ("감사합니다", "acknowledgement"), ("thanks", "acknowledgement")])
def test_greetings_skip_retrieval(text, label):
    intent = classify(text, 0, FeatureFlags())
    assert intent["label"] == label and intent["skip_retrieval"] is True


def test_k_by_complexity():
    f = FeatureFlags()
    assert classify("혈압약 부작용?", 1, f)["k"] == 3
    assert classify("당뇨와 고혈압이 있는데 운동은?", 2, f)["k"] == 8
    assert classify("x " * 10, 5, f)["k"] == 15
    assert classify("왜 혈압이 오르나요?", 0, f)["complexity"] == "moderate"
    assert classify("혈압", 0, FeatureFlags(active_retrieval_enabled=False))["k"] == 8
