"""``medbot bench memory``: prompt tokens over a 50-turn conversation, context retention at the
last turn, and the compression job's throughput on 10,000 stored turns (SPEC.md §3.2).

The patient states facts in the first turns, talks about other things, and asks about the early
facts at the end; the compression job runs after every fifth turn, as ``medbot worker`` would.
Retention is the share of the stated facts whose name appears anywhere in the prompt assembled
for the last turn (system, profile, summaries, dialogue, documents).
"""

from __future__ import annotations

import statistics
import tempfile
import time
import uuid
from pathlib import Path

from config.settings import Settings
from core.agent import Agent
from core.memory.compression import compress_all
from core.messages import InboundMessage
from storage.db import make_engine
from storage.models import Turn
from storage.repositories import Repository

EARLY = [
    "안녕하세요. 저는 67세 남성이에요",
    "당뇨병이 12년째 있어요",
    "고혈압도 10년 넘게 있어요",
    "메트포르민을 하루 두 번 먹고 있어요",
    "암로디핀도 매일 먹어요",
    "아토르바스타틴을 자기 전에 먹어요",
    "페니실린 알레르기가 있어요",
    "설파제에도 알레르기가 있어요",
    "지난주 HbA1c가 7.8%였어요",
    "아침 혈압은 142/88 정도예요",
]
MIDDLE = ["요즘 잠을 잘 못 자요", "운동은 하루에 얼마나 하면 좋을까요?", "무릎이 가끔 아파요",
          "저녁에 과일을 먹어도 되나요?", "커피는 하루 몇 잔까지 괜찮아요?", "감기 기운이 있어요",
          "물을 얼마나 마셔야 하나요?"]
LATE = ["제가 먹는 약을 다시 정리해 주세요", "제 알레르기 때문에 피해야 할 약이 있나요?",
        "제 당뇨 관리에서 지금 제일 중요한 게 뭔가요?", "혈압약과 당뇨약을 같이 먹어도 되나요?",
        "제 상태를 요약해 주세요"]
FACTS = {
    "chronic conditions": [("당뇨병", "diabetes"), ("고혈압", "hypertension")],
    "current medications": [("메트포르민", "metformin"), ("암로디핀", "amlodipine"),
                            ("아토르바스타틴", "atorvastatin")],
    "allergies": [("페니실린", "penicillin"), ("설폰아마이드", "sulfonamide")],
    "demographics": [("67세", "67"), ("남성", "male")],
    "labs and vitals": [("7.8", "7.8"), ("142/88", "142/88")],
}


def script() -> list[str]:
    """The 50 turns: 10 early facts, 35 middle turns, 5 late questions about the early facts."""
    middle = [MIDDLE[i % len(MIDDLE)] for i in range(35)]
    return EARLY + middle + LATE


def run_conversation(agent: Agent, settings: Settings) -> tuple[list[int], dict[str, float], dict]:
    """Run the script; returns prompt tokens per turn (-1 for a response-cache hit, which
    assembles no prompt), retention per fact group, and the last turn's trace."""
    user = f"bench:mem-{uuid.uuid4().hex[:6]}"
    tokens: list[int] = []
    trace: dict = {}
    extractor, llm = agent.services.extractor, agent.services.llm
    for i, text in enumerate(script(), 1):
        reply = agent.handle(InboundMessage(user_id=user, text=text))
        trace = reply.trace
        tokens.append(-1 if trace.get("cache_hit") else int(trace.get("prompt_tokens") or 0))
        if i % 5 == 0:
            compress_all(agent.services.repo, extractor, llm)
    prompt = "\n".join(str(v) for v in (trace.get("prompt_sections") or {}).values())
    retention = {group: sum(1 for ko, en in names if ko in prompt or en.lower() in prompt.lower()) / len(names)
                 for group, names in FACTS.items()}
    return tokens, retention, trace


def compression_throughput(extractor, n_turns: int = 10_000, per_user: int = 25) -> dict[str, float]:
    """Store ``n_turns`` answered turns (``per_user`` each) in a fresh SQLite file and time one
    compression run over all of them (offline, extractive). Returns turns/s and counts."""
    with tempfile.TemporaryDirectory() as d:
        repo = Repository(make_engine(f"sqlite:///{Path(d) / 'bench.db'}"))
        from sqlmodel import Session

        users = [f"bench:c{i}" for i in range(n_turns // per_user)]
        for u in users:
            repo.ensure_user(u)
        with Session(repo.engine) as s:
            for u in users:
                for j in range(per_user):
                    s.add(Turn(user_id=u, session_id=u, lang="ko", user_text=EARLY[j % len(EARLY)],
                               reply="식단과 운동을 꾸준히 하시고 의사와 상의하세요."))
            s.commit()
        t0 = time.perf_counter()
        counts = compress_all(repo, extractor, None)
        secs = time.perf_counter() - t0
    return {"turns": counts.turns, "summaries": counts.summaries, "seconds": round(secs, 2),
            "turns_per_s": round(counts.turns / secs, 1) if secs else 0.0}


def bench_memory(settings: Settings, index: Path | None = None, n_turns: int = 10_000) -> dict:
    """Run both parts and print the figures. Returns them.

    The conversation uses a throw-away SQLite database (the configured knowledge index and LLM
    endpoint, if any), so the bench never writes into the service's data.
    """
    tmp = tempfile.mkdtemp(prefix="medbot-bench-")
    settings = settings.model_copy(update={"database_url": f"sqlite:///{Path(tmp) / 'bench.db'}"})
    agent = Agent(settings, index)
    tokens, retention, trace = run_conversation(agent, settings)
    budget = settings.token_budget
    built = [t for t in tokens if t >= 0]
    print(f"50-turn conversation: {len(built)} prompts assembled ({len(tokens) - len(built)} cache hits); "
          f"prompt tokens p50 {statistics.median(built):.0f}, max {max(built)} (budget {budget}; "
          f"all within: {all(t <= budget for t in built)})")
    print("prompt tokens by turn (c = cache hit): " + " ".join("c" if t < 0 else str(t) for t in tokens))
    tiers = (trace.get("memory_tiers") or {}).get("tokens", {})
    print(f"last turn tiers (tokens): {tiers}; summaries in prompt: "
          f"{len((trace.get('memory_tiers') or {}).get('summaries', []))}")
    for group, share in retention.items():
        print(f"retention at turn 50, {group}: {share:.0%}")
    tp = compression_throughput(agent.services.extractor, n_turns)
    print(f"compression job on {n_turns} stored turns: {tp['turns']} turns in {tp['summaries']} "
          f"summaries, {tp['seconds']} s, {tp['turns_per_s']} turns/s (offline, extractive, SQLite)")
    return {"tokens": tokens, "retention": retention, "throughput": tp}
