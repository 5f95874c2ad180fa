"""``medbot bench robustness``: the cost of one long message through the real agent turn
(README "Bounded cost per message").

Each case runs in a fresh child process (so one case's peak memory cannot hide another's): the
agent is built on the configured index with a fresh SQLite database, one ordinary turn warms it
up, then the peak-RSS mark is reset (Linux ``/proc/self/clear_refs``) and the long message is
sent through :meth:`core.agent.Agent.handle`. Printed per case: wall and CPU seconds of the
turn, extra peak RSS over the warmed-up process (MB), the characters stored, and the first line
of the reply. Targets (2 cores): 4,096 characters ≤ 2 s and ≤ 100 MB extra RSS; 1 MB
answered politely in ≤ 5 s and stored cut.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_SENTENCE = ("저는 65세이고 10년째 고혈압이 있어서 암로디핀을 먹고 있어요. 혈압은 150/95예요. "
             "I also take metformin for type 2 diabetes and my HbA1c was 8.2%. ")
CASES: dict[str, tuple[str, int]] = {
    "text 4 KB": ("text", 4096),
    "text 100 KB": ("text", 100_000),
    "text 1 MB": ("text", 1_000_000),
    "word 4,096": ("word", 4096),
    "word 60,000": ("word", 60_000),
}
"""Case name -> (kind, characters): ``text`` is medical prose in Korean and English (many
concept mentions, numbers and clause boundaries); ``word`` is one token of letters with no space
(MedCAT's spelling correction's worst case)."""


def make_message(kind: str, chars: int) -> str:
    """A message of exactly ``chars`` characters of the given kind (see :data:`CASES`)."""
    if kind == "word":
        return ("metforminhypertension" * (chars // 21 + 1))[:chars]
    return (_SENTENCE * (chars // len(_SENTENCE) + 1))[:chars]


def _status_kb(field: str) -> int:
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return 0
    return int(status.split(f"{field}:")[1].split()[0]) if f"{field}:" in status else 0


def _reset_peak() -> bool:
    """Reset this process's peak RSS mark (VmHWM); False when the kernel does not allow it."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def run_case(name: str, index: Path | None) -> dict[str, Any]:
    """Run one case in this process (the child side); returns its figures."""
    from config.settings import Settings
    from core.agent import Agent
    from core.messages import InboundMessage

    kind, chars = CASES[name]
    with tempfile.TemporaryDirectory(prefix="medbot-bench-robust-") as tmp:
        env: dict[str, Any] = {"DATABASE_URL": f"sqlite:///{Path(tmp) / 'bench.db'}"}
        if index is not None:
            env["MEDBOT_INDEX_DIR"] = index
        agent = Agent(Settings(**env))  # type: ignore[arg-type]
        agent.handle(InboundMessage(user_id="bench:warmup", text="메트포르민 부작용이 뭔가요?"))
        text = make_message(kind, chars)
        exact_peak = _reset_peak()
        base_kb = _status_kb("VmRSS")
        c0, t0 = time.process_time(), time.perf_counter()
        reply = agent.handle(InboundMessage(user_id="bench:long", text=text,
                                            flags={"response_cache_enabled": False}))
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        peak_kb = _status_kb("VmHWM")
        turns = agent.services.repo.recent_turns("bench:long", 1)
    return {"case": name, "chars": chars, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
            "extra_peak_rss_mb": round(max(0, peak_kb - base_kb) / 1024, 1),
            "peak_exact": exact_peak, "stored_chars": len(turns[0].user_text) if turns else 0,
            "error": reply.trace.get("error"), "reply_first_line": reply.text.split("\n")[0][:160]}


def bench_robustness(cases: list[str] | None = None, index: Path | None = None,
                     as_json: bool = False) -> list[dict[str, Any]]:
    """Run every case (or ``cases``) in its own child process and print a table (or JSON).

    Returns:
        One dict per case: wall_s, cpu_s, extra_peak_rss_mb, stored_chars, reply_first_line,
        plus ``load_avg`` (1-minute load average when the case ended: other work on the
        machine disturbs the timings).
    Raises:
        KeyError: an unknown case name.
    """
    rows = []
    for name in cases or list(CASES):
        CASES[name]  # noqa: B018  (fail early on a wrong name)
        args = [sys.executable, "-m", "bot.bench.robustness", name] + ([str(index)] if index else [])
        proc = subprocess.run(args, capture_output=True, text=True, env={**os.environ})
        if proc.returncode != 0:
            row = {"case": name, "error": f"child exited {proc.returncode}: {proc.stderr[-500:]}"}
        else:
            row = json.loads(proc.stdout.strip().splitlines()[-1])
        row["load_avg"] = round(os.getloadavg()[0], 2)
        rows.append(row)
        if not as_json:
            _print_row(row, first=len(rows) == 1)
    if as_json:
        print(json.dumps(rows, ensure_ascii=False, indent=2))
    return rows


def _print_row(row: dict[str, Any], first: bool) -> None:
    if first:
        print(f"{'case':<14}{'wall s':>8}{'cpu s':>8}{'+peak MB':>10}{'stored':>9}{'load':>6}  reply")
    if "wall_s" not in row:
        print(f"{row['case']:<14}  FAILED: {row['error']}")
        return
    print(f"{row['case']:<14}{row['wall_s']:>8.2f}{row['cpu_s']:>8.2f}{row['extra_peak_rss_mb']:>10.1f}"
          f"{row['stored_chars']:>9}{row['load_avg']:>6.2f}  {row['reply_first_line'][:70]}")


if __name__ == "__main__":  # the child of bench_robustness: one case, JSON on the last line
    import logging

    logging.basicConfig(level=logging.ERROR)
    result = run_case(sys.argv[1], Path(sys.argv[2]) if len(sys.argv) > 2 else None)
    print(json.dumps(result, ensure_ascii=False))
