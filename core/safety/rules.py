"""Triage layer 1: clinical discriminators over the findings of a message (SPEC.md §11 "Emergency triage").

Each category of :mod:`core.safety.taxonomy` has rules; a rule reads
:class:`core.safety.findings.Findings` and returns the evidence that fired it, or ``None``.
The thresholds come from the guidance named in the category's ``source``:

- fever is a temperature ≥ 38 °C (NICE NG143, NICE CG151 "> 38 °C" during anticancer
  treatment);
- an infant under 3 months with fever is red in NICE NG143's traffic-light table; so are
  "not responding / hard to wake", grunting, bulging fontanelle, mottled skin and reduced
  skin turgor (dehydration: no wet nappies, no tears);
- SpO2 < 90 % is KTAS level 1's respiratory modifier (90-94 % is level 2; a lower reading than
  NEWS2's top-scoring ≤ 91 %, Royal College of Physicians 2017);
- glucose "HI" on a meter, or ≥ 250 mg/dL with vomiting, deep breathing, drowsiness or
  ketones, is DKA until shown otherwise (NICE NG17 / NG18: blood glucose > 11 mmol/L with
  ketones); < 70 mg/dL (3.9 mmol/L, NICE NG17's hypoglycaemia) with drowsiness, confusion or
  inability to swallow is severe hypoglycaemia (NHS: call 999 when they cannot swallow);
- a head injury on an anticoagulant needs CT within 8 h (NICE NG232); a nosebleed on an
  anticoagulant or one that does not stop goes to A&E (NHS "Nosebleed");
- systolic ≥ 160 or diastolic ≥ 110 mmHg in pregnancy is severe hypertension (NICE NG133);
- sepsis: infection with confusion, mottled skin, no urine, fast breathing, systolic
  ≤ 90 mmHg or a heart rate over 130 (NICE NG51 high-risk criteria), or fever with chemotherapy / immunosuppression, or
  shivering, feeling very unwell or signs of shock during anticancer treatment (NICE CG151:
  suspect neutropenic sepsis in anyone having anticancer treatment who becomes unwell);
- intent to die said through its preparations (NICE NG225; NHS "Help for suicidal thoughts":
  a plan, the means, a time, saying goodbye, giving things away, talk of being a burden):
  two different preparations together, one of them a strong one (:func:`_intent`), or
  being at the edge of a height;
- bleeding seen (melaena, maroon stool, coffee-ground vomit, fresh blood in quantity) with a
  sign of shock (NICE CG141; the Blatchford score counts pulse ≥ 100 and syncope);
- a baby or child described by behaviour: lethargy or refusing feeds together with another
  NICE NG143 amber or red feature (pale or mottled skin, no wet nappies, fever, vomiting).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from core.safety.findings import BENIGN_PLAN, Findings, benign_use
from core.safety.lethal import lethal_question, lethal_stake, method_question

Rule = Callable[[Findings], "str | None"]


@dataclass(frozen=True)
class Hit:
    """A category found by layer 1: its id, the rule's name and the evidence text."""

    category: str
    rule: str
    evidence: str


def _sign(*names: str) -> Rule:
    def rule(f: Findings) -> str | None:
        s = f.has(*names)
        return s.matched if s else None

    rule.__name__ = "+".join(names)
    return rule


def _anticoagulated_bleed(f: Findings) -> str | None:
    if "anticoagulant" not in f.meds:
        return None
    s = f.has("head_injury", "nosebleed", "bleeding_major", "swelling_growing")
    if s is None and (b := f.has("bleeding_any")) and (f.has("sudden", "vomiting", "dizzy") or
                                                       any(w in f.text for w in ("많이", "a lot", "alot", "heavily")) or
                                                       re.search(r"\bnon-?stop\b|\bfor\s+(?:two|three|\d+)\s+hours\b|시간\s*째", f.text, re.I)):
        s = b
    if s is None and (t := f.has("trauma")) and f.has("dizzy", "distension", "bleeding_any"):
        s = t
    return f"anticoagulant + {s.name}: {s.matched}" if s else None


