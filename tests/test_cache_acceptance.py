"""Acceptance tests of the structured cache key (SPEC.md §11): each part of the structured cache key makes a miss, a paraphrase
hits, personal answers stay with their owner, and style variation changes a served hit.

The offline agent on the bundled corpus; a low ``cache_similarity_threshold`` in the "miss"
tests shows that the key, not the cosine threshold, keeps the answers apart.
"""

from __future__ import annotations

import pytest

from core.frontdesk.admin import service_stats
from core.agent import Agent
from core.messages import InboundMessage, OutboundMessage
from storage.models import CacheEntry

LOW = {"cache_similarity_threshold": 0.5}  # any cosine would do: only the key can refuse


def ask(agent: Agent, user: str, text: str, **flags) -> OutboundMessage:
    return agent.handle(InboundMessage(user_id=user, text=text, flags=flags))


def nodes(reply: OutboundMessage) -> list[str]:
    return [n["node"] for n in reply.trace["nodes"]]


def cached(agent: Agent, question: str) -> CacheEntry:
    entries = [e for e in agent.services.repo.cache_entries(agent.services.cache.ids()).values()
               if e.question == question]
    assert entries, f"not cached: {question}"
    return entries[-1]


def first(agent: Agent, question: str, user: str = "key:first") -> OutboundMessage:
    """Ask on a fresh user's first turn (no memory: a shared entry) and check it was cached."""
    reply = ask(agent, user, question)
    assert reply.trace["cache_hit"] is None
    assert cached(agent, question).owner_user_id is None
    return reply


def test_paraphrase_hits(agent):
    a = first(agent, "What are the side effects of metformin?")
    b = ask(agent, "key:second", "What side effects does metformin have?")
    assert b.trace["cache_hit"] is not None, b.trace.get("cache_key")
    assert b.trace["cache_hit"]["kind"] == "semantic"
    assert "retrieve" not in nodes(b) and "generate_answer" not in nodes(b)
    assert b.text == a.text


@pytest.mark.parametrize("stored,asked,part", [
    ("What are the side effects of metformin?", "What are the side effects of insulin?", "concepts"),
    ("메트포르민 부작용이 뭔가요?", "인슐린 부작용이 뭔가요?", "concepts"),
    ("What are the side effects of metformin?", "What is the usual dose of metformin?", "qtype"),
    ("메트포르민 부작용이 뭔가요?", "메트포르민 용량은 얼마인가요?", "qtype"),
    ("What foods are good for gout?", "What foods are bad for gout?", "polarity"),
    ("통풍에 좋은 음식은 뭔가요?", "통풍에 나쁜 음식은 뭔가요?", "polarity"),
    ("What are the side effects of metformin?", "메트포르민 부작용이 뭔가요?", "lang"),
])
def test_each_part_of_the_key_makes_a_miss(agent, stored, asked, part):
    first(agent, stored)
    reply = ask(agent, "key:second", asked, **LOW)
    assert reply.trace["cache_hit"] is None, (part, reply.trace.get("cache_key"))
    assert "retrieve" in nodes(reply)
    assert cached(agent, stored).struct_key != reply.trace["cache_key"]["digest"]


def test_another_users_personal_answer_misses_and_the_owner_is_served(agent):
    no_history = {"include_history": False}  # the profile is then the only user content
    ask(agent, "key:owner", "저는 당뇨병이 있고 메트포르민을 먹어요", **no_history)
    q = "메트포르민 부작용이 뭔가요?"
    own = ask(agent, "key:owner", q, **no_history)
    entry = cached(agent, q)
    assert entry.owner_user_id == "key:owner" and entry.profile_fingerprint
    other = ask(agent, "key:other", q, **LOW)
    assert other.trace["cache_hit"] is None and "retrieve" in nodes(other)
    again = ask(agent, "key:owner", q, **no_history)
    assert again.trace["cache_hit"] is not None and again.text == own.text
    assert again.trace["cache_hit"]["shared"] is False  # the owner's own entry, by id only
    assert set(again.trace["cache_hit"]) >= {"entry_id", "kind", "similarity"}
    assert "question" not in again.trace["cache_hit"] and "owner_user_id" not in again.trace["cache_hit"]
    assert "generate_answer" not in nodes(again)
    ask(agent, "key:owner", "요즘 혈압이 150/95 정도 나와요", **no_history)  # a fact changes
    changed = ask(agent, "key:owner", q, **no_history)
    assert changed.trace["cache_hit"] is None


def test_an_answer_built_with_the_dialogue_is_owned(agent):
    ask(agent, "key:talker", "안녕하세요, 오늘 처음 왔어요")
    ask(agent, "key:talker", "What are the side effects of metformin?")
    entry = cached(agent, "What are the side effects of metformin?")
    assert entry.owner_user_id == "key:talker"
    other = ask(agent, "key:other", "What are the side effects of metformin?", **LOW)
    assert other.trace["cache_hit"] is None


def test_style_variation_flag_changes_the_served_text(agent):
    a = first(agent, "What are the side effects of metformin?")
    plain = ask(agent, "key:b", "What are the side effects of metformin?")
    varied = ask(agent, "key:c", "What are the side effects of metformin?",
                 style_variation_level=1.0)
    assert plain.trace["cache_hit"] and varied.trace["cache_hit"]
    assert plain.text == a.text
    assert varied.text != a.text
    assert [s.doc_id for s in varied.sources] == [s.doc_id for s in a.sources]


def test_stats_show_what_hits_saved(agent):
    first(agent, "What are the side effects of metformin?")
    ask(agent, "key:b", "What are the side effects of metformin?")
    stats = service_stats(agent.services.repo.engine)
    assert stats["cache_hits"] == 1
    assert stats["cache_saved"]["ms"] > 0
    assert stats["cache_saved"]["tokens"] == 0  # the offline generator spends no LLM tokens


def test_a_content_word_outside_the_key_makes_a_miss(agent):
    """Same key (concepts, question type, polarity, numbers), one content word apart: the
    content veto refuses what no cosine threshold could."""
    stored = "How long does it take to recover from a broken arm?"
    first(agent, stored)
    reply = ask(agent, "key:second", "How long does it take to recover from a broken hip?", **LOW)
    assert reply.trace["cache_hit"] is None and "retrieve" in nodes(reply)
    assert cached(agent, stored).struct_key == reply.trace["cache_key"]["digest"]
