"""Hierarchical memory (SPEC.md §3.2): the three tiers in the prompt after 12 turns, and the
five-turn compression job: exactly once, crash-safe (a worker killed mid-job), never replacing
memory with a failed or empty summary. Runs on SQLite and on Postgres (``db_url``)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest
from sqlmodel import Session, select

from core.agent import Agent
from core.memory.compression import compress_all, run_memory_compression
from core.messages import InboundMessage
from storage.models import MemorySummary, Turn
from tests.conftest import CACHE, make_settings
from bot.bench.fake_llm import FakeOpenAIServer

TWELVE = [
    "안녕하세요, 저는 62세 여성이에요",
    "당뇨병이 10년째 있어요",
    "메트포르민을 먹고 있어요",
    "페니실린 알레르기가 있어요",
    "요즘 혈압이 145/92 정도 나와요",
    "고지혈증도 있다고 들었어요",
    "아토르바스타틴을 처방받았어요",
    "메트포르민은 아침 저녁으로 먹어요",
    "무릎이 아파서 걷기가 힘들어요",
    "공복혈당은 150이에요",
    "운동은 어떻게 하면 좋을까요?",
    "당뇨병 때문에 발 관리가 걱정돼요",
]


def _ask(agent, user, text):
    return agent.handle(InboundMessage(user_id=user, text=text))


def _turns(engine, user):
    with Session(engine) as s:
        return list(s.exec(select(Turn).where(Turn.user_id == user).order_by(Turn.id)).all())


def _summaries(engine, user):
    with Session(engine) as s:
        return list(s.exec(select(MemorySummary).where(MemorySummary.user_id == user)
                           .order_by(MemorySummary.first_turn_id)).all())


@pytest.fixture
def mem_settings(db_url, tmp_path, default_index):
    return make_settings(tmp_path, default_index, DATABASE_URL=db_url)


def test_after_twelve_turns_the_prompt_holds_all_three_tiers(mem_settings):
    agent = Agent(mem_settings)
    user = "mem:twelve"
    for i, text in enumerate(TWELVE, 1):
        _ask(agent, user, text)
        if i in (5, 10):  # the scheduled job's runs
            assert run_memory_compression(mem_settings).counts["summaries"] == 1
    engine = agent.services.repo.engine
    turns = _turns(engine, user)
    summaries = _summaries(engine, user)
    assert [s.turn_ids for s in summaries] == [[t.id for t in turns[0:5]], [t.id for t in turns[5:10]]]
    assert all(0 < s.tokens <= 200 for s in summaries)
    reply = _ask(agent, user, "제 상태를 정리해 주세요")
    sections, tiers = reply.trace["prompt_sections"], reply.trace["memory_tiers"]
    assert tiers["working_turns"] == [t.id for t in turns[7:12]]
    for t in turns[7:12]:
        assert t.user_text in sections["dialogue"]
    assert turns[6].user_text not in sections["dialogue"]
    assert tiers["summaries"] == [s.id for s in summaries]
    for s in summaries:
        assert s.text in sections["long_term"]  # as the job made it
    assert {"diabetes mellitus", "penicillins"} <= set(tiers["semantic_facts"])
    assert "페니실린" in sections["profile"] and "당뇨병" in sections["profile"]
    plan = reply.trace["token_plan"]
    for tier, key in (("semantic", "semantic"), ("compressed", "compressed"), ("working", "working")):
        assert 0 < tiers["tokens"][tier] <= plan[key]
    assert reply.trace["prompt_tokens"] <= plan["total"]


def _seed(agent, users, n):
    for u in users:
        for i in range(n):
            _ask(agent, u, f"혈압이 {130 + i}/85 이에요")


def test_compression_is_idempotent_and_each_turn_is_compressed_once(mem_settings):
    agent = Agent(mem_settings)
    _seed(agent, ["mem:a", "mem:b"], 11)
    first = run_memory_compression(mem_settings)
    assert first.counts["summaries"] == 4 and first.counts["turns"] == 20
    assert run_memory_compression(mem_settings).counts["summaries"] == 0
    engine = agent.services.repo.engine
    for u in ("mem:a", "mem:b"):
        turns = _turns(engine, u)
        assert [t.summary_id is not None for t in turns] == [True] * 10 + [False]
        covered = [i for s in _summaries(engine, u) for i in s.turn_ids]
        assert sorted(covered) == [t.id for t in turns[:10]]


def test_two_workers_racing_compress_each_turn_once(mem_settings):
    agent = Agent(mem_settings)
    _seed(agent, ["mem:r1", "mem:r2", "mem:r3"], 10)
    repo, ex = agent.services.repo, agent.services.extractor
    threads = [threading.Thread(target=compress_all, args=(repo, ex, None)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for u in ("mem:r1", "mem:r2", "mem:r3"):
        covered = [i for s in _summaries(repo.engine, u) for i in s.turn_ids]
        assert sorted(covered) == [t.id for t in _turns(repo.engine, u)]  # no duplicates, none lost


def test_failed_or_empty_summary_never_replaces_memory(mem_settings, monkeypatch):
    agent = Agent(mem_settings)
    _seed(agent, ["mem:f"], 5)
    import core.memory.compression as comp
    from core.memory.summarize import Summary

    monkeypatch.setattr(comp, "summarize", lambda *a, **k: Summary("  ", 0, "extractive"))
    assert run_memory_compression(mem_settings).counts["skipped"] == 1

    def boom(*_a, **_k):
        raise RuntimeError("summarizer crashed")

    monkeypatch.setattr(comp, "summarize", boom)
    assert run_memory_compression(mem_settings).counts["skipped"] == 1
    engine = agent.services.repo.engine
    assert _summaries(engine, "mem:f") == []
    assert all(t.summary_id is None for t in _turns(engine, "mem:f"))
    monkeypatch.undo()
    assert run_memory_compression(mem_settings).counts["summaries"] == 1


def test_llm_summary_when_an_endpoint_is_configured(db_url, tmp_path, default_index):
    with FakeOpenAIServer() as server:
        settings = make_settings(tmp_path, default_index, DATABASE_URL=db_url, OPENAI_API_KEY="k",
                                 OPENAI_BASE_URL=server.base_url, LLM_MODEL="fake")
        agent = Agent(make_settings(tmp_path, default_index, DATABASE_URL=db_url))
        _seed(agent, ["mem:llm"], 5)
        server.script_chat("요약: 혈압 130~134/85, 관리 계획 없음")
        result = run_memory_compression(settings)
        assert result.counts == {"users": 1, "summaries": 1, "turns": 5, "skipped": 0, "llm_calls": 1}
        [summary] = _summaries(agent.services.repo.engine, "mem:llm")
        assert summary.method == "llm" and summary.text.startswith("요약: 혈압")
        prompt = server.requests_to("/chat/completions")[-1]["json"]["messages"]
        assert "혈압이 130/85" in prompt[-1]["content"]


def test_worker_killed_mid_compression_loses_and_duplicates_nothing(db_url, tmp_path, default_index):
    agent = Agent(make_settings(tmp_path, default_index, DATABASE_URL=db_url))
    _seed(agent, ["mem:k1", "mem:k2"], 10)
    engine = agent.services.repo.engine
    with FakeOpenAIServer(delay_s=30) as server:
        env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL",)}
        env.update(DATABASE_URL=db_url, MEDBOT_DATA_DIR=str(tmp_path), MEDCAT_PACKS_DIR=str(CACHE / "medcat"),
                   OPENAI_API_KEY="k", OPENAI_BASE_URL=server.base_url, LLM_MODEL="fake",
                   LLM_MAX_RETRIES="0", JOB_LOCK_TTL_S="2")
        proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "jobs", "run", "memory_compression"],
                                cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 90
        while not server.requests_to("/chat/completions") and time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(proc.stderr.read().decode())
            time.sleep(0.05)
        assert server.requests_to("/chat/completions"), "the job never reached the summary call"
        proc.kill()  # SIGKILL while the first summary is being written
        proc.wait(30)
        assert _summaries(engine, "mem:k1") == [] and _summaries(engine, "mem:k2") == []
        assert all(t.summary_id is None for u in ("mem:k1", "mem:k2") for t in _turns(engine, u))
        server.delay_s = 0
        out = subprocess.run([sys.executable, "-m", "bot.cli", "jobs", "run", "memory_compression",
                              "--wait", "30"], cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=180)
        assert out.returncode == 0, out.stderr
    for u in ("mem:k1", "mem:k2"):
        summaries = _summaries(engine, u)
        covered = [i for s in summaries for i in s.turn_ids]
        assert len(summaries) == 2 and sorted(covered) == [t.id for t in _turns(engine, u)]