def _gi_bleed_shock(f: Findings) -> str | None:
    """Bleeding described by its appearance with a sign of shock (NICE CG141)."""
    blood, shock = f.has("gi_blood"), f.has("shock", "collapse")
    if blood and shock:
        return f"{blood.matched} + {shock.matched}"
    return None


def _gi_or_nose(f: Findings) -> str | None:
    nose = f.has("nosebleed")
    if nose and f.has("bleeding_major"):
        return f"nosebleed that will not stop: {nose.matched}"
    return None


_STRONG_INTENT = ("farewell", "means_at_hand", "finality")
_WEAK_INTENT = ("gratitude", "unreachable", "giving_away", "intent_time", "at_place")


def _intent(f: Findings) -> str | None:
    """Intent to die said through its preparations, without the words (NICE NG225; NHS "Help
    for suicidal thoughts"): at the edge of a height, or preparations worth 3 or more where a
    strong one (a farewell note, the means at hand, talk of not being around or of being a
    burden) counts 2 and a weak one (thanks said as an ending, unreachable, giving things away,
    a time set) counts 1 (three weak ones together count too). A benign reason (moving house, a trip, an operation) voids a plan
    without the means."""
    if (edge := f.has("at_the_edge")):
        return f"at the edge: {edge.matched}"
    strong = [n for n in _STRONG_INTENT if n in f.signs]
    weak = [n for n in _WEAK_INTENT if n in f.signs]
    if (not strong and len(weak) < 3) or 2 * len(strong) + len(weak) < 3:
        return None
    if "means_at_hand" not in strong and BENIGN_PLAN.search(f.text):
        return None
    if strong == ["means_at_hand"] and benign_use(f.text):
        return None
    return " + ".join(f"{n}: {f.signs[n].matched}" for n in strong + weak)


def _lethal_amount(f: Findings) -> str | None:
    """Self-harm asked as a question about a lethal amount of a medicine (NICE NG225: a method
    talked about): an amount asked about with the wish not to wake (:mod:`core.safety.lethal`)."""
    amount, waking = f.has("amount_q"), f.has("no_waking")
    return lethal_question(amount.matched if amount else None, waking.matched if waking else None, f.text)


def _method_or_stake(f: Findings) -> str | None:
    """A method asked about as painless or certain with the method at hand, or a lethal-amount
    question with a personal stake (:func:`core.safety.lethal.method_question`,
    :func:`core.safety.lethal.lethal_stake`; NICE NG225: a method talked about)."""
    m, a = f.has("method_q"), f.has("amount_q")
    o, s = f.has("lethal_outcome"), f.has("personal_stake")
    return method_question(m.matched if m else None, a.matched if a else None, f.text) or \
        lethal_stake(o.matched if o else None, s.matched if s else None, f.text)


_DELIBERATE = re.compile(
    r"\bon\s+purpose\b|\bdeliberately\b|\bbecause\s+i'?m\s+done\b|\b(?:she'?s|he'?s|i'?ve|they'?ve)\s+had\s+enough\b|\bwanted\s+(?:someone|somebody|anyone)\s+to\s+know\b"
    r"|\b(?:not\s+sure|dunno|don'?t\s+know)\s+why\s+i'?m\s+(?:typing|telling|writing|saying)|\btelling\s+a\s+bot\b|\bdon'?t\s+(?:call|want)\s+(?:an\s+)?ambulance\b|\bdidn'?t\s+want\s+to\s+be\s+alone\b"
    r"|일부러|끝내고\s*싶어서|힘들어서|(?:챗봇|여기|이걸)(?:한테|에|다)?\s*.{0,10}(?:말하는지|얘기하는지)\s*모르|구급차(?:는)?\s*부르지|(?:누군가|누가)\s*알았으면|다\s*끝내", re.I)


