"""`medbot bench extraction`: its arithmetic on hand-computed cases, and the quality floor of
the extractor and triage on the team's annotated set (the first extractor's targets), so a regression fails."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import pytest

from bot.bench.extraction import PRF, Report, _score, evaluate, load_eval, summary
from config.settings import Settings
from core.extraction.slots import Concept
from core.services import make_extractor
from tests.conftest import CACHE


def test_prf_arithmetic():
    p = PRF()
    p.add([("a", 1), ("b", 2), ("c", 3)], [("a", 1), ("b", 2), ("x", 9)])
    p.add([], [("y", 1)])
    assert (p.tp, p.fp, p.fn) == (2, 2, 1)
    assert p.precision == pytest.approx(0.5) and p.recall == pytest.approx(2 / 3)
    assert p.f1 == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))
    assert PRF().precision == 1.0 and PRF().recall == 1.0  # nothing to find, nothing found


def _slots(concepts=(), rejected=()):
    return SimpleNamespace(demographics={"age": 65, "age_group": "60대"}, vitals=[], labs=[], body=[],
                           rejected=list(rejected), concepts=list(concepts))


def test_scoring_of_one_row_statuses_and_flags():
    rep = Report()
    row = {"id": "x", "text": "t", "demographics": {"age": 65}, "measurements": [], "implausible": [],
           "concepts": [{"cui": "C1", "slot": "condition", "status": "family"},
                        {"cui": "C2", "slot": "medication", "status": "stopped"}],
           "red_flag": "stroke"}
    pred = [Concept("C1", "T047", "condition", "n", "n", "n", "n", 1.0, status="family"),
            Concept("C2", "T121", "medication", "m", "m", "m", "m", 1.0, status="active")]
    _score(rep, row, _slots(pred), [SimpleNamespace(category="chest_pain"), SimpleNamespace(category="stroke")])
    s = summary(rep)
    assert s["slots"]["demographics"]["f1"] == 1.0  # a derived age group is not a false positive
    assert s["slots"]["concepts"]["f1"] == 1.0
    assert rep.status == {"family": Counter(correct=1), "stopped": Counter(wrong=1)}
    assert s["status_accuracy_negated_family_stopped"] == 0.5
    assert s["red_flags"]["recall"] == 1.0 and s["red_flags"]["confusion"] == {"stroke->stroke": 1}


@pytest.fixture(scope="module")
def result():
    extractor = make_extractor(Settings(_env_file=None, MEDCAT_PACKS_DIR=CACHE / "medcat"))  # type: ignore[call-arg]
    return summary(evaluate(extractor, load_eval(), warmup=5))


def test_quality_floor_on_the_annotated_set(result):
    slots = result["slots"]
    assert slots["demographics"]["f1"] >= 0.97
    assert slots["numbers"]["f1"] >= 0.98
    assert slots["concepts"]["precision"] >= 0.92 and slots["concepts"]["recall"] >= 0.88
    assert result["status_accuracy_negated_family_stopped"] >= 0.95
    assert result["red_flags"]["recall"] == 1.0
    assert result["red_flags"]["false_positive_rate"] <= 0.02
