"""``medbot bench llm``: prompt and generation speed of the local server per thread setting.

Each setting runs in its own ``medbot llm serve`` process (``OMP_WAIT_POLICY`` is read when
llama.cpp's OpenMP runtime loads, so it cannot change inside one process). One warm-up request,
then ``repeat`` requests of a fixed ~600-token prompt and 64 generated tokens; the speeds are
llama.cpp's own ``timings`` (tokens/s of prompt processing and of generation), so HTTP and
Python overhead are not counted.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass

PROMPT = ("Metformin lowers blood glucose mainly by reducing the glucose the liver releases. " * 40
          + "\nIn two sentences, what does metformin do?")

SETTINGS = {  # name -> (threads, extra environment)
    "1 thread": (1, {"OMP_WAIT_POLICY": "PASSIVE"}),
    "2 threads, OMP_WAIT_POLICY=PASSIVE": (2, {"OMP_WAIT_POLICY": "PASSIVE"}),
    "2 threads, default wait policy": (2, {"OMP_WAIT_POLICY": "ACTIVE"}),
}


@dataclass
class Speed:
    """Median tokens/s of prompt processing and generation over the timed requests."""

    setting: str
    prompt_tps: float
    gen_tps: float
    requests: int


def _start(model: str, threads: int, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    cmd = [sys.executable, "-m", "bot.cli", "llm", "serve", "--model", model, "--port", "0",
           "--threads", str(threads), "--no-verify"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env={**os.environ, **env})
    assert proc.stdout is not None
    for line in proc.stdout:
        if "export OPENAI_BASE_URL=" in line:
            return proc, line.split("=", 1)[1].strip()
    raise RuntimeError(f"server did not start (exit {proc.wait()})")


def _timed_request(base_url: str, max_tokens: int) -> dict[str, float]:
    body = json.dumps({"model": "bench", "messages": [{"role": "user", "content": PROMPT}],
                       "max_tokens": max_tokens, "temperature": 0, "cache_prompt": False,
                       "ignore_eos": True}).encode()
    req = urllib.request.Request(f"{base_url}/chat/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as resp:
        return json.loads(resp.read())["timings"]


def measure(model: str, name: str, repeat: int = 3, max_tokens: int = 64) -> Speed:
    """Serve ``model`` with setting ``name`` (a key of :data:`SETTINGS`) and time it."""
    threads, env = SETTINGS[name]
    proc, base_url = _start(model, threads, env)
    try:
        _timed_request(base_url, 8)
        runs = [_timed_request(base_url, max_tokens) for _ in range(repeat)]
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return Speed(name, round(statistics.median(r["prompt_per_second"] for r in runs), 1),
                 round(statistics.median(r["predicted_per_second"] for r in runs), 1), repeat)


def bench_llm(model: str, repeat: int, as_json: bool) -> list[Speed]:
    """Measure every setting and print a table (or JSON) with the load average."""
    load = os.getloadavg()
    t0 = time.perf_counter()
    rows = [measure(model, name, repeat) for name in SETTINGS]
    if as_json:
        print(json.dumps({"model": model, "loadavg": load, "rows": [r.__dict__ for r in rows]}, indent=2))
        return rows
    print(f"model {model}; {repeat} requests of ~600 prompt tokens + 64 generated per setting; "
          f"load average at start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
          f"{time.perf_counter() - t0:.0f} s")
    print(f"{'setting':<38}{'prompt tok/s':>14}{'gen tok/s':>11}")
    for r in rows:
        print(f"{r.setting:<38}{r.prompt_tps:>14.1f}{r.gen_tps:>11.1f}")
    return rows
