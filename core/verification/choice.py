"""Which back end verifies an LLM answer: the one measured more reliable for the configured model.

A verification call is worth making only when the model's verdicts separate supported from
unsupported sentences better than the offline checker does on its own. Each model's record
(``core/verification/data/models.json``) holds that measurement: the ROC AUC on the held-out
labelled split (``medbot bench verify``, SPEC.md §11 "Verification") of the endpoint back end
(the shipped stack: the model's log-odds plus the offline logit) and of the offline back end on
the same items. ``VERIFY_BACKEND`` (settings) chooses:

- ``endpoint`` / ``offline``: always that back end;
- ``auto`` (default): ``endpoint`` only when the model's record shows the endpoint's AUC at
  least :data:`MIN_GAIN` above the offline AUC on the same items; otherwise ``offline`` (a model
  with no record has shown nothing that would pay for the call).

With ``offline`` chosen, the agent still calls the endpoint to repair failing sentences
(:func:`core.verification.repair.repair_call`): checking is free, only a failure costs a call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

MIN_GAIN = 0.03
"""AUC the endpoint must add over the offline checker (same items) to be worth its call."""
CHOICES = ("auto", "endpoint", "offline")


@dataclass(frozen=True)
class ModelRecord:
    """One model's measured verification reliability.

    Attributes:
        model: the ``LLM_MODEL`` name.
        endpoint_auc: AUC of the endpoint back end (shipped calibration) on the held-out items.
        offline_auc: AUC of the offline back end on the same items.
        n: labelled items both were measured on.
        detail: where the figures come from (command, files), for the reader.
    """

    model: str
    endpoint_auc: float
    offline_auc: float
    n: int
    detail: dict[str, Any]

    @property
    def endpoint_pays(self) -> bool:
        """True when the endpoint adds at least :data:`MIN_GAIN` AUC over the offline checker."""
        return self.endpoint_auc - self.offline_auc >= MIN_GAIN


@lru_cache(maxsize=1)
def records() -> dict[str, ModelRecord]:
    """The shipped records by model name (``{}`` when the file is missing or malformed)."""
    res = resources.files("core.verification").joinpath("data/models.json")
    try:
        rows = json.loads(res.read_text("utf-8")) if res.is_file() else []
        return {r["model"]: ModelRecord(r["model"], float(r["endpoint_auc"]), float(r["offline_auc"]),
                                        int(r["n"]), dict(r.get("detail") or {})) for r in rows}
    except (ValueError, KeyError, TypeError):
        return {}


def choose(setting: str, model: str | None) -> tuple[str, str]:
    """The back end for ``model`` under ``setting`` and why.

    Args:
        setting: ``auto``, ``endpoint`` or ``offline`` (anything else counts as ``auto``).
        model: the configured model name, or ``None``.
    Returns:
        (``"endpoint"`` or ``"offline"``, a one-line reason for the trace).
    """
    if setting in ("endpoint", "offline"):
        return setting, f"VERIFY_BACKEND={setting}"
    rec = records().get(model or "")
    if rec is None:
        return "offline", f"no verification record for model {model!r}: offline checker, no call"
    verdict = "endpoint" if rec.endpoint_pays else "offline"
    return verdict, (f"{model}: endpoint AUC {rec.endpoint_auc:.3f} vs offline {rec.offline_auc:.3f} "
                     f"on {rec.n} held-out items (gain needed {MIN_GAIN})")