def _deliberate_overdose(f: Findings) -> str | None:
    """An overdose already taken on purpose (NICE NG225: an intentional overdose is self-harm,
    whatever the intent to die): the ``overdose`` sign (or ten or more tablets said as taken) with
    a word of purpose ("on purpose", "일부러", "don't know why I'm telling you"), or the ``overdose``
    sign with a farewell or talk of finality in the message. Returns the evidence or ``None``."""
    why = _DELIBERATE.search(f.text)
    o = f.has("overdose")
    taken = o.matched if o else (m.group(0) if why and (m := _MANY_TAKEN.search(f.text)) else None)
    if taken is None or (why is None and not f.has("farewell", "finality")):
        return None
    return f"deliberate overdose: {taken} + {why.group(0) if why else 'farewell'}"


_MANY_TAKEN = re.compile(
    r"\b(?:took|taken|swallowed|downed)\s+(?:about\s+|around\s+)?(?:[1-9]\d|\d{3})\b|(?:[1-9]\d|\d{3}|스무|서른|마흔)\s*(?:알|정|개)\b.{0,15}(?:먹었|삼켰|털어\s*넣)", re.I)
"""Ten or more tablets said as taken (with a word of purpose, :data:`_DELIBERATE`)."""


def _self_cut(f: Findings) -> str | None:
    """A self-inflicted cut that is bleeding (NICE NG225 *Self-harm*: assess every act of
    self-harm; NICE CG141 / NHS for the bleeding): ``self_cut`` with a bleeding sign."""
    cut, blood = f.has("self_cut"), f.has("bleeding_major", "bleeding_any")
    return f"self-inflicted cut bleeding: {cut.matched} + {blood.matched}" if cut and blood else None


def _spo2(f: Findings) -> str | None:
    return f"SpO2 {f.spo2:.0f} %" if f.spo2 is not None and f.spo2 < 90 else None


def _swelling_after_allergen(f: Findings) -> str | None:
    if (s := f.has("anaphylaxis")):
        return s.matched
    allergen = f.has("allergen")
    if allergen and (sw := f.has("face_swelling")) and f.has("wheeze", "breathing_severe", "cannot_swallow", "dizzy", "vomiting", "face_swelling"):
        return f"{allergen.matched} + {sw.matched}"
    if allergen and f.has("anaphylaxis", "breathing_severe"):
        return f"{allergen.matched} + breathing"
    if allergen and f.has("hives") and (s := f.has("wheeze", "breathing_severe", "dizzy", "vomiting", "collapse")):
        return f"{allergen.matched} + hives + {s.name}"
    return None


def _cardiac(f: Findings) -> str | None:
    if (s := f.has("chest_cardiac")):
        return s.matched
    chest, assoc = f.has("chest_any"), f.has("cardiac_assoc")
    if chest and assoc and f.has("symptom_generic", "chest_any") and not f.has("burn", "hives", "trauma"):
        return f"chest + {assoc.matched}"
    return None


def _syncope_red_flags(f: Findings) -> str | None:
    s = f.has("collapse")
    return s.matched if s else None


