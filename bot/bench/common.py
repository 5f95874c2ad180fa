"""Helpers the benchmarks share: percentiles of timings and the process's resident memory."""

from __future__ import annotations

from pathlib import Path


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0–100) with linear interpolation; 0.0 for no values."""
    if not values:
        return 0.0
    s = sorted(values)
    pos = (len(s) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def rss_mb() -> float:
    """This process's resident set size in MB (Linux ``/proc/self/status`` VmRSS; 0 where
    unavailable)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0
