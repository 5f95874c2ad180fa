"""The emergency categories of triage, each with the guidance it comes from (SPEC.md §11 "Emergency triage").

The twenty categories are the presentations that the Korean Triage and Acuity Scale puts at
levels 1 (resuscitation) and 2 (emergent) and that NHS 111 sends to 999 or A&E, adult and
paediatric. KTAS is the Korean adaptation of the Canadian Triage and Acuity Scale (CTAS), in use
in every Korean emergency department since 2016 (Korean Society of Emergency Medicine, *KTAS
provider manual*, 2016; Park J. et al., "Development of the Korean Triage and Acuity Scale",
*J Korean Soc Emerg Med* 2016). KTAS assigns a level from the chief complaint and its
modifiers (vital signs, pain severity, mechanism, age); the ``ktas`` field names the complaint
and the level-1/2 modifier each category stands for. The ids are fixed by the team's label set
(``/work/briefs/taxonomy.md``); ``none`` is the label of a message with no emergency.

Where a category says "NICE NGxx/CGxx" it is the National Institute for Health and Care
Excellence guideline of that number; "NHS" pages are nhs.uk's conditions pages and its
"When to call 999" list (https://www.nhs.uk/nhs-services/urgent-and-emergency-care-services/when-to-call-999/).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Category:
    """One emergency category.

    Attributes:
        id: the label (``cardiac_chest_pain``, ...).
        ko, en: the name shown to users.
        ktas: the KTAS complaint and level-1/2 modifier it covers.
        source: the guideline or NHS pathway its discriminators follow.
        crisis: True when the reply leads with the crisis line (suicide, self-harm).
    """

    id: str
    ko: str
    en: str
    ktas: str
    source: str
    crisis: bool = False


CATEGORIES: tuple[Category, ...] = (
    Category("suicide_self_harm", "자살 위험·자해", "suicide risk or self-harm",
             "KTAS 2: suicidal ideation with a plan or intent, or self-harm now (mental-health complaint, high risk)",
             "NICE NG225 Self-harm (2022); NHS 'When to call 999': a suicide attempt; "
             "NHS 'Help for suicidal thoughts'", crisis=True),
    Category("airway_breathing", "기도·호흡 곤란", "airway or breathing emergency",
             "KTAS 1: severe respiratory distress, SpO2 < 90 %, choking / upper-airway obstruction; "
             "KTAS 2: moderate distress, SpO2 90-94 %",
             "NHS 'When to call 999': severe difficulty breathing, choking; BTS/SIGN British guideline "
             "on the management of asthma (life-threatening features: SpO2 < 92 %, cannot complete "
             "sentences, cyanosis); Resuscitation Council UK choking algorithm"),
    Category("anaphylaxis", "아나필락시스", "anaphylaxis",
             "KTAS 1: anaphylaxis with airway, breathing or circulation involvement; KTAS 2: allergic reaction with "
             "moderate distress",
             "NICE CG134 Anaphylaxis; Resuscitation Council UK 'Emergency treatment of anaphylaxis' (2021): "
             "sudden airway and/or breathing problems after an exposure; NHS 'When to call 999': sudden "
             "rapid swelling of the lips, mouth, throat or tongue"),
    Category("cardiac_chest_pain", "심장성 흉통", "chest pain that may be cardiac",
             "KTAS 2: chest pain with cardiac features (pressure, radiation, diaphoresis, dyspnoea)",
             "NICE CG95 Recent-onset chest pain of suspected cardiac origin; NHS 'Heart attack'"),
    Category("stroke", "뇌졸중 의심", "possible stroke",
             "KTAS 2: new focal neurological deficit (weakness, facial droop, speech) of recent onset",
             "NICE NG128 Stroke and TIA in over 16s (FAST / BE-FAST); NHS 'Stroke'"),
    Category("major_bleeding", "대량·조절 안 되는 출혈", "major or uncontrolled bleeding",
             "KTAS 2: bleeding disorder or anticoagulation with a moderate or major bleed; haematemesis or "
             "melaena; KTAS 1-2 by haemodynamic compromise",
             "NICE CG141 Acute upper gastrointestinal bleeding; NICE NG232 Head injury (2023): CT within "
             "8 h for anyone on anticoagulants after a head injury; NHS 'Nosebleed' (A&E when on "
             "blood-thinning medicine or bleeding > 10-15 min)"),
    Category("collapse", "실신·의식 없음", "collapse or unresponsiveness",
             "KTAS 1: unconscious, GCS 3-8; KTAS 2: syncope with ongoing symptoms",
             "NHS 'When to call 999': someone has passed out and is not waking up; NICE CG109 "
             "Transient loss of consciousness (red flags: exertional syncope, chest pain, palpitations)"),
    Category("seizure", "경련", "seizure",
             "KTAS 1: actively seizing; KTAS 2: post-ictal or first seizure",
             "NICE NG217 Epilepsies (2022): convulsive seizure > 5 min or repeated is status epilepticus; "
             "NHS 'What to do if someone has a seizure' (call 999 for a first seizure, > 5 min, "
             "injury, or a seizure in pregnancy)"),
    Category("new_confusion", "갑작스러운 의식 혼란", "sudden new confusion",
             "KTAS 2: altered level of consciousness, GCS 9-13, new onset",
             "NHS 'When to call 999': sudden confusion (delirium); NICE CG103 Delirium"),
    Category("sepsis", "패혈증·호중구 감소 발열", "sepsis or fever during chemotherapy",
             "KTAS 2: fever with immunocompromise (neutropenia, chemotherapy) or SIRS / sepsis signs",
             "NICE NG51 Sepsis (2016, updated 2024); NICE CG151 Neutropenic sepsis (temperature > 38 °C "
             "during anticancer treatment); NHS 'Sepsis'"),
    Category("meningitis", "뇌수막염 의심", "possible meningitis",
             "KTAS 2: fever with meningismus, photophobia or a petechial / non-blanching rash",
             "NICE NG240 Meningitis (bacterial) and meningococcal disease (2024); NHS 'Meningitis' "
             "(glass test)"),
    Category("thunderclap_headache", "벼락 두통", "thunderclap headache",
             "KTAS 2: sudden severe headache (8-10/10), 'worst ever', peak within a minute",
             "NICE CG150 Headaches in over 12s (thunderclap headache is a red flag for subarachnoid "
             "haemorrhage); NHS 'Subarachnoid haemorrhage'"),
    Category("obstetric", "산과 응급", "pregnancy emergency",
             "KTAS 2: pregnancy > 20 weeks with vaginal bleeding, rupture of membranes, decreased fetal "
             "movement; suspected ectopic pregnancy",
             "NICE NG126 Ectopic pregnancy and miscarriage; NICE NG133 Hypertension in pregnancy "
             "(pre-eclampsia); RCOG Green-top 57 / NHS 'Your baby's movements'; NHS 'Bleeding in pregnancy'"),
    Category("diabetic_emergency", "당뇨 응급", "diabetic emergency",
             "KTAS 2: hyperglycaemia with DKA / HHS symptoms; hypoglycaemia with altered consciousness",
             "NICE NG17 Type 1 diabetes in adults and NG18 Diabetes in children (DKA); NHS 'Diabetic "
             "ketoacidosis'; NHS 'Low blood sugar (hypoglycaemia)' (call 999 when unable to swallow)"),
    Category("paediatric_red_flags", "영유아 위험 신호", "danger signs in a baby or child",
             "KTAS 2 (paediatric modifiers): fever >= 38 °C under 3 months, lethargy, severe dehydration",
             "NICE NG143 Fever in under 5s (red: age < 3 months with temperature >= 38 °C, not responding, "
             "grunting, bulging fontanelle, mottled skin, reduced skin turgor); NHS 'Dehydration'"),
    Category("poisoning_overdose", "중독·과다 복용", "poisoning or overdose",
             "KTAS 2: overdose or ingestion of a potentially toxic substance",
             "NHS 'Poisoning' (call 999 / A&E); UK National Poisons Information Service (TOXBASE); "
             "Korea Poison Information Center; button batteries: NHS 'Swallowed objects'"),
    Category("carbon_monoxide", "일산화탄소 중독", "carbon monoxide poisoning",
             "KTAS 2: symptomatic CO exposure",
             "NHS 'Carbon monoxide poisoning' (headache, dizziness, nausea; several people ill in one "
             "place; symptoms better away from home); 질병관리청 일산화탄소 중독 예방 수칙"),
    Category("serious_burns", "중증 화상", "serious burn",
             "KTAS 2: burns > 10-25 % TBSA, face / hands / genitals, chemical or electrical, inhalation injury",
             "NHS 'Burns and scalds' (A&E: large, deep, chemical or electrical burns, burns on face, "
             "hands, feet, genitals, children's burns); British Burn Association referral criteria"),
    Category("acute_abdomen", "급성 복통", "severe sudden abdominal pain",
             "KTAS 2: severe abdominal pain (8-10/10), peritoneal signs, testicular pain of sudden onset",
             "NHS 'Stomach ache' (999 for sudden severe pain, rigid tummy, vomiting blood, fainting); "
             "NHS 'Testicular torsion'; NHS 'Appendicitis'"),
    Category("sudden_vision_loss", "갑작스러운 시력 소실", "sudden loss of vision",
             "KTAS 2: sudden vision loss, chemical eye injury",
             "NHS 'Vision loss' (A&E for sudden loss of sight); NHS 'Detached retina'; "
             "Royal College of Ophthalmologists (giant cell arteritis)"),
)
"""Categories in the order a reply addresses them when several are found (crisis line first)."""

BY_ID: dict[str, Category] = {c.id: c for c in CATEGORIES}
IDS: tuple[str, ...] = tuple(c.id for c in CATEGORIES)
NONE = "none"

OLD_TO_NEW: dict[str, tuple[str, ...]] = {
    "suicide": ("suicide_self_harm",),
    "overdose": ("poisoning_overdose",),
    "chest_pain": ("cardiac_chest_pain",),
    "stroke": ("stroke", "thunderclap_headache", "sudden_vision_loss"),
    "breathing": ("airway_breathing",),
    "anaphylaxis": ("anaphylaxis",),
    "bleeding": ("major_bleeding",),
    "syncope_confusion": ("collapse", "new_confusion"),
    "seizure": ("seizure",),
}
"""The first triage's nine labels -> the ids that cover them (its ``stroke`` also held the worst
headache and sudden loss of sight; ``syncope_confusion`` is now two categories). Used to score
the older annotated sets (``bot/bench/data/triage_blind.jsonl``, ``extraction_eval.jsonl``)."""


def accepted(gold: str | None, legacy: bool = False) -> tuple[str, ...]:
    """The categories that count as a hit for a gold label.

    Args:
        gold: the label; legacy: True for the first triage's labels (mapped by :data:`OLD_TO_NEW`).
    Returns:
        ``()`` for ``None`` / ``"none"``; an unknown label as it is.
    """
    if not gold or gold == NONE:
        return ()
    return OLD_TO_NEW.get(gold, (gold,)) if legacy else (gold,)