def _diabetic(f: Findings) -> str | None:
    if (s := f.has("meter_hi", "fruity_breath")):
        return s.matched
    g = f.glucose_mgdl
    dka_sign = f.has("vomiting", "deep_breathing", "drowsy", "ketones", "abdominal_pain", "breathing_severe")
    if g is not None and g >= 250 and dka_sign:
        return f"glucose {g:.0f} mg/dL + {dka_sign.name}"
    if f.has("ketones") and f.has("vomiting"):
        return "ketones + vomiting"
    low = g is not None and g < 70
    hypo = f.has("hypo_word") or low
    severe = f.has("cannot_swallow", "drowsy", "collapse", "confusion", "hard_to_wake")
    if hypo and severe:
        return f"hypoglycaemia ({'glucose %.0f mg/dL' % g if low else 'stated'}) + {severe.name}"
    if "insulin_or_su" in f.meds and f.has("collapse", "confusion") and not f.question:
        return "insulin / sulfonylurea + altered consciousness"
    treated = f.diabetic or "insulin_or_su" in f.meds
    if treated and f.has("shock", "cardiac_assoc") and (s := f.has("cannot_swallow", "confusion", "drowsy", "collapse")):
        return f"diabetes + sweating + {s.name} (severe hypoglycaemia until shown otherwise)"
    if f.diabetic and f.has("vomiting") and (s := f.has("deep_breathing", "drowsy", "abdominal_pain", "fast_breathing")):
        return f"diabetes + vomiting + {s.name}"
    return None


def _paediatric(f: Findings) -> str | None:
    infant = f.age_months is not None and f.age_months < 3
    if infant and (f.fever or (f.temperature_c is not None and f.temperature_c < 36.0)):
        t = f"{f.temperature_c} °C" if f.temperature_c is not None else "fever"
        return f"infant {f.age_months:.1f} months with {t}"
    if infant and f.has("not_feeding"):
        return f"infant {f.age_months:.1f} months not feeding"
    if not f.child:
        return None
    s = f.has("floppy", "hard_to_wake", "no_wet_nappies", "no_tears", "fontanelle", "sunken_fontanelle", "grunting",
              "green_vomit", "high_pitched_cry", "pale_unresponsive")
    if s:
        return f"child + {s.name}: {s.matched}"
    if f.has("mottled") and (f.fever or f.has("floppy", "drowsy")):
        return "child with mottled skin"
    return _child_behaviour(f)


def _child_behaviour(f: Findings) -> str | None:
    """A child described by behaviour (NICE NG143): lethargic or refusing feeds, with another
    amber or red feature (the other of the two, pale or mottled skin, fever, vomiting, grunting);
    lethargy alone under 3 months."""
    lethargic, feeds = f.has("lethargic", "drowsy"), f.has("not_feeding")
    other = f.has("shock", "mottled", "vomiting", "grunting")
    second = feeds if lethargic else lethargic
    if (lethargic or feeds) and (second or other or f.fever):
        first = lethargic or feeds
        return f"child + {first.name} + {(second or other).name if (second or other) else 'fever'}"
    if lethargic and f.age_months is not None and f.age_months < 3:
        return f"infant {f.age_months:.1f} months + {lethargic.name}"
    return None


def _sepsis(f: Findings) -> str | None:
    immuno = f.meds & {"chemotherapy", "immunosuppressed"}
    if immuno and f.fever:
        return f"fever + {sorted(immuno)[0]}"
    if "chemotherapy" in f.meds and (s := f.has("rigors", "very_unwell", "shock", "mottled")) and not f.question:
        return f"unwell during anticancer treatment: {s.matched} (NICE CG151)"
    if (s := f.has("sepsis_word")) and (f.fever or f.has("rigors", "very_unwell", "no_urine")):
        return s.matched
    infected = f.has("infection") or f.fever or f.has("rigors")
    red = f.has("mottled", "no_urine", "confusion", "drowsy")
    if infected and red:
        return f"infection/fever + {red.name}"
    if f.has("mottled") and f.has("no_urine", "rigors", "very_unwell", "fast_heart", "fast_breathing"):
        return "mottled skin + another NICE NG51 high-risk sign"
    if infected and f.sbp is not None and f.sbp <= 90:
        return f"infection + systolic {f.sbp:.0f}"
    if infected and f.heart_rate is not None and f.heart_rate > 130:
        return f"infection + heart rate {f.heart_rate:.0f} (NICE NG51 high risk: > 130)"
    if f.has("infection") and f.fever and f.has("fast_breathing", "fast_heart") and f.has("very_unwell"):
        return "infection + fever + tachypnoea/tachycardia + very unwell"
    if f.has("postpartum") and f.fever and f.has("rigors", "fast_heart"):
        return "postpartum fever with rigors / tachycardia"
    return None


