"""Statistics of the evaluation (SciPy).

- Means with a bootstrap 95% confidence interval (``scipy.stats.bootstrap``, percentile method,
  9,999 resamples, seeded; Efron & Tibshirani 1993). One value alone gives no interval.
- Paired comparisons over the turns both conditions answered (matched by scenario and turn):
  the paired t-test (``scipy.stats.ttest_rel``, two-sided) and Cohen's d for paired samples,
  d_z = mean(difference) / sd(difference) (Cohen 1988; Lakens 2013, Front. Psychol. 4:863),
  with a bootstrap 95% CI of the mean difference.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

RESAMPLES = 9999


@dataclass
class Estimate:
    """Mean of ``n`` values with its 95% bootstrap CI (``None`` bounds when n < 2 or constant)."""

    mean: float | None
    low: float | None
    high: float | None
    n: int

    def to_dict(self) -> dict:
        """Plain dict for JSON."""
        return asdict(self)


@dataclass
class Paired:
    """Condition B minus condition A over ``n`` matched turns.

    ``diff`` is mean(B − A) with its bootstrap CI; ``t`` / ``p`` the paired t-test; ``dz``
    Cohen's d_z. ``None`` where undefined (n < 2, or zero variance of the differences).
    """

    a: str
    b: str
    n: int
    mean_a: float | None
    mean_b: float | None
    diff: Estimate
    t: float | None
    p: float | None
    dz: float | None

    def to_dict(self) -> dict:
        """Plain dict for JSON."""
        d = asdict(self)
        d["diff"] = self.diff.to_dict()
        return d


def _finite(values) -> np.ndarray:
    arr = np.asarray([float(v) for v in values if v is not None], dtype=float)
    return arr[np.isfinite(arr)]


def mean_ci(values, seed: int = 0) -> Estimate:
    """Mean and percentile-bootstrap 95% CI of the non-``None`` values."""
    x = _finite(values)
    if len(x) == 0:
        return Estimate(None, None, None, 0)
    m = float(x.mean())
    if len(x) < 2 or float(x.std()) == 0.0:
        return Estimate(round(m, 4), round(m, 4) if len(x) >= 2 else None, round(m, 4) if len(x) >= 2 else None, len(x))
    res = stats.bootstrap((x,), np.mean, n_resamples=RESAMPLES, confidence_level=0.95,
                          method="percentile", random_state=np.random.default_rng(seed))
    return Estimate(round(m, 4), round(float(res.confidence_interval.low), 4),
                    round(float(res.confidence_interval.high), 4), len(x))


def paired(a_name: str, b_name: str, a: dict, b: dict, seed: int = 0) -> Paired:
    """Compare two conditions over the keys both have a value for.

    Args:
        a, b: key (scenario, turn) -> value (``None`` values are dropped).
    """
    keys = sorted(k for k in a.keys() & b.keys() if a[k] is not None and b[k] is not None)
    xa = np.asarray([float(a[k]) for k in keys])
    xb = np.asarray([float(b[k]) for k in keys])
    n = len(keys)
    if n == 0:
        return Paired(a_name, b_name, 0, None, None, Estimate(None, None, None, 0), None, None, None)
    d = xb - xa
    diff = mean_ci(d, seed)
    t = p = dz = None
    sd = float(d.std(ddof=1)) if n >= 2 else 0.0
    if n >= 2 and sd > 0:
        res = stats.ttest_rel(xb, xa)
        t, p = round(float(res.statistic), 4), float(res.pvalue)
        dz = round(float(d.mean()) / sd, 4)
    return Paired(a_name, b_name, n, round(float(xa.mean()), 4), round(float(xb.mean()), 4), diff,
                  t, None if p is None or math.isnan(p) else p, dz)
