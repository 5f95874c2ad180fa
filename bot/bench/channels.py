"""``medbot bench channels``: turn throughput and latency through the channels' front desk with
many users at once, against one user alone.

Every turn goes the way a Telegram or Slack message goes after translation
(:class:`core.frontdesk.desk.Frontdesk`: rate limit (off here), per-session order, the agent off the
event loop) with the configured knowledge index, a fresh SQLite database, and a loopback
OpenAI-compatible stub that answers every call after a fixed delay
(:mod:`bot.bench.fake_llm`, the one the test suite uses). Each simulated user
sends their next message when the previous reply arrived, like a person. The response cache is
off unless ``--cache`` (repeated questions would otherwise be served from it).
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pydantic import SecretStr

from core.frontdesk.admin import percentile

QUESTIONS = [
    "What are the side effects of metformin?",
    "메트포르민 부작용이 뭔가요?",
    "How is high blood pressure treated?",
    "고혈압 약은 언제 먹어야 하나요?",
    "What is a normal fasting glucose level?",
    "당화혈색소가 8.2%면 높은 건가요?",
    "Can I take ibuprofen with lisinopril?",
    "저는 65세 남성이고 당뇨병이 있어요. 운동은 얼마나 해야 하나요?",
    "What are the symptoms of hypothyroidism?",
    "콜레스테롤 수치를 낮추려면 어떻게 해야 하나요?",
]


def _fake_llm_server(delay_s: float):
    from bot.bench.fake_llm import FakeOpenAIServer

    return FakeOpenAIServer(delay_s=delay_s).start()


def bench_settings(base, data_dir: Path, llm_url: str, cache: bool):
    """The configured settings with a fresh SQLite database, the LLM stub, no rate limit and
    no Redis (one process)."""
    return base.model_copy(update={
        "database_url": f"sqlite:///{data_dir / 'bench.db'}", "redis_url": None,
        "openai_base_url": llm_url, "openai_api_key": SecretStr("sk-bench"),
        "llm_model": "bench-model", "rate_limit_messages": 0,
        "flags": base.flags.model_copy(update={"response_cache_enabled": cache})})


async def _user(frontdesk, name: str, turns: int, offset: int, latencies: list[float]) -> None:
    from core.messages import InboundMessage

    for i in range(turns):
        msg = InboundMessage(channel="bench", user_id=f"bench:{name}", session_id=f"bench:{name}",
                             text=QUESTIONS[(offset + i) % len(QUESTIONS)], locale=None)
        done = asyncio.get_running_loop().create_future()
        t0 = time.perf_counter()

        async def deliver(_reply, done=done, t0=t0):
            latencies.append((time.perf_counter() - t0) * 1000)
            done.set_result(None)

        await frontdesk.submit(msg, deliver)
        await done


async def run_scenario(frontdesk, users: int, turns: int) -> dict[str, float]:
    """``users`` simulated users at once, ``turns`` each; returns turns, wall seconds,
    throughput (turns/s) and latency p50 / p95 / max (ms, message in to reply out)."""
    latencies: list[float] = []
    t0 = time.perf_counter()
    await asyncio.gather(*[_user(frontdesk, f"u{u}-{time.time_ns()}", turns, u, latencies)
                           for u in range(users)])
    wall = time.perf_counter() - t0
    lat = sorted(latencies)
    return {"users": users, "turns": len(lat), "wall_s": round(wall, 2),
            "throughput": round(len(lat) / wall, 2), "p50_ms": percentile(lat, 50),
            "p95_ms": percentile(lat, 95), "max_ms": round(lat[-1], 1) if lat else None}


def bench_channels(users: int = 50, turns: int = 2, solo_turns: int = 10, delay_s: float = 0.3,
                   cache: bool = False) -> dict[str, dict[str, float]]:
    """Run the one-user and the many-users scenarios and print their figures."""
    from config.settings import get_settings
    from core.agent import Agent

    server = _fake_llm_server(delay_s)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            settings = bench_settings(get_settings(), Path(tmp), server.base_url, cache)
            agent = Agent(settings)
            results = asyncio.run(_bench(agent, settings, users, turns, solo_turns))
            llm_calls = len(server.requests_to("/chat/completions"))
    finally:
        server.stop()
    print(f"LLM stub delay {delay_s * 1000:.0f} ms per call; {llm_calls} LLM calls; response cache "
          f"{'on' if cache else 'off'}; MAX_CONCURRENT_TURNS={settings.max_concurrent_turns}")
    print(f"{'scenario':<14}{'turns':>7}{'wall s':>9}{'turns/s':>9}{'p50 ms':>10}{'p95 ms':>10}{'max ms':>10}")
    for name, r in results.items():
        print(f"{name:<14}{r['turns']:>7}{r['wall_s']:>9}{r['throughput']:>9}{r['p50_ms']:>10}"
              f"{r['p95_ms']:>10}{r['max_ms']:>10}")
    return results


async def _bench(agent, settings, users: int, turns: int, solo_turns: int):
    from core.frontdesk.desk import Frontdesk

    asyncio.get_running_loop().set_default_executor(
        ThreadPoolExecutor(max_workers=settings.max_concurrent_turns + 4))
    frontdesk = Frontdesk(agent, settings, redis=None)
    await run_scenario(frontdesk, 1, 2)  # warm-up: index, MedCAT, embedder
    solo = await run_scenario(frontdesk, 1, solo_turns)
    many = await run_scenario(frontdesk, users, turns)
    await frontdesk.close()
    return {"1 user": solo, f"{users} users": many}