def _meningitis(f: Findings) -> str | None:
    if (s := f.has("nonblanching_rash")):
        return s.matched
    stiff, photo = f.has("neck_stiffness"), f.has("photophobia")
    if f.fever and (stiff or photo):
        return f"fever + {(stiff or photo).name}"
    if stiff and photo:
        return "neck stiffness + photophobia"
    if f.has("fontanelle") and f.fever:
        return "fever + bulging fontanelle"
    return None


def _thunderclap(f: Findings) -> str | None:
    if (s := f.has("thunderclap")):
        return s.matched
    if (e := f.has("headache_explosive")) and f.has("sudden"):
        return f"sudden {e.matched}"
    return None


def _obstetric(f: Findings) -> str | None:
    early = f.has("missed_period") or (f.pregnant and (f.gestation_weeks or 0) < 14)
    if early and (s := f.has("one_sided_pelvic_pain", "shoulder_tip")) and (f.has("missed_period") or f.pregnant):
        return f"possible ectopic: {s.matched}"
    if (f.pregnant or f.has("missed_period")) and f.has("collapse") and f.has("abdominal_pain", "one_sided_pelvic_pain"):
        return "pregnancy + pain + fainting"
    if f.has("postpartum") and (s := f.has("bleeding_major", "calf_breathless")):
        return f"postpartum {s.name}"
    if f.has("postpartum") and f.has("vaginal_bleeding") and f.has("bleeding_major"):
        return "postpartum haemorrhage"
    if not f.pregnant:
        return None
    if (s := f.has("reduced_fetal_movement", "waters_broken", "contractions")):
        late = s.name == "reduced_fetal_movement" or (f.gestation_weeks or 0) < 37
        if late:
            return f"pregnancy {f.gestation_weeks or '?'} wk + {s.name}"
    heavy = any(w in f.text.lower() for w in ("많이", "마니", "심해", "심하", "heav", "a lot", "alot", "soaking"))
    if (s := f.has("vaginal_bleeding")) and (f.has("bleeding_major", "abdominal_pain", "collapse", "dizzy")
                                             or (f.gestation_weeks or 0) >= 20 or heavy):
        return f"bleeding in pregnancy: {s.matched}"
    if (f.sbp or 0) >= 160 or (f.dbp or 0) >= 110:
        return f"blood pressure {f.sbp:.0f}/{f.dbp or 0:.0f} in pregnancy"
    if (s := f.has("preeclampsia")) and (f.gestation_weeks or 20) >= 20:
        return f"pre-eclampsia sign: {s.matched}"
    if f.has("seizure"):
        return "seizure in pregnancy"
    return None


def _poisoning(f: Findings) -> str | None:
    if (s := f.has("overdose")):
        return s.matched
    if f.child and (s := f.has("others_medicine")):
        return f"child took someone else's medicine: {s.matched}"
    extra = f.has("extra_dose")
    if extra and (f.child or f.has("high_risk_drug") or f.has("drowsy", "vomiting", "collapse", "confusion",
                                                           "fast_heart", "bleeding_any")):
        return f"extra dose: {extra.matched}"
    return None


def _carbon_monoxide(f: Findings) -> str | None:
    src = f.has("co_source")
    weak = f.has("co_weak_source")
    sym = f.has("co_symptom", "collapse", "confusion", "hard_to_wake")
    if (src or weak) and sym and f.has("better_away"):
        return f"{(src or weak).matched}: symptoms better away from home"
    if weak and sym and f.has("many_ill"):
        return f"{weak.matched} + several people ill"
    if not src:
        return None
    if (sym := f.has("co_symptom", "collapse", "confusion", "hard_to_wake")):
        return f"{src.matched} + {sym.matched}"
    if "번개탄" in src.matched or "charcoal" in src.matched.lower():
        if f.has("sealed_room") or "피워" in f.text or "lit" in f.text.lower():
            return f"charcoal lit indoors: {src.matched}"
    return None


