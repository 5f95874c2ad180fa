"""Conversation scenarios made from Synthea patients (SPEC.md §9: 80 patients × 5 turns).

A seeded sample of patients (``random.Random(seed)`` over the export sorted by id; only living
patients with a blood-pressure reading and at least one active condition that the concept table
knows) becomes one five-turn conversation per language:

1. demographics and conditions, with a question about what to watch;
2. medications and the last blood pressure: "is that okay?";
3. a lab (HbA1c with glucose, else LDL, else BMI): "what does that number mean for me?";
4. "what side effects should I watch for with my medicine?" (the drug is not named again;
   without a medication: "which medicines are used for my condition?");
5. "thinking back to the conditions I told you about first, what should I do about my blood
   pressure?" (refers to turns 1 and 2 without restating them).

Each turn records the facts a good answer must use (:class:`Fact`, with the surface forms that
count as using it) and, where the bundled corpus has documents whose title names the turn's
topic, those document ids (the relevance judgments for nDCG@10 / Recall@k). A 15-turn
retention scenario per language states facts in turns 1–3, asks nine unrelated questions, and
asks for those facts again in turns 13–15 (SPEC.md §9 "context retention", "information
preservation"), so the facts are older than working memory (5 turns) by then.

Scenarios are a pure function of (export, seed, languages): saved as JSONL, they are the run's
record of what was asked.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bot.eval.synthea import Patient
from core.extraction.lexicon import load_lexicon


@dataclass
class Fact:
    """A fact of the patient that an answer should use.

    Attributes:
        key: ``condition:<CUI>``, ``medication:<CUI>``, ``bp``, ``hba1c``, ``glucose``, ``ldl``,
            ``bmi``, ``age``.
        label: how the report names it (``hypertension``, ``142/91 mmHg``).
        terms: surface forms that count as the fact being present (case-insensitive substring).
        turn: the turn in which the patient stated it.
    """

    key: str
    label: str
    terms: list[str]
    turn: int


@dataclass
class Turn:
    """One user message, the facts its answer needs, and the relevant bundled documents."""

    n: int
    text: str
    kind: str
    needs: list[Fact] = field(default_factory=list)
    relevant_docs: list[str] = field(default_factory=list)


@dataclass
class Scenario:
    """A conversation: ``id`` (``p03-en``, ``retention-ko``), patient, language, turns."""

    id: str
    patient_id: str
    lang: str
    kind: str
    turns: list[Turn]

    def to_json(self) -> str:
        """One JSONL line."""
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_dict(cls, d: dict) -> "Scenario":
        """Inverse of :meth:`to_json` (after ``json.loads``)."""
        turns = [Turn(t["n"], t["text"], t["kind"], [Fact(**f) for f in t["needs"]], t["relevant_docs"])
                 for t in d["turns"]]
        return cls(d["id"], d["patient_id"], d["lang"], d["kind"], turns)


@dataclass
class Concept:
    """A Synthea description mapped to the concept table: CUI, names, surface forms."""

    cui: str
    en: str
    ko: str
    terms: list[str]


def _concepts(descriptions: list[str], slot: str, limit: int) -> list[Concept]:
    lex = load_lexicon()
    rows = {r["cui"]: r for r in lex.rows}
    out: list[Concept] = []
    for desc in descriptions:
        for m in lex.find(desc):
            e = lex.entries[m.cui]
            if e.slot != slot or not e.chronic or any(c.cui == e.cui for c in out):
                continue
            r = rows[e.cui]
            terms = [e.name_en, e.name_ko, *r.get("synonyms_en", []), *r.get("synonyms_ko", [])]
            out.append(Concept(e.cui, e.name_en, e.name_ko, [t for t in terms if len(t) >= 3]))
            break
        if len(out) >= limit:
            break
    return out


def eligible(p: Patient) -> bool:
    """A patient a scenario can be made of: a blood pressure and one known chronic condition."""
    return "systolic" in p.latest and "diastolic" in p.latest and bool(_concepts(p.conditions, "condition", 1))


def sample_patients(patients: list[Patient], n: int, seed: int) -> list[Patient]:
    """``n`` eligible patients drawn with ``random.Random(seed)`` (all when fewer exist)."""
    pool = [p for p in patients if eligible(p)]
    return random.Random(seed).sample(pool, min(n, len(pool)))


def _num(x: float) -> str:
    return f"{x:g}" if x != int(x) else str(int(x))


def _join(names: list[str], lang: str) -> str:
    if lang == "ko" or len(names) < 2:
        return ", ".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


class _Corpus:
    """Titles of the bundled corpus, for the relevance judgments."""

    def __init__(self) -> None:
        from core.knowledge import corpus_paths

        self.titles: list[tuple[str, str]] = []
        for path in corpus_paths():
            for line in path.read_text("utf-8").splitlines():
                if line.strip():
                    d = json.loads(line)
                    self.titles.append((d["id"], d["title"].lower()))

    def about(self, terms: list[str]) -> list[str]:
        pats = [re.compile(r"(?<![a-z])" + re.escape(t.lower()) + r"(?![a-z])") for t in terms if t]
        return [doc for doc, title in self.titles if any(p.search(title) for p in pats)]


_BP_TERMS = ["blood pressure", "hypertension", "혈압", "고혈압"]
_LAB_TERMS = {"hba1c": ["hba1c", "당화혈색소"], "ldl": ["ldl", "cholesterol", "콜레스테롤", "고지혈증"],
              "bmi": ["bmi", "obesity", "비만", "체질량"]}
_T = {
    "en": {
        "t1": "Hello. I'm a {age}-year-old {sex} and I have {conds}. What should someone like me keep an eye on?",
        "sex": {"M": "man", "F": "woman"},
        "t2_med": "I take {meds} every day. My blood pressure at my last check-up was {bp} mmHg. Is that okay?",
        "t2_none": "I don't take any regular medicine. My blood pressure at my last check-up was {bp} mmHg. Is that okay?",
        "hba1c": "My HbA1c came back at {v}%{extra}. What does that number mean for me?",
        "glucose": " and my glucose was {v} mg/dL",
        "ldl": "My LDL cholesterol came back at {v} mg/dL. What does that number mean for me?",
        "bmi": "My BMI is {v}. What does that number mean for me?",
        "nolab": "What lifestyle changes would help me most?",
        "t4_med": "What side effects should I watch out for with the medicine I take?",
        "t4_none": "Which medicines are usually used for my condition?",
        "t5": "Thinking back to the conditions I told you about in my first message, what should I do about my blood pressure?",
        "fillers": ["How much exercise should an adult get each week?", "Is it safe to get a flu shot every year?",
                    "How much salt is too much in a day?", "How many hours of sleep do adults need?",
                    "What is a healthy way to lose weight?", "Does drinking coffee raise blood sugar?",
                    "How can I tell a cold from the flu?", "How can I lower my cholesterol?",
                    "Is walking good for my knees?"],
        "r13": "Earlier I told you my blood pressure reading. What was it, and is it on target?",
        "r14": "Remind me which medicines I said I take, and what I should watch out for with them.",
        "r15": "Given the conditions I mentioned at the very beginning, what matters most for me?",
    },
    "ko": {
        "t1": "안녕하세요. 저는 {age}세 {sex}이고, 앓고 있는 병은 {conds} 이렇게 있어요. 저 같은 사람은 무엇을 조심해야 하나요?",
        "sex": {"M": "남성", "F": "여성"},
        "t2_med": "매일 {meds} 이렇게 약을 먹고 있어요. 지난번 검진 때 혈압이 {bp} mmHg였어요. 괜찮은 건가요?",
        "t2_none": "꾸준히 먹는 약은 없어요. 지난번 검진 때 혈압이 {bp} mmHg였어요. 괜찮은 건가요?",
        "hba1c": "당화혈색소(HbA1c)가 {v}%로 나왔어요{extra}. 이 수치가 저한테 무슨 의미인가요?",
        "glucose": ". 혈당은 {v} mg/dL이었어요",
        "ldl": "LDL 콜레스테롤이 {v} mg/dL로 나왔어요. 이 수치가 저한테 무슨 의미인가요?",
        "bmi": "체질량지수(BMI)가 {v}로 나왔어요. 이 수치가 저한테 무슨 의미인가요?",
        "nolab": "저한테 가장 도움이 되는 생활습관 변화는 뭔가요?",
        "t4_med": "제가 먹는 약은 어떤 부작용을 조심해야 하나요?",
        "t4_none": "제 병에는 보통 어떤 약을 쓰나요?",
        "t5": "처음에 말씀드린 제 병들을 생각하면, 혈압은 어떻게 관리해야 하나요?",
        "fillers": ["성인은 일주일에 운동을 얼마나 해야 하나요?", "독감 예방주사는 매년 맞아도 안전한가요?",
                    "하루에 소금은 얼마나 먹으면 많은 건가요?", "성인은 몇 시간 자야 하나요?",
                    "건강하게 살을 빼는 방법이 뭔가요?", "커피를 마시면 혈당이 오르나요?",
                    "감기와 독감은 어떻게 구별하나요?", "콜레스테롤은 어떻게 낮추나요?",
                    "걷기 운동이 무릎에 좋은가요?"],
        "r13": "아까 제 혈압 수치를 말씀드렸죠. 몇이었고, 목표 범위 안에 있나요?",
        "r14": "제가 먹는다고 한 약이 뭐였는지, 그 약은 뭘 조심해야 하는지 다시 알려 주세요.",
        "r15": "맨 처음에 말씀드린 제 병들을 생각하면, 저한테 가장 중요한 건 뭔가요?",
    },
}


class ScenarioBuilder:
    """Turns a :class:`Patient` into scenarios (one instance reads the corpus titles once)."""

    def __init__(self) -> None:
        self.corpus = _Corpus()

    def facts(self, p: Patient, lang: str) -> dict[str, list[Fact]]:
        """The patient's facts by turn role: ``conditions`` (turn 1), ``medications``, ``bp``
        (turn 2), ``lab`` (turn 3)."""
        conds = _concepts(p.conditions, "condition", 2)
        meds = _concepts(p.medications, "medication", 2)
        s, d = _num(p.latest["systolic"][0]), _num(p.latest["diastolic"][0])
        out = {"conditions": [Fact(f"condition:{c.cui}", c.en, c.terms, 1) for c in conds],
               "medications": [Fact(f"medication:{c.cui}", c.en, c.terms, 2) for c in meds],
               "bp": [Fact("bp", f"{s}/{d} mmHg", [f"{s}/{d}"], 2)], "lab": []}
        for lab in ("hba1c", "ldl", "bmi"):
            if lab in p.latest:
                v = _num(round(p.latest[lab][0], 1))
                out["lab"].append(Fact(lab, f"{lab} {v}", [v], 3))
                if lab == "hba1c" and "glucose" in p.latest:
                    g = _num(round(p.latest["glucose"][0]))
                    out["lab"].append(Fact("glucose", f"glucose {g}", [g], 3))
                break
        return out

    def five_turn(self, p: Patient, idx: int, lang: str) -> Scenario:
        """The five-turn conversation of patient number ``idx`` (1-based) in ``lang``."""
        t, f = _T[lang], self.facts(p, lang)
        conds = [c.label if lang == "en" else _ko_name(c) for c in f["conditions"]]
        meds = [m.label if lang == "en" else _ko_name(m) for m in f["medications"]]
        bp = f["bp"][0].label.split()[0]
        turns = [Turn(1, t["t1"].format(age=p.age, sex=t["sex"].get(p.sex, t["sex"]["F"]),
                                        conds=_join(conds, lang)), "profile", f["conditions"],
                      self.corpus.about(_terms(f["conditions"]))),
                 Turn(2, (t["t2_med"] if meds else t["t2_none"]).format(meds=_join(meds, lang), bp=bp),
                      "vitals", f["bp"], self.corpus.about(_BP_TERMS)),
                 self._lab_turn(f["lab"], lang)]
        if meds:
            turns.append(Turn(4, t["t4_med"], "medication_question", f["medications"],
                              self.corpus.about(_terms(f["medications"]))))
        else:
            turns.append(Turn(4, t["t4_none"], "medication_question", f["conditions"],
                              self.corpus.about(_terms(f["conditions"]))))
        turns.append(Turn(5, t["t5"], "recall", f["conditions"] + f["bp"], self.corpus.about(_BP_TERMS)))
        return Scenario(f"p{idx:02d}-{lang}", p.id, lang, "five_turn", turns)

    def _lab_turn(self, labs: list[Fact], lang: str) -> Turn:
        t = _T[lang]
        if not labs:
            return Turn(3, t["nolab"], "lifestyle", [], [])
        main = labs[0]
        v = main.terms[0]
        if main.key == "hba1c":
            extra = t["glucose"].format(v=labs[1].terms[0]) if len(labs) > 1 else ""
            text = t["hba1c"].format(v=v, extra=extra)
        else:
            text = t[main.key].format(v=v)
        return Turn(3, text, "labs", labs, self.corpus.about(_LAB_TERMS[main.key]))

    def retention(self, p: Patient, lang: str) -> Scenario:
        """The 15-turn retention conversation of ``p`` in ``lang`` (facts in 1–3, recall in 13–15)."""
        base = self.five_turn(p, 0, lang)
        t, f = _T[lang], self.facts(p, lang)
        turns = base.turns[:3]
        for i, q in enumerate(t["fillers"], start=4):
            turns.append(Turn(i, q, "filler"))
        turns.append(Turn(13, t["r13"], "recall", f["bp"], self.corpus.about(_BP_TERMS)))
        turns.append(Turn(14, t["r14"], "recall", f["medications"], self.corpus.about(_terms(f["medications"]))))
        turns.append(Turn(15, t["r15"], "recall", f["conditions"], self.corpus.about(_terms(f["conditions"]))))
        return Scenario(f"retention-{lang}", p.id, lang, "retention", turns)


def _terms(facts: list[Fact]) -> list[str]:
    return [term for f in facts for term in f.terms]


def _ko_name(fact: Fact) -> str:
    return next((t for t in fact.terms if re.search(r"[\uac00-\ud7a3]", t)), fact.label)


def build_scenarios(patients: list[Patient], n: int, seed: int, langs: list[str],
                    retention: bool = True) -> list[Scenario]:
    """Every scenario of a run, in run order: for each sampled patient, one five-turn scenario
    per language; then the retention scenario per language (of the first sampled patient).

    Raises:
        ValueError: no patient is eligible, or an unknown language.
    """
    bad = [lang for lang in langs if lang not in _T]
    if bad:
        raise ValueError(f"unknown language(s) {bad}: use en and/or ko")
    chosen = sample_patients(patients, n, seed)
    if not chosen:
        raise ValueError("no eligible patient (blood pressure and a known chronic condition)")
    builder = ScenarioBuilder()
    out = [builder.five_turn(p, i, lang) for i, p in enumerate(chosen, 1) for lang in langs]
    if retention:
        out += [builder.retention(chosen[0], lang) for lang in langs]
    return out


def save_scenarios(scenarios: list[Scenario], path: Path) -> None:
    """Write one scenario per line (UTF-8 JSONL)."""
    path.write_text("".join(s.to_json() + "\n" for s in scenarios), encoding="utf-8")


def load_scenarios(path: Path) -> list[Scenario]:
    """Read :func:`save_scenarios`'s file."""
    return [Scenario.from_dict(json.loads(line)) for line in path.read_text("utf-8").splitlines() if line.strip()]
