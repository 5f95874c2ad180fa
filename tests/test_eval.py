"""``medbot eval`` (SPEC.md §9): Synthea reading in both layouts, deterministic scenarios, the
metrics and statistics, and the whole harness on 2 patients against the loopback fake endpoint
(report, figures, JSONL; an interrupted run resumes without duplicating a turn)."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from scipy import stats

from bot.eval.conditions import ablation_steps, conditions
from bot.eval.judge import auc, context_precision_at_k, perplexity
from bot.eval.metrics import citation_validity, present
from bot.eval.runner import EvalConfig, EvalError, run_eval
from bot.eval.scenarios import Fact, build_scenarios, load_scenarios
from bot.eval.statistics import mean_ci, paired
from bot.eval.synthea import SyntheaError, load_patients
from conftest import make_settings
from bot.bench.fake_llm import FakeOpenAIServer

P1, P2, P3, DEAD = "p-1111", "p-2222", "p-3333", "p-dead"


def write_synthea(folder, new_layout: bool = True) -> None:
    """A three-patient export (plus one deceased) in the newer Synthea layout (``Id``, address
    columns, ``SYSTEM``, ``CATEGORY``/``TYPE``) or the 2017 one."""
    folder.mkdir(parents=True, exist_ok=True)
    pid = "Id" if new_layout else "ID"
    extra = ",ADDRESS,CITY,HEALTHCARE_EXPENSES" if new_layout else ""
    rows = [f"{pid},BIRTHDATE,DEATHDATE,SSN,FIRST,LAST,GENDER{extra}"]
    for p, born, sex, dead in ((P1, "1960-03-01", "M", ""), (P2, "1975-07-15", "F", ""),
                               (P3, "1950-01-20", "F", ""), (DEAD, "1940-01-01", "M", "2015-01-01")):
        rows.append(f"{p},{born},{dead},999,A,B,{sex}" + (",1 Main St,Boston,1000.5" if new_layout else ""))
    (folder / "patients.csv").write_text("\n".join(rows) + "\n")
    sys_col = "SYSTEM," if new_layout else ""
    cond = [f"START,STOP,PATIENT,ENCOUNTER,{sys_col}CODE,DESCRIPTION"]
    for p, desc in ((P1, "Hypertension"), (P1, "Diabetes"), (P2, "Prediabetes"), (P3, "Hypertension"),
                    (DEAD, "Hypertension")):
        cond.append(f"2010-01-01,,{p},e1,{'SNOMED-CT,' if new_layout else ''}38341003,{desc}")
    cond.append(f"2011-01-01,2011-02-01,{P2},e1,{'SNOMED-CT,' if new_layout else ''}10509002,Acute bronchitis (disorder)")
    (folder / "conditions.csv").write_text("\n".join(cond) + "\n")
    meds = ["START,STOP,PATIENT,ENCOUNTER,CODE,DESCRIPTION,REASONCODE,REASONDESCRIPTION",
            f"2012-01-01,,{P1},e1,860975,24 HR Metformin hydrochloride 500 MG Extended Release Oral Tablet,,",
            f"2012-01-01,,{P3},e1,197361,Amlodipine 5 MG Oral Tablet,,"]
    (folder / "medications.csv").write_text("\n".join(meds) + "\n")
    cat = "CATEGORY," if new_layout else ""
    obs = [f"DATE,PATIENT,ENCOUNTER,{cat}CODE,DESCRIPTION,VALUE,UNITS" + (",TYPE" if new_layout else "")]

    def o(day, p, code, desc, value, unit):
        obs.append(f"{day},{p},e1,{'vital-signs,' if new_layout else ''}{code},{desc},{value},{unit}"
                   + (",numeric" if new_layout else ""))

    for p, (s, d) in ((P1, (150, 95)), (P2, (128, 82)), (P3, (141, 88)), (DEAD, (120, 80))):
        o("2016-05-01", p, "8480-6", "Systolic Blood Pressure", s + 10, "mmHg")
        o("2017-05-01", p, "8480-6", "Systolic Blood Pressure", s, "mmHg")
        o("2017-05-01", p, "8462-4", "Diastolic Blood Pressure", d, "mmHg")
    o("2017-05-01", P1, "4548-4", "Hemoglobin A1c/Hemoglobin.total in Blood", 8.2, "%")
    o("2017-05-01", P1, "2339-0", "Glucose", 160, "mg/dL")
    o("2017-05-01", P2, "18262-6", "Low Density Lipoprotein Cholesterol", 131.4, "mg/dL")
    o("2017-05-01", P3, "39156-5", "Body Mass Index", 31.2, "kg/m2")
    (folder / "observations.csv").write_text("\n".join(obs) + "\n")


@pytest.mark.parametrize("new_layout", [True, False])
def test_synthea_both_layouts_by_header(tmp_path, new_layout):
    write_synthea(tmp_path / "s", new_layout)
    pats = {p.id: p for p in load_patients(tmp_path / "s")}
    assert set(pats) == {P1, P2, P3}  # the deceased patient is left out
    p1 = pats[P1]
    assert (p1.age, p1.sex) == (57, "M")  # at the last observation, 2017-05-01
    assert p1.conditions == ["Hypertension", "Diabetes"]
    assert p1.latest["systolic"][0] == 150  # the latest reading, not the 2016 one
    assert p1.latest["hba1c"][0] == 8.2 and p1.latest["glucose"][0] == 160
    assert pats[P2].conditions == ["Prediabetes"]  # bronchitis has a STOP date


def test_synthea_missing_column_is_named(tmp_path):
    write_synthea(tmp_path / "s")
    path = tmp_path / "s" / "observations.csv"
    path.write_text(path.read_text().replace("VALUE", "AMOUNT"))
    with pytest.raises(SyntheaError, match="VALUE"):
        load_patients(tmp_path / "s")


def test_scenarios_are_deterministic_and_carry_the_needed_facts(tmp_path):
    write_synthea(tmp_path / "s")
    pats = load_patients(tmp_path / "s")
    a = build_scenarios(pats, 2, seed=1, langs=["en", "ko"])
    b = build_scenarios(pats, 2, seed=1, langs=["en", "ko"])
    assert [s.to_json() for s in a] == [s.to_json() for s in b]
    others = {tuple(s.patient_id for s in build_scenarios(pats, 2, seed=k, langs=["en"])) for k in range(8)}
    assert len(others) > 1  # the seed chooses the patients
    sc = next(s for s in build_scenarios(pats, 3, 1, ["en"]) if s.patient_id == P1 and s.kind == "five_turn")
    t1, t2, t3, t4, t5 = sc.turns
    assert "57-year-old man" in t1.text and "hypertension" in t1.text
    assert {f.label for f in t1.needs} == {"hypertension", "diabetes mellitus"}
    assert "150/95" in t2.text and "metformin" in t2.text and t2.needs[0].terms == ["150/95"]
    assert "8.2%" in t3.text and {f.key for f in t3.needs} == {"hba1c", "glucose"}
    assert "metformin" not in t4.text and t4.needs[0].label == "metformin"  # recalled, not restated
    assert {f.turn for f in t5.needs} == {1, 2}
    assert "kb-medications-en-002" in t4.relevant_docs  # "Metformin side effects"
    ko = next(s for s in a if s.lang == "ko" and s.kind == "five_turn")
    assert re.search(r"[\uac00-\ud7a3]", ko.turns[0].text)
    ret = next(s for s in a if s.kind == "retention")
    assert len(ret.turns) == 15 and all(f.turn <= 3 for t in ret.turns[12:] for f in t.needs)


def test_fact_presence_and_citations():
    bp = Fact("bp", "150/95 mmHg", ["150/95"], 2)
    a1c = Fact("hba1c", "hba1c 7.1", ["7.1"], 3)
    assert present(bp, "your 150/95 mmHg reading") and not present(bp, "1150/95")
    assert present(a1c, "HbA1c 7.1%") and not present(a1c, "17.1") and not present(a1c, "7.15")
    sources = [{"n": 1, "doc_id": "d1"}, {"n": 2, "doc_id": "d2"}]
    texts = {"d1": "Metformin can cause diarrhea.  It is common.", "d2": "Other."}
    out = citation_validity("- Metformin can cause diarrhea. [1]\n- Made up. [2]\nSee [3].", sources, texts, "offline")
    assert out["citations"] == 3 and out["citations_valid"] == pytest.approx(2 / 3)
    assert out["quotes_verbatim"] == 0.5


def test_statistics_match_their_definitions():
    a = [0.5, 0.6, 0.4, 0.7, 0.55, 0.65]
    b = [0.7, 0.75, 0.5, 0.9, 0.6, 0.8]
    res = paired("a", "b", dict(enumerate(a)), dict(enumerate(b)))
    d = np.array(b) - np.array(a)
    assert res.n == 6 and res.diff.mean == pytest.approx(d.mean(), abs=1e-4)
    assert res.dz == pytest.approx(d.mean() / d.std(ddof=1), abs=1e-3)
    assert res.p == pytest.approx(stats.ttest_rel(b, a).pvalue)
    assert res.diff.low < d.mean() < res.diff.high
    ci = mean_ci(a)
    assert ci.low < ci.mean < ci.high and ci.n == 6
    assert mean_ci([None, 0.3]).low is None  # one value: no interval
    missing = paired("a", "b", {1: 0.2, 2: None}, {1: 0.4, 3: 0.1})
    assert missing.n == 1 and missing.t is None


def test_targets_table_reads_paired_ratios_and_pooled_rejections():
    from bot.eval.report import _targets, comparisons, summarise

    def rec(cond, turn, ms, faith, claims, rejected, calls):
        return {"condition": cond, "scenario": "s1", "turn": turn, "total_ms": ms, "llm_calls": calls,
                "judge": {"faithfulness": faith}, "checker": {"claims": claims, "rejected": rejected},
                "usage": {"calls": calls, "prompt_tokens": 100 * calls, "cached_tokens": 0, "completion_tokens": 50}}
    records = [rec("llm", t, 1000, 0.4 + 0.01 * t, 5, 3, 1) for t in range(1, 6)]
    records += [rec("ai_agent", t, 1400 if t < 5 else 3000, 0.8 - 0.01 * t, 4, 0, 1 if t < 4 else 2)
                for t in range(1, 6)]
    records.append(rec("ai_agent", 6, 99_000, 1.0, 10, 10, 9))  # unpaired: in no ratio, but pooled
    conds = ["llm", "ai_agent"]
    rows = {line.split(" | ")[0].lstrip("| "): line for line in
            _targets(records, summarise(records, conds), comparisons(records, conds))[2:]}
    assert "×1.72 | 5 | missed" in rows["wall latency ai_agent / llm ≤ ×1.5"]  # (4·1400 + 3000) / 5000
    assert "×1.27 | 5 | met" in rows["tokens processed ai_agent / llm ≤ ×3.0"]  # (3·150 + 2·250) / 750
    assert rows["LLM calls per ai_agent turn ≤ 2.2"].startswith("| LLM calls per ai_agent turn ≤ 2.2 | 2.667")
    assert rows["LLM calls per ai_agent turn ≤ 2.2"].endswith("| 6 | missed |")  # (3 + 2·2 + 9) / 6
    assert "| met |" in rows["faithfulness (judge) ai_agent − llm ≥ +0.10, 95% CI above 0"]
    assert "33.3% (10 of 30)" in rows["shipped sentences the checker rejects, `ai_agent` ≤ 5%"]
    assert rows["shipped sentences the checker rejects, `ai_agent` ≤ 5%"].endswith("| missed |")


def test_judge_reply_cut_off_keeps_its_complete_statements():
    from bot.eval.judge import salvage_strings

    assert salvage_strings('{"statements": ["a b", "c \\"q\\" d", "cut off') == ["a b", 'c "q" d']
    assert salvage_strings('{"statements": ["a","b"]}') == ["a", "b"]
    assert salvage_strings("no array") == []


def test_ragas_definitions():
    assert context_precision_at_k([True, False, True]) == pytest.approx((1 + 2 / 3) / 2)
    assert context_precision_at_k([False, False]) == 0.0
    assert perplexity([math.log(0.5)] * 4) == pytest.approx(2.0)
    assert perplexity(None) is None
    assert auc([0.9, 0.8], [0.1, 0.8]) == pytest.approx(0.875)


def test_conditions_are_the_documents_ablation():
    names = [c.name for c in conditions(["llm", "ai_agent"], True)]
    assert names == ["llm", "baseline", "+self_refine", "+active_retrieval", "+compression",
                     "+hierarchical_memory", "+cache", "ai_agent"]
    steps = ablation_steps()
    assert steps[0].flags["retrieval_mode"] == "bm25" and not steps[0].flags["self_refine_enabled"]
    for before, after in zip(steps, steps[1:]):  # each step switches exactly one more feature on
        changed = {k for k in after.flags if after.flags[k] != before.flags.get(k)}
        assert len(changed) == 1
    assert conditions(["ai_agent"], False, {"include_profile": False})[0].flags == {"include_profile": False}


def fake_judge(body: dict) -> str:
    """The fake endpoint: schema-shaped JSON for the judge, a cited answer otherwise."""
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        props = fmt["json_schema"]["schema"]["properties"]
        if "statements" in props:
            return json.dumps({"statements": ["Metformin can cause diarrhea.", "It cures diabetes."]})
        if "questions" in props:
            return json.dumps({"questions": ["What are metformin's side effects?"] * 3})
        n = props["verdicts"]["minItems"]
        return json.dumps({"verdicts": [i % 2 == 0 for i in range(n)]})
    if fmt.get("type") == "json_object":
        return json.dumps({"grounding": 0.9, "completeness": 0.8, "accuracy": 0.9, "missing_info": []})
    return "Your blood pressure and metformin matter here [1]. Keep taking it with meals [2]."


def test_harness_end_to_end_resumes_without_duplicates(tmp_path, default_index):
    write_synthea(tmp_path / "synthea")
    out = tmp_path / "out"
    cfg = EvalConfig(out=out, synthea=tmp_path / "synthea", patients=2, turns=4, langs=["en"], seed=3,
                     modes=["llm", "ai_agent"], ablation=False, retention=False)
    with FakeOpenAIServer() as server:
        server.default_chat = fake_judge
        settings = make_settings(tmp_path / "data", default_index, OPENAI_BASE_URL=server.base_url,
                                 LLM_MODEL="fake", OPENAI_API_KEY="sk-x")
        first = run_eval(cfg, settings, progress=False)
        lines = (out / "turns.jsonl").read_text().splitlines()
        assert first["turns"] == len(lines) == 2 * 4 * 2 and first["pending"] == 0
        recs = [json.loads(x) for x in lines]
        assert {r["condition"] for r in recs} == {"llm", "ai_agent"}
        agent_recs = [r for r in recs if r["condition"] == "ai_agent"]
        assert all(r["judge"]["faithfulness"] == 0.5 for r in recs)  # 1 of 2 statements supported
        assert all(r["judge"]["answer_relevance"] is not None for r in recs)
        assert all(r["judge"]["context_precision"] is not None for r in agent_recs)
        assert all(r["judge"]["context"] == "reference retrieval (k=5)" for r in recs if r["mode"] == "llm")
        assert all(r["usage"]["calls"] >= 1 for r in recs)
        t4 = {r["mode"]: r for r in recs if r["turn"] == 4 and r["patient_id"] == P1}  # "my medicine"
        assert t4["ai_agent"]["context_retention"] == 1.0  # metformin (turn 2) is in the prompt
        assert t4["llm"]["context_retention"] == 0.0  # the plain model sees only the question
        cal = json.loads((out / "calibration.json").read_text())
        assert cal["faithfulness"]["n_items"] == 4
        report = (out / "report.md").read_text()
        assert "## The documents' claims" in report and "Faithfulness 0.52 → 0.78" in report
        assert "## Judge reliability" in report and "`llm` → `ai_agent`" in report
        for fig in ("metrics_by_condition", "latency_per_node", "tokens_per_turn"):
            assert (out / "figures" / f"{fig}.png").stat().st_size > 1000
        # an interrupted run: the last turn's line never reached the file; and the judge of
        # the first turn had failed (a reply cut off): the resumed run judges it again
        failed = {**recs[0], "judge": {**recs[0]["judge"], "faithfulness": None,
                                       "judge_errors": ["JSONDecodeError: cut off"]}}
        assert all(r["checker"]["user_context"] == "patient's messages so far" for r in recs if r.get("checker"))
        # a record checked before the user context was passed: the resumed run checks it again
        k = next(i for i, r in enumerate(recs) if i and r.get("checker"))
        old_check = {"claims": 9, "rejected": 9, "rejected_share": 1.0, "mean_p": 0.1, "context": "own documents"}
        lines[k] = json.dumps({**recs[k], "checker": old_check})
        (out / "turns.jsonl").write_text("\n".join([json.dumps(failed), *lines[1:-1]]) + "\n" + lines[-1][:20])
        last = recs[-1]
        second = run_eval(cfg, settings, progress=False)
        assert second["turns"] == 1
        again = [json.loads(x) for x in (out / "turns.jsonl").read_text().splitlines() if x.endswith("}")]
        assert len(again) == 16 and again[-1]["turn"] == last["turn"]
        assert again[0]["judge"]["rejudged"] and again[0]["judge"]["faithfulness"] == 0.5
        assert again[k]["checker_first"] == old_check and again[k]["checker"] == recs[k]["checker"]
        from storage.db import make_engine
        from storage.repositories import Repository

        repo = Repository(make_engine(f"sqlite:///{out / 'db' / (last['condition'] + '.db')}"))
        assert repo.count_turns(f"eval:{last['scenario']}") == 4  # the re-run turn is stored once
        assert run_eval(cfg, settings, progress=False)["turns"] == 0
        assert load_scenarios(out / "scenarios.jsonl")[0].turns[0].n == 1


def test_offline_run_says_llm_mode_needs_an_endpoint(tmp_path, default_index):
    write_synthea(tmp_path / "synthea")
    out = tmp_path / "off"
    cfg = EvalConfig(out=out, synthea=tmp_path / "synthea", patients=1, turns=2, langs=["en"], seed=3,
                     modes=["llm", "ai_agent"], ablation=True, retention=False)
    result = run_eval(cfg, make_settings(tmp_path / "data", default_index), progress=False)
    recs = [json.loads(x) for x in (out / "turns.jsonl").read_text().splitlines()]
    assert result["turns"] == len(recs) == 7 * 2  # six ablation steps + ai_agent, no llm
    assert all(r["generator"] == "offline" and "judge" not in r for r in recs)
    assert all(r["quotes_verbatim"] in (1.0, None) for r in recs)  # the offline generator only quotes
    report = (out / "report.md").read_text()
    assert "condition `llm` skipped: it needs an LLM endpoint" in report
    with pytest.raises(EvalError, match="another --out"):
        run_eval(EvalConfig(out=out, synthea=tmp_path / "synthea", patients=2, langs=["en"]),
                 make_settings(tmp_path / "data", default_index), progress=False)


def test_missing_synthea_is_a_clear_error(tmp_path, default_index):
    with pytest.raises(EvalError, match="Synthea export not found"):
        run_eval(EvalConfig(out=tmp_path / "o", synthea=tmp_path / "none"),
                 make_settings(tmp_path, default_index), progress=False)


def test_real_synthea_export(shared_data):
    pats = load_patients(shared_data / "synthea")
    scen = build_scenarios(pats, 80, 13, ["en", "ko"])
    assert len([s for s in scen if s.kind == "five_turn"]) == 160
    assert all(len(s.turns) == 5 for s in scen if s.kind == "five_turn")
    assert all(t.needs for s in scen for t in s.turns if t.kind in ("vitals", "recall"))