def _burns(f: Findings) -> str | None:
    b = f.has("burn")
    if not b:
        return None
    small = re.search(r"손가락\s*끝|입천장|동전|작은|살짝|\bfingertip|\bcoin\b|\btiny\b|\bsmall\b|\bmouth\b", f.text, re.I)
    if (sev := f.has("burn_severe")) and not small:
        return f"burn + {sev.matched}"
    if f.child and not small and re.search(r"물집|blister|scald", f.text, re.I):
        return "burn with blisters in a child"
    return None


def _acute_abdomen(f: Findings) -> str | None:
    if (s := f.has("abdomen_severe")):
        return s.matched
    if (t := f.has("testicular")) and f.has("sudden", "abdominal_pain", "vomiting") or (t and "swol" in f.text.lower()) or \
            (t and ("부었" in f.text or "부엇" in f.text)):
        return f"testicular pain: {t.matched}"
    pain = f.has("abdominal_pain")
    if pain and f.has("collapse"):
        return "abdominal pain + fainting"
    if pain and f.fever and (r := f.has("rlq_pain", "distension", "post_surgery")):
        return f"abdominal pain + fever + {r.name}"
    if pain and f.has("distension") and f.has("vomiting"):
        return "abdominal pain + distension + vomiting"
    if pain and f.has("vomiting") and f.has("sudden") and any(w in f.text.lower() for w in ("severe", "심하", "심한", "너무", "so bad", "really bad", "agony", "can't move", "cant move")):
        return "sudden severe abdominal pain + vomiting"
    return None


def _vision(f: Findings) -> str | None:
    if (s := f.has("vision_loss")):
        return s.matched
    if (c := f.has("chemical_eye")):
        return c.matched
    return None


RULES: dict[str, tuple[Rule, ...]] = {
    "suicide_self_harm": (_sign("suicidal"), _lethal_amount, _intent, _method_or_stake, _deliberate_overdose, _self_cut),
    "airway_breathing": (_sign("breathing_severe"), _spo2, _sign("calf_breathless")),
    "anaphylaxis": (_swelling_after_allergen,),
    "cardiac_chest_pain": (_cardiac,),
    "stroke": (_sign("stroke_focal"),),
    "major_bleeding": (_sign("bleeding_major"), _gi_bleed_shock, _anticoagulated_bleed, _gi_or_nose),
    "collapse": (_syncope_red_flags,),
    "seizure": (_sign("seizure"),),
    "new_confusion": (_sign("confusion"),),
    "sepsis": (_sepsis,),
    "meningitis": (_meningitis,),
    "thunderclap_headache": (_thunderclap,),
    "obstetric": (_obstetric,),
    "diabetic_emergency": (_diabetic,),
    "paediatric_red_flags": (_paediatric,),
    "poisoning_overdose": (_poisoning,),
    "carbon_monoxide": (_carbon_monoxide,),
    "serious_burns": (_burns,),
    "acute_abdomen": (_acute_abdomen,),
    "sudden_vision_loss": (_vision,),
}
"""Layer-1 rules per category id (every id of :data:`core.safety.taxonomy.IDS`)."""


def layer1(f: Findings) -> list[Hit]:
    """Every category whose rules fire on ``f``, one :class:`Hit` per category, in
    :data:`RULES` order. A message that only asks in general or imagines a case fires nothing
    (its signs were already dropped by the context rules)."""
    hits: list[Hit] = []
    for cat, rules in RULES.items():
        for rule in rules:
            ev = rule(f)
            if ev:
                hits.append(Hit(cat, rule.__name__.lstrip("_"), ev))
                break
    return hits
