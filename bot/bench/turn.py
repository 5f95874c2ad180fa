"""``medbot bench turn``: per-node latency over the five-turn script of the agent-core issue."""

from __future__ import annotations

import statistics
import time
import uuid
from pathlib import Path

from bot.bench.common import percentile
from core.agent import Agent
from core.messages import InboundMessage

FIVE_TURNS = [
    "안녕하세요",
    "저는 65세 남성이고 10년째 당뇨병이 있어요. 메트포르민을 먹고 있어요.",
    "요즘 혈압이 150/95 정도 나와요",
    "공복혈당은 180이고 HbA1c는 8.2%예요",
    "제가 먹는 약의 부작용이 뭔가요?",
]


def bench_turn(repeat: int, index: Path | None) -> dict[str, dict[str, float]]:
    """Run the script ``repeat`` times (a fresh user each time, one warm-up run first) and
    print p50 / p95 ms per node and per turn. Returns the table."""
    t0 = time.perf_counter()
    agent = Agent(index_dir=index)
    agent.handle(InboundMessage(user_id=f"bench:warmup-{uuid.uuid4().hex[:6]}", text=FIVE_TURNS[4]))
    startup = time.perf_counter() - t0
    per_node: dict[str, list[float]] = {}
    per_turn: list[float] = []
    for _ in range(repeat):
        user = f"bench:{uuid.uuid4().hex[:8]}"
        for text in FIVE_TURNS:
            s = time.perf_counter()
            reply = agent.handle(InboundMessage(user_id=user, text=text,
                                                flags={"response_cache_enabled": False}))
            per_turn.append((time.perf_counter() - s) * 1000)
            for row in reply.trace.get("nodes", []):
                per_node.setdefault(row["node"], []).append(row["ms"])
    table = {n: {"calls": len(v), "p50": percentile(v, 50), "p95": percentile(v, 95)}
             for n, v in per_node.items()}
    table["turn (end to end)"] = {"calls": len(per_turn), "p50": percentile(per_turn, 50),
                                  "p95": percentile(per_turn, 95)}
    print(f"startup + warm-up turn: {startup:.2f} s; {repeat} runs x {len(FIVE_TURNS)} turns, "
          f"response cache off")
    print(f"{'node':<22}{'calls':>7}{'p50 ms':>10}{'p95 ms':>10}")
    for name, row in table.items():
        print(f"{name:<22}{row['calls']:>7}{row['p50']:>10.2f}{row['p95']:>10.2f}")
    print(f"(mean of per-turn ms: {statistics.mean(per_turn):.1f})")
    return table
