"""The emergency reply, in the user's language, with the deployment's emergency numbers.

Defaults are Korea's: 119 (fire and ambulance) and 109 (the suicide-prevention line of the
Ministry of Health and Welfare, 24 hours, since 2024); both are settings (``EMERGENCY_NUMBER``,
``CRISIS_NUMBER``). First-aid lines follow the NHS and the Korean Red Cross's basic guidance
and only say what is safe to do while help is on its way.
"""

from __future__ import annotations

from core.safety.triage import RedFlag

_HEAD = {
    "ko": "⚠️ 응급 상황일 수 있어요. 지금 바로 {emergency}에 전화하세요.",
    "en": "⚠️ This may be an emergency. Call {emergency} now.",
}
_CRISIS = {
    "ko": "혼자 견디지 않으셔도 돼요. 지금 자살예방상담전화 {crisis}(24시간)에 전화하세요. "
          "당장 위험하다면 {emergency}에 전화하세요.",
    "en": "You don't have to face this alone. Call the suicide crisis line {crisis} now "
          "(24 hours). If you are in immediate danger, call {emergency}.",
}
_ADVICE = {
    "ko": {
        "chest_pain": "움직이지 말고 편히 앉아 구급대를 기다리세요.",
        "stroke": "증상이 시작된 시각을 기억해 두고, 음식이나 물은 드리지 마세요.",
        "breathing": "편한 자세로 앉아 구급대를 기다리세요.",
        "bleeding": "깨끗한 천으로 출혈 부위를 세게 눌러 주세요.",
        "syncope_confusion": "숨을 쉬는지 확인하세요. 숨을 쉬지 않으면 119 상담원의 안내에 따라 심폐소생술을 하세요.",
        "seizure": "주변의 위험한 물건을 치우고 입에 아무것도 넣지 마세요. 경련이 멈추면 옆으로 눕혀 주세요.",
        "anaphylaxis": "에피네프린 자가주사기(에피펜)가 있다면 지금 사용하세요.",
        "overdose": "먹은 약이나 물질의 이름, 양, 시각을 구급대원에게 알려 주세요. 억지로 토하게 하지 마세요.",
        "suicide": "",
    },
    "en": {
        "chest_pain": "Stop what you are doing, sit down and rest while you wait for the ambulance.",
        "stroke": "Note the time the symptoms started, and do not give food or drink.",
        "breathing": "Sit upright in the most comfortable position while you wait.",
        "bleeding": "Press firmly on the wound with a clean cloth.",
        "syncope_confusion": "Check that they are breathing; if not, start CPR as the call handler tells you.",
        "seizure": "Move dangerous objects away and put nothing in their mouth; once it stops, "
                   "turn them on their side.",
        "anaphylaxis": "If an adrenaline auto-injector (EpiPen) is available, use it now.",
        "overdose": "Tell the paramedics what was taken, how much and when. Do not make anyone vomit.",
        "suicide": "",
    },
}
_FOOT = {
    "ko": "저는 자동 안내 서비스라 응급 상황을 판단하거나 의료진을 대신할 수 없어요.",
    "en": "I am an automated service: I cannot assess an emergency or replace a clinician.",
}


def emergency_reply(flags: list[RedFlag], lang: str, emergency: str = "119",
                    crisis: str = "109") -> str:
    """The reply to a message with red flags.

    Args:
        flags: non-empty, ordered by :data:`core.safety.triage.CATEGORIES`.
        lang: ``ko`` or ``en`` (anything else gets English).
        emergency: the emergency number; crisis: the suicide crisis line.
    Returns:
        Plain text: call-now line first, then at most two first-aid lines, then the notice
        that the bot is not a clinician.
    Raises:
        ValueError: ``flags`` is empty.
    """
    if not flags:
        raise ValueError("emergency_reply needs at least one red flag")
    lang = lang if lang in _HEAD else "en"
    cats = [f.category for f in flags]
    lines = []
    if "suicide" in cats:
        lines.append(_CRISIS[lang].format(crisis=crisis, emergency=emergency))
    if cats != ["suicide"]:
        lines.append(_HEAD[lang].format(emergency=emergency))
    advice = [_ADVICE[lang][c] for c in cats if _ADVICE[lang][c]][:2]
    lines.extend(advice)
    lines.append(_FOOT[lang])
    return "\n".join(lines)
