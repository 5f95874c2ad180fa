"""Property: whatever the profile, memories, documents and budgets, the assembled prompt never
exceeds the total token budget (SPEC.md §3.3), and each tier stays within its share."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from config.flags import FeatureFlags
from core.answer.context import assemble_messages, plan_tokens, prompt_tokens, render_documents
from core.memory.tiers import memory_sections
from core.language.tokens import count_tokens, truncate_tokens
from storage.db import make_engine
from storage.models import Fact, MemorySummary
from storage.repositories import Repository

WORDS = ["당뇨병", "고혈압", "메트포르민", "혈압", "150/95", "mmHg", "HbA1c", "8.2%", "운동", "식단",
         "diabetes", "blood", "pressure", "metformin", "의사와", "상의하세요", "🙂", "\n", "-", "…"]
text = st.lists(st.sampled_from(WORDS), min_size=0, max_size=400).map(" ".join)
_ids = itertools.count()


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return Repository(make_engine(f"sqlite:///{tmp_path_factory.mktemp('prop') / 'p.db'}"))


def _store(repo: Repository, user: str, turns: list[tuple[str, str]], summaries: list[str],
           facts: list[str]) -> int:
    repo.ensure_user(user)
    for user_text, reply in turns:
        turn = repo.add_turn(user, "s", user_text or "질문", "ko")
        repo.set_reply(turn, reply, False, {})
    for i, s in enumerate(summaries):
        repo.store_summary(MemorySummary(user_id=user, first_turn_id=i * 5 + 1, last_turn_id=i * 5 + 5,
                                         turn_ids=[], text=s or "요약", tokens=count_tokens(s)))
    repo.save_facts([Fact(user_id=user, slot="condition", key=f"C{i:07d}", name=n or "x",
                          text_value=n or "x", status="active", mentions=2, chronic=True)
                     for i, n in enumerate(facts)], [])
    return repo.add_turn(user, "s", "지금 질문", "ko")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(total=st.integers(1500, 8000), system=st.integers(100, 600), documents=st.integers(100, 1500),
       question=text, profile_line=text, turns=st.lists(st.tuples(text, text), max_size=7),
       summaries=st.lists(text, max_size=5), facts=st.lists(st.text(min_size=1, max_size=40), max_size=12),
       docs=st.lists(text, max_size=10), lang=st.sampled_from(["ko", "en"]),
       hierarchical=st.booleans())
def test_prompt_never_exceeds_the_budget(repo, total, system, documents, question, profile_line,
                                         turns, summaries, facts, docs, lang, hierarchical):
    q_tokens = count_tokens(question)
    try:
        plan = plan_tokens(total, system, documents, q_tokens)
    except ValueError:
        return  # the question alone does not fit: the agent cuts it first (MAX_QUESTION_TOKENS)
    user = f"prop:{next(_ids)}"
    turn_id = _store(repo, user, turns, summaries, facts)
    flags = FeatureFlags(hierarchical_memory_enabled=hierarchical)
    tiers = memory_sections(repo, user, turn_id, profile_line, plan, flags, lang)
    assert tiers.report["tokens"]["semantic"] <= plan.semantic
    assert tiers.report["tokens"]["compressed"] <= plan.compressed
    assert tiers.report["tokens"]["working"] <= plan.working
    doc_rows = [{"title": f"d{i}", "source": "s", "score": 0.5, "text": d} for i, d in enumerate(docs)]
    doc_text, _ = render_documents(doc_rows, plan.documents, lang)
    system_text = " ".join(WORDS) * 20
    sections = [tiers.sections.get(k, "") for k in ("profile", "long_term", "dialogue")] + [doc_text]
    messages = assemble_messages(truncate_tokens(system_text, plan.system), sections, question)
    assert prompt_tokens(messages) <= total
