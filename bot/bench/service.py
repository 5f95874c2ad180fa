"""``medbot bench service``: start-up time, resident memory after a turn, and the query
embedding's latency idle and on a busy machine (docs/benchmarks.md "The service's memory and the embedder on a busy machine").

Each configuration runs in a child process (``python -m bot.bench.service ...``) so its memory
and OpenMP runtime are its own:

- **memory**: the service as ``medbot run`` builds it (``Agent`` + ``Services.warm_up``): time
  to ready, RSS when ready, after an English turn and after a Korean turn (the target is
  ≤ 600 MB after a Korean turn);
- **embedding**: ``embed_query`` p50 / p95 over the questions of :data:`QUESTIONS` (wall and
  CPU), first idle, then while this bench keeps both cores busy with two spinning processes
  (``LOAD_PROCESSES``) at normal priority, for each ``EMBED_THREADS`` setting. The target is a
  loaded p50 within 1.5x of the idle p50.

On a shared machine "idle" means "without the bench's own load": the load average is printed
beside the figures.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import time

from bot.bench.common import rss_mb

QUESTIONS = ["제가 먹는 약 때문에 다리가 부을 수 있나요?", "What are the symptoms of acromegaly?",
             "메트포르민 부작용이 뭔가요?", "How is high blood pressure treated in older adults?",
             "아침마다 머리가 아파요. 혈압이 160/100이었어요.", "Can my medication make my legs swell?",
             "당뇨병 환자는 발 관리를 어떻게 해야 하나요?", "What does an HbA1c of 8.2% mean?"]
LOAD_PROCESSES = 2


def _spin(stop) -> None:
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x += 1


def _times(fn, repeat: int) -> dict[str, float]:
    ms, cpu = [], []
    for i in range(repeat):
        q = QUESTIONS[i % len(QUESTIONS)]
        t0, c0 = time.perf_counter(), time.process_time()
        fn(q)
        ms.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    ms.sort()
    return {"p50": statistics.median(ms), "p95": ms[int(0.95 * (len(ms) - 1))],
            "cpu_p50": statistics.median(cpu)}


def measure_embedding(repeat: int = 40) -> dict:
    """In this process: the configured embedder's ``embed_query`` idle, then under load."""
    from config.settings import get_settings
    from core.services import make_embedder

    s = get_settings()
    emb = make_embedder(s)
    emb.embed_query("warm-up")
    idle = _times(emb.embed_query, repeat)
    stop = mp.Event()
    procs = [mp.Process(target=_spin, args=(stop,), daemon=True) for _ in range(LOAD_PROCESSES)]
    for p in procs:
        p.start()
    time.sleep(1.0)
    try:
        loaded = _times(emb.embed_query, repeat)
    finally:
        stop.set()
        for p in procs:
            p.join()
    return {"threads": s.embed_threads, "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
            "idle": idle, "loaded": loaded, "ratio_p50": loaded["p50"] / idle["p50"]}


def measure_memory() -> dict:
    """In this process: the service built and warmed up, then one English and one Korean turn."""
    import uuid

    from config.settings import get_settings
    from core.agent import Agent
    from core.messages import InboundMessage

    out = {"rss_start_mb": rss_mb()}
    t0 = time.perf_counter()
    agent = Agent(get_settings())
    agent.services.warm_up()
    out.update(ready_s=time.perf_counter() - t0, rss_ready_mb=rss_mb())
    user = f"bench:{uuid.uuid4().hex[:8]}"
    agent.handle(InboundMessage(user_id=user, text="Can my medication make my legs swell?"))
    out["rss_after_english_mb"] = rss_mb()
    agent.handle(InboundMessage(user_id=user, text="제가 먹는 약 때문에 다리가 부을 수 있나요?"))
    out["rss_after_korean_mb"] = rss_mb()
    return out


def _child(kind: str, env: dict[str, str]) -> dict:
    proc = subprocess.run([sys.executable, "-m", "bot.bench.service", kind], capture_output=True,
                          text=True, env={**os.environ, **env})
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"error": (proc.stderr.strip().splitlines() or ["no output"])[-1][:200]}


def bench_service(threads: tuple[int, ...] = (1, 2)) -> dict:
    """Memory of the configured service, and embedding latency for each thread count."""
    return {"load_average": os.getloadavg(), "memory": _child("memory", {}),
            "embedding": [_child("embedding", {"EMBED_THREADS": str(t)}) for t in threads]}


def render(result: dict) -> str:
    """The figures as text."""
    m = result["memory"]
    lines = [f"load average at start: {', '.join(f'{x:.2f}' for x in result['load_average'])}"]
    if "error" in m:
        lines.append(f"memory: {m['error']}")
    else:
        lines.append(f"service ready in {m['ready_s']:.2f} s; RSS ready {m['rss_ready_mb']:.0f} MB, after an "
                     f"English turn {m['rss_after_english_mb']:.0f} MB, after a Korean turn "
                     f"{m['rss_after_korean_mb']:.0f} MB")
    lines.append(f"{'EMBED_THREADS':<15}{'wait policy':<13}{'idle p50':>10}{'p95':>8}{'CPU':>7}"
                 f"{'loaded p50':>12}{'p95':>8}{'CPU':>7}{'ratio':>7}")
    for e in result["embedding"]:
        if "error" in e:
            lines.append(f"error: {e['error']}")
            continue
        i, lo = e["idle"], e["loaded"]
        lines.append(f"{e['threads']:<15}{str(e['omp_wait_policy']):<13}{i['p50']:>10.1f}{i['p95']:>8.1f}"
                     f"{i['cpu_p50']:>7.1f}{lo['p50']:>12.1f}{lo['p95']:>8.1f}{lo['cpu_p50']:>7.1f}"
                     f"{e['ratio_p50']:>7.2f}")
    return "\n".join(lines)


if __name__ == "__main__":
    import core  # noqa: F401  (sets OMP_WAIT_POLICY before OpenMP loads)

    print(json.dumps(measure_memory() if sys.argv[1] == "memory" else measure_embedding()))
