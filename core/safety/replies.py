"""The emergency reply and the urgent notice, in the user's language (SPEC.md §11 "Emergency triage").

One reply covers every category found: the crisis line first when there is suicide risk or
self-harm, the emergency number for every other category (self-harm with bleeding gets both),
then what to do while waiting, one short first-aid line per category from the source named
beside it, then the notice that the bot is not a clinician.

Numbers are settings (``EMERGENCY_NUMBER``, ``CRISIS_NUMBER``); the defaults are Korea's: 119
(fire and ambulance) and 109 (the Ministry of Health and Welfare's suicide-prevention line,
24 hours, since 2024). The first-aid lines only say what is safe for a bystander to do while
help comes, as the cited pages say it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from core.safety.taxonomy import BY_ID, CATEGORIES


@dataclass(frozen=True)
class FirstAid:
    """What to do while waiting, in Korean and English, and where it comes from."""

    ko: str
    en: str
    source: str
    url: str


FIRST_AID: dict[str, FirstAid] = {
    "suicide_self_harm": FirstAid(
        "혼자 있지 말고 곁에 있어 줄 사람을 부르세요. 스스로를 해칠 수 있는 물건(약, 칼, 끈)은 멀리 치우세요. 피가 나면 깨끗한 천으로 세게 누르세요.",
        "Do not stay alone: get someone to be with you, and move away anything you could hurt yourself with "
        "(pills, blades, cords). If you are bleeding, press firmly on it with a clean cloth.",
        "NHS, Help for suicidal thoughts", "https://www.nhs.uk/mental-health/feelings-symptoms-behaviours/behaviours/help-for-suicidal-thoughts/"),
    "airway_breathing": FirstAid(
        "똑바로 앉아 꽉 끼는 옷을 푸세요. 천식이면 증상 완화 흡입기를 30~60초마다 한 번씩, 최대 10번까지 쓰세요. "
        "목에 걸려 기침도 못 하면 등을 5번 두드리고, 안 되면 배 밀어내기(하임리히법)를 5번 하세요(1세 미만 아기는 가슴 밀기).",
        "Sit upright and loosen tight clothing. For asthma, take one puff of the reliever inhaler every 30-60 "
        "seconds, up to 10 puffs. If someone is choking and cannot cough, give up to 5 back blows, then up to 5 "
        "abdominal thrusts (chest thrusts for a baby under 1).",
        "NHS, Asthma attacks; Resuscitation Council UK, Choking algorithm",
        "https://www.nhs.uk/conditions/asthma/asthma-attack/"),
    "anaphylaxis": FirstAid(
        "에피네프린 자가주사기(에피펜)가 있으면 지금 허벅지 바깥쪽에 놓으세요. 누워서 다리를 올리세요(숨쉬기 힘들면 앉으세요). "
        "5분이 지나도 나아지지 않으면 두 번째 주사기를 쓰세요.",
        "Use an adrenaline auto-injector (EpiPen) now if there is one, into the outer thigh. Lie down with the "
        "legs raised (sit up if breathing is hard). If there is no improvement after 5 minutes, use a second one.",
        "NHS, Anaphylaxis; Resuscitation Council UK, Emergency treatment of anaphylaxis (2021)",
        "https://www.nhs.uk/conditions/anaphylaxis/"),
    "cardiac_chest_pain": FirstAid(
        "하던 일을 멈추고 앉아서 쉬세요. 아스피린 알레르기가 없고 먹지 말라는 말을 들은 적이 없다면 성인용 아스피린(300 mg) 1알을 씹어 드세요.",
        "Stop, sit down and rest. If you are not allergic to aspirin and have not been told not to take it, "
        "chew one adult aspirin (300 mg) while you wait.",
        "NHS, Heart attack", "https://www.nhs.uk/conditions/heart-attack/"),
    "stroke": FirstAid(
        "증상이 시작된 시각을 기억해 두세요. 음식, 물, 약을 주지 마세요(삼키기가 어려울 수 있어요).",
        "Note the time the symptoms started. Give no food, drink or medicine (swallowing may be affected).",
        "NHS, Stroke; British Red Cross, First aid for stroke", "https://www.nhs.uk/conditions/stroke/"),
    "major_bleeding": FirstAid(
        "깨끗한 천으로 상처를 세게 계속 누르고, 가능하면 다친 곳을 심장보다 높이 드세요. 코피는 앉아서 몸을 앞으로 숙이고 콧방울 위 "
        "부드러운 부분을 10~15분 꽉 잡으세요. 피를 토했거나 항응고제를 먹는 중 머리를 부딪혔다면 먹는 약 목록을 챙기세요.",
        "Press firmly on the wound with a clean cloth and keep pressing; raise the injured part if you can. For "
        "a nosebleed, sit, lean forward and pinch the soft part of the nose for 10-15 minutes. If blood was "
        "vomited or a head was hit on blood thinners, bring the list of medicines.",
        "NHS, Cuts and grazes; NHS, Nosebleed; British Red Cross, Severe bleeding",
        "https://www.nhs.uk/conditions/nosebleed/"),
    "collapse": FirstAid(
        "숨을 쉬는지 확인하세요. 숨을 쉬면 옆으로 눕혀(회복 자세) 곁을 지키세요. 정상적으로 숨을 쉬지 않으면 119 상담원의 안내에 "
        "따라 가슴 압박(심폐소생술)을 시작하고, 자동심장충격기(AED)가 있으면 가져오게 하세요.",
        "Check whether they are breathing. If they are, put them on their side (recovery position) and stay "
        "with them. If they are not breathing normally, start chest compressions (CPR) as the call handler "
        "tells you, and send someone for a defibrillator (AED).",
        "Resuscitation Council UK, Adult basic life support (2021); 대한심폐소생협회 2020 한국 심폐소생술 가이드라인",
        "https://www.resus.org.uk/library/2021-resuscitation-guidelines/adult-basic-life-support-guidelines"),
    "seizure": FirstAid(
        "붙잡거나 입에 아무것도 넣지 마세요. 주변의 위험한 물건을 치우고 머리 밑에 부드러운 것을 받치고, 경련 시간을 재세요. "
        "멈추면 옆으로 눕히세요.",
        "Do not hold them down or put anything in their mouth. Move dangerous objects away, cushion their "
        "head and time the seizure. When it stops, turn them on their side.",
        "NHS, Epilepsy: what to do if someone has a seizure",
        "https://www.nhs.uk/conditions/epilepsy/what-to-do-if-someone-has-a-seizure-fit/"),
    "new_confusion": FirstAid(
        "곁에 있으면서 안심시키세요. 언제부터 그랬는지와 먹는 약을 구급대원에게 알려 주세요. 당뇨가 있고 삼킬 수 있으면 혈당을 재 보세요.",
        "Stay with them and keep them calm. Tell the paramedics when it started and which medicines they take. "
        "If they have diabetes and can swallow, check their blood sugar.",
        "NHS, Confusion (sudden confusion / delirium)", "https://www.nhs.uk/symptoms/confusion/"),
    "sepsis": FirstAid(
        "나아지는지 기다리지 마세요. 119 상담원에게 감염이나 항암치료 중이라는 사실을 꼭 말하고, 항암치료 안내 카드가 있으면 보여 주세요.",
        "Do not wait to see whether it gets better. Tell the call handler about the infection or the "
        "chemotherapy, and show the chemotherapy alert card if there is one.",
        "NHS, Sepsis; NICE CG151 Neutropenic sepsis", "https://www.nhs.uk/conditions/sepsis/"),
    "meningitis": FirstAid(
        "발진이 생길 때까지 기다리지 마세요. 증상이 시작된 시각과 변화(열, 목 경직, 발진)를 구급대원에게 알려 주세요.",
        "Do not wait for a rash to appear. Tell the paramedics when the symptoms started and how they changed "
        "(fever, stiff neck, rash).",
        "NHS, Meningitis", "https://www.nhs.uk/conditions/meningitis/"),
    "thunderclap_headache": FirstAid(
        "누워서 안정하고 직접 운전해서 가지 마세요. 진통제를 더 먹지 마세요.",
        "Lie down and rest; do not drive yourself, and do not take more painkillers.",
        "NHS, Subarachnoid haemorrhage", "https://www.nhs.uk/conditions/subarachnoid-haemorrhage/"),
    "obstetric": FirstAid(
        "왼쪽으로 누워 쉬세요. 산모수첩을 챙기고, 출혈이 있으면 탐폰 대신 패드를 쓰고 보여 줄 수 있게 두세요. 다니는 분만 병원에도 연락하세요.",
        "Lie on your left side. Bring your maternity notes; if you are bleeding, use a pad (not a tampon) and "
        "keep it to show. Call your maternity unit too.",
        "NHS, Your baby's movements; NHS, Vaginal bleeding in pregnancy",
        "https://www.nhs.uk/pregnancy/keeping-well/your-babys-movements/"),
    "diabetic_emergency": FirstAid(
        "저혈당이고 깨어 있어 삼킬 수 있으면 주스나 포도당 사탕으로 당 15~20 g을 먹이고 15분 뒤 다시 재세요. 졸려 하거나 삼키지 "
        "못하면 입으로 아무것도 주지 말고 옆으로 눕히세요. 고혈당에 토한다면 케톤을 재 보고 먹는 인슐린을 알려 주세요.",
        "If blood sugar is low and they are awake and can swallow, give 15-20 g of fast sugar (juice, glucose "
        "tablets) and re-check after 15 minutes. If they are drowsy or cannot swallow, give nothing by mouth "
        "and put them on their side. With high sugar and vomiting, check ketones and tell the crew which "
        "insulin is used.",
        "NHS, Low blood sugar (hypoglycaemia); NHS, Diabetic ketoacidosis",
        "https://www.nhs.uk/conditions/low-blood-sugar-hypoglycaemia/"),
    "paediatric_red_flags": FirstAid(
        "열이 나는 아기를 꽁꽁 싸매지 말고 가볍게 입히세요. 먹으려 하면 수유를 계속하고, 아기수첩과 먹인 약을 챙기세요.",
        "Do not wrap up a feverish baby: dress them lightly. Keep offering feeds if they will feed, and bring "
        "their health record and any medicine given.",
        "NICE NG143 Fever in under 5s; NHS, High temperature (fever) in children",
        "https://www.nhs.uk/conditions/fever-in-children/"),
    "poisoning_overdose": FirstAid(
        "억지로 토하게 하지 마세요. 먹은 약이나 제품의 포장, 병, 남은 것을 챙겨 보여 주세요. 의식이 없지만 숨을 쉬면 옆으로 눕히세요. "
        "단추형 건전지를 삼켰다면 아무것도 먹이지 마세요.",
        "Do not make them vomit. Keep the packet, bottle or what is left to show the crew. If they are "
        "unconscious but breathing, put them on their side. After a button battery, give nothing to eat or drink.",
        "NHS, Poisoning; 한국 중독정보센터", "https://www.nhs.uk/conditions/poisoning/"),
    "carbon_monoxide": FirstAid(
        "모두 지금 바로 밖의 신선한 공기로 나가고 문과 창문을 여세요. 안전하면 가스기구나 난로를 끄고 다시 들어가지 마세요.",
        "Get everyone out into fresh air now and open doors and windows. Turn off the appliance if it is safe, "
        "and do not go back in.",
        "NHS, Carbon monoxide poisoning", "https://www.nhs.uk/conditions/carbon-monoxide-poisoning/"),
    "serious_burns": FirstAid(
        "흐르는 시원한 물에 20분 동안 식히세요. 붙지 않은 옷과 장신구는 벗기고 랩이나 깨끗한 비닐로 덮으세요. 얼음, 연고, 된장은 "
        "바르지 마세요. 감전이면 전원을 먼저 끄고, 화학물질이면 물로 충분히 씻어 내세요.",
        "Cool the burn under cool running water for 20 minutes. Take off clothing and jewellery near it unless "
        "stuck, and cover it with cling film or a clean plastic bag. No ice, creams or butter. For an electric "
        "burn switch off the power first; for a chemical, rinse with plenty of water.",
        "NHS, Burns and scalds", "https://www.nhs.uk/conditions/burns-and-scalds/"),
    "acute_abdomen": FirstAid(
        "가장 덜 아픈 자세로 가만히 있고, 진료를 받기 전까지 먹거나 마시지 마세요(수술이 필요할 수 있어요).",
        "Keep still in the position that hurts least, and do not eat or drink until you have been seen (you "
        "may need an operation).",
        "NHS, Appendicitis; NHS, Testicular torsion", "https://www.nhs.uk/conditions/appendicitis/"),
    "sudden_vision_loss": FirstAid(
        "시작된 시각을 기억하고 운전하지 마세요. 눈에 화학물질이 들어갔다면 깨끗한 흐르는 물로 20분 이상 씻어 내세요.",
        "Note when it started and do not drive. If a chemical went into the eye, rinse it with clean running "
        "water for at least 20 minutes.",
        "NHS, Vision loss; NHS, Eye injuries", "https://www.nhs.uk/conditions/vision-loss/"),
}
"""First aid per category id, each with its source (every id of the taxonomy has one)."""

_CRISIS = {
    "ko": "말해 줘서 고마워요. 지금 많이 힘드신 것 같아요. 혼자 견디지 않으셔도 돼요. "
          "지금 바로 자살예방상담전화 {crisis}(24시간)에 전화해 주세요. 이미 몸을 다쳤거나 당장 위험하다면 {emergency}에 전화하세요.",
    "en": "Thank you for telling me. It sounds like things are very hard right now, and you don't have to face "
          "this alone. Please call the suicide crisis line {crisis} now (24 hours). If you have already hurt "
          "yourself or are in immediate danger, call {emergency}.",
}
"""The crisis line: thanks for saying it, the feeling named, not alone, then both numbers with when to
use each (NHS "Help for suicidal thoughts"; Samaritans' and the WHO's guidance for responders: listen,
take it seriously, say help is there, give the number)."""
_CRISIS_OTHER = {
    "ko": "다른 사람이 걱정되는 상황이라면: 안전하다면 그 사람 곁에 있어 주고, 지금 위험하거나 연락이 닿지 않으면 {emergency}에 전화하세요.",
    "en": "If you are worried about someone else: stay with them if it is safe, and call {emergency} if they are "
          "in danger now or you cannot reach them.",
}
_CALL = {
    "ko": "⚠️ 응급 상황일 수 있어요({names}). 지금 바로 {emergency}에 전화하세요.",
    "en": "⚠️ This may be an emergency ({names}). Call {emergency} now.",
}
_WHILE = {"ko": "기다리는 동안:", "en": "While you wait:"}
_SOURCES = {"ko": "출처:", "en": "Sources:"}
_FOOT = {
    "ko": "저는 자동 안내 서비스라 응급 상황을 판단하거나 의료진을 대신할 수 없어요.",
    "en": "I am an automated service: I cannot assess an emergency or replace a clinician.",
}
_FOOT_CRISIS = {
    "ko": "저는 자동 안내 서비스라 의료진이나 곁에 있어 줄 사람을 대신할 수 없어요. {crisis}에서는 지금 바로 이야기를 들어 줄 사람이 기다리고 있어요.",
    "en": "I am an automated service and cannot replace a clinician or a person to talk to: someone at {crisis} "
          "can listen to you right now.",
}


def _ids(flags: Iterable) -> list[str]:
    seen: list[str] = []
    for f in flags:
        cat = f if isinstance(f, str) else (f.get("category") if isinstance(f, dict) else f.category)
        if cat in BY_ID and cat not in seen:
            seen.append(cat)
    order = [c.id for c in CATEGORIES]
    return sorted(seen, key=order.index)


def emergency_reply(flags: Iterable, lang: str, emergency: str = "119", crisis: str = "109") -> str:
    """The one reply to a message with emergency flags.

    Args:
        flags: category ids, or objects / dicts with a ``category`` (unknown ids are ignored).
        lang: ``ko`` or ``en`` (anything else gets English).
        emergency: the emergency number; crisis: the suicide crisis line.
    Returns:
        Plain text: for suicide risk or self-harm, the crisis line (thanks for saying it, the crisis
        number now, the emergency number when hurt or in danger) and what to do when it is about
        someone else; the call line naming the other categories; one first-aid line per category
        with its source; the notice that the bot is not a clinician (with suicide risk: not a
        person, and someone at the crisis line can listen now).
    Raises:
        ValueError: no known category in ``flags``.
    """
    cats = _ids(flags)
    if not cats:
        raise ValueError("emergency_reply needs at least one emergency category")
    lang = lang if lang in _CALL else "en"
    lines: list[str] = []
    crisis_case = any(BY_ID[c].crisis for c in cats)
    if crisis_case:
        lines.append(_CRISIS[lang].format(crisis=crisis, emergency=emergency))
        lines.append(_CRISIS_OTHER[lang].format(emergency=emergency))
    others = [c for c in cats if not BY_ID[c].crisis]
    if others:
        names = ", ".join(getattr(BY_ID[c], lang) for c in others)
        lines.append(_CALL[lang].format(names=names, emergency=emergency))
    lines.append(_WHILE[lang])
    lines.extend(f"- {getattr(FIRST_AID[c], lang)}" for c in cats)
    lines.append(f"{_SOURCES[lang]} " + "; ".join(f"{FIRST_AID[c].source} ({FIRST_AID[c].url})" for c in cats))
    lines.append(_FOOT_CRISIS[lang].format(crisis=crisis) if crisis_case else _FOOT[lang])
    return "\n".join(lines)


_URGENT = {
    "ko": "⚠️ 응급은 아니어도 오늘 안에 진료를 받아 보세요: {reasons}. 증상이 심해지면 {emergency}에 전화하세요.",
    "en": "⚠️ Not an emergency, but please see a doctor today: {reasons}. If it gets worse, call {emergency}.",
}


def urgent_line(reasons: list[str], lang: str, emergency: str = "119") -> str:
    """The line the urgent tier adds above a normal answer (``reasons`` in the user's language).

    Raises:
        ValueError: ``reasons`` is empty.
    """
    if not reasons:
        raise ValueError("urgent_line needs a reason")
    lang = lang if lang in _URGENT else "en"
    return _URGENT[lang].format(reasons="; ".join(reasons), emergency=emergency)
