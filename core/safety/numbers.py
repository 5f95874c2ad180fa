"""The emergency and crisis numbers, and the guideline set, of the place a user is in.

A reply that tells someone to call for help must give the number of *their* country: a patient
in the US told to call 119 reaches no one. The region comes, in this order, from the deployment
(``MEDBOT_REGION``), the user's locale when the channel gives a region (Telegram's
``language_code`` ``en-US``, Slack's ``en-GB``), the user's language where it names one country
(Korean: Korea), and otherwise no region: the reply then names the numbers of the main regions
instead of guessing one. ``EMERGENCY_NUMBER`` / ``CRISIS_NUMBER``, when set, override the table.

Numbers (each region's official source):

- KR: 119 fire and ambulance (National Fire Agency); 109 suicide-prevention line, 24 hours
  (Ministry of Health and Welfare, one number since January 2024).
- US: 911; 988 Suicide & Crisis Lifeline (SAMHSA, since July 2022).
- CA: 911; 9-8-8 Suicide Crisis Helpline (Public Health Agency of Canada, since November 2023).
- GB: 999 (or 112); NHS 111 for urgent advice; Samaritans 116 123 (NHS "Help for suicidal thoughts").
- IE: 112 or 999; Samaritans 116 123 (HSE).
- AU: 000; Lifeline 13 11 14 (Healthdirect).
- NZ: 111; 1737 "need to talk?" (Te Whatu Ora).
- EU member states and other European countries: 112 (the single European emergency number,
  Directive (EU) 2018/1972 art. 109); the crisis line varies: a local crisis line.
- JP: 119 ambulance (Fire and Disaster Management Agency); crisis: the local helpline.

The guideline set (:data:`core.clinical.values.GUIDELINE_SETS`) follows the region: Korea's
societies (the Korean Society of Hypertension 2022, the Korean Society for the Study of Obesity
2022 BMI cut-offs) for KR, the US/WHO tables elsewhere; ``MEDBOT_GUIDELINES`` overrides it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_EU = ("AT", "BE", "BG", "HR", "CY", "CZ", "DK", "EE", "FI", "FR", "DE", "GR", "HU", "IT", "LV", "LT",
       "LU", "MT", "NL", "PL", "PT", "RO", "SK", "SI", "ES", "SE", "NO", "CH", "IS")
_TABLE: dict[str, tuple[str, str]] = {
    "KR": ("119", "109"), "US": ("911", "988"), "CA": ("911", "988"), "GB": ("999", "116 123"),
    "IE": ("112", "116 123"), "AU": ("000", "13 11 14"), "NZ": ("111", "1737"), "JP": ("119", ""),
    **{c: ("112", "") for c in _EU},
}
"""Region (ISO 3166-1 alpha-2) -> (emergency number, crisis line; ``""``: no single national line)."""

GENERIC = {
    "en": ("your local emergency number (911 in the US and Canada, 999 in the UK, 112 in the EU, "
           "119 in Korea)",
           "a suicide crisis line (988 in the US and Canada, Samaritans 116 123 in the UK and "
           "Ireland, 109 in Korea)"),
    "ko": ("현지 응급 번호(한국 119, 미국·캐나다 911, 영국 999, 유럽 112)",
           "자살예방 상담전화(한국 109, 미국·캐나다 988, 영국 116 123)"),
}
"""What a reply says when the user's region is unknown: the main regions' numbers, named."""

_LOCAL_CRISIS = {"en": "a local crisis line", "ko": "현지 자살예방 상담전화"}
_LANG_REGION = {"ko": "KR"}
_TAG = re.compile(r"^[a-z]{2,3}(?:[-_](?:[a-z]{4}[-_])?([a-z]{2}))?$", re.I)


@dataclass(frozen=True)
class Numbers:
    """The numbers a reply gives, as text ready for a sentence.

    Attributes:
        region: the ISO region used, or ``""`` when unknown.
        emergency: the emergency number, or a phrase naming the main regions' numbers.
        crisis: the suicide crisis line, or such a phrase.
        guideline: ``kr`` or ``us``, the guideline set for value tables.
    """

    region: str
    emergency: str
    crisis: str
    guideline: str


def region_of(locale: str | None) -> str:
    """The ISO region of a BCP 47 / Telegram language tag (``en-US`` -> ``US``, ``pt_br`` ->
    ``BR``, ``ko`` -> ``""``); ``""`` for none or a malformed tag."""
    m = _TAG.match((locale or "").strip())
    return (m.group(1) or "").upper() if m else ""


def resolve(lang: str, locale: str | None = None, region: str | None = None,
            emergency: str | None = None, crisis: str | None = None,
            guideline: str | None = None) -> Numbers:
    """The numbers for a user.

    Args:
        lang: the reply's language (``ko``/``en``; others read as ``en``).
        locale: the user's locale tag from the channel, if any.
        region: the deployment's region (``MEDBOT_REGION``), which wins when set.
        emergency, crisis: explicit numbers (``EMERGENCY_NUMBER``/``CRISIS_NUMBER``), which win.
        guideline: explicit guideline set (``MEDBOT_GUIDELINES``).
    Returns:
        :class:`Numbers`. A region outside the table, or none, gets the phrases of
        :data:`GENERIC` (a known region without a national crisis line: "a local crisis line").
    """
    lang = lang if lang in GENERIC else "en"
    code = (region or "").strip().upper() or region_of(locale) or _LANG_REGION.get(lang, "")
    e_num, c_num = _TABLE.get(code, ("", ""))
    generic_e, generic_c = GENERIC[lang]
    e_text = emergency or e_num or generic_e
    c_text = crisis or c_num or (_LOCAL_CRISIS[lang] if e_num else generic_c)
    sets = guideline if guideline in ("kr", "us") else ("kr" if code == "KR" or (not code and lang == "ko") else "us")
    return Numbers(code if code in _TABLE else "", e_text, c_text, sets)


def numbers_for(settings, lang: str, locale: str | None = None) -> Numbers:  # noqa: ANN001 (config.Settings)
    """:func:`resolve` with the deployment's settings (``region``, ``emergency_number``,
    ``crisis_number``, ``guidelines``)."""
    return resolve(lang, locale, getattr(settings, "region", None), getattr(settings, "emergency_number", None),
                   getattr(settings, "crisis_number", None), getattr(settings, "guidelines", None))
