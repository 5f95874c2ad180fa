"""What a scheduled job returns (see :mod:`bot.scheduler` for the registry of jobs)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class JobResult:
    """One run of a job.

    Attributes:
        job: the job's registry name, e.g. ``cache_eviction``.
        counts: what it did, e.g. ``{"expired": 3, "lru": 10, "remaining": 1000}`` (rows).
        ms: wall time of the run in milliseconds.
        skipped: why it did not run or finish (disabled, lease held elsewhere, failed: see
            the log), ``None`` when it ran.
    """

    job: str
    counts: dict[str, int] = field(default_factory=dict)
    ms: float = 0.0
    skipped: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict of the fields."""
        return asdict(self)

    def to_json(self) -> str:
        """One-line JSON of :meth:`to_dict`."""
        return json.dumps(self.to_dict(), ensure_ascii=False, sort_keys=True)
