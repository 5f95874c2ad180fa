"""The "urgent, not emergency" tier: see a doctor today (SPEC.md §11 "Emergency triage").

A message in this tier gets the normal answer with one line above it (it does not replace the
answer). The rules read the same :class:`core.safety.findings.Findings` as layer 1 and only
apply when no emergency was found:

- SpO2 90-94 %: KTAS level 2's respiratory modifier (below 90 % is the emergency of layer 1);
- fever ≥ 39 °C in a baby of 3-6 months: amber in NICE NG143's traffic-light table;
- fever with pain in the side or back and urinary symptoms: possible pyelonephritis, NICE
  NG111 / NHS "Kidney infection" (see a GP the same day);
- blood pressure ≥ 180/120 mmHg without emergency symptoms: NICE NG136 (assess for
  target-organ damage as soon as possible);
- glucose ≥ 300 mg/dL (16.7 mmol/L) without DKA signs: NHS "High blood sugar
  (hyperglycaemia)" (check ketones, contact the diabetes team the same day);
- spreading redness around a wound: NHS "Cellulitis" (ask for an urgent GP appointment);
- fever ≥ 39 °C for 3 days or more: NHS "Fever in adults" / NICE NG143 (fever ≥ 5 days in
  children).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.safety.findings import Findings


@dataclass(frozen=True)
class Urgent:
    """One urgent finding: its rule id and the reason shown to the user in each language."""

    rule: str
    ko: str
    en: str


_URINARY = re.compile(r"소변\s*볼\s*때|배뇨|오줌|방광|\bpee\b|\burinat\w*|\bburning\s+when\s+i\s+pee\b|\bcystitis\b|\buti\b", re.I)
_FLANK = re.compile(r"옆구리|허리|등\s*쪽|\bside\b|\bflank\b|\bback\b", re.I)
_SPREADING = re.compile(r"빨갛게\s*퍼|붉은\s*기가\s*퍼|퍼지고\s*따뜻|\bredness\b.{0,40}\bspread\w*|\bspreading\b.{0,20}\bred", re.I)
_DAYS = re.compile(r"(?:사흘|나흘|닷새|[3-9]\s*일)\s*(?:째|동안|넘게)|(?:three|four|five|[3-9])\s+days", re.I)


def urgent_findings(f: Findings) -> list[Urgent]:
    """The urgent-tier findings of a message (empty for most messages)."""
    out: list[Urgent] = []
    if f.question or f.hypothetical:
        return out
    if f.spo2 is not None and 90 <= f.spo2 <= 94:
        out.append(Urgent("spo2_90_94", f"산소포화도 {f.spo2:.0f}%", f"oxygen saturation {f.spo2:.0f}%"))
    t = f.temperature_c
    if t is not None and t >= 39 and f.age_months is not None and 3 <= f.age_months < 6:
        out.append(Urgent("fever_3_6_months", "생후 3~6개월 아기의 39도 이상 열", "a fever of 39 °C or more at 3-6 months"))
    if f.fever and _URINARY.search(f.text) and _FLANK.search(f.text):
        out.append(Urgent("pyelonephritis", "열과 옆구리 통증을 동반한 배뇨 증상", "urinary symptoms with fever and pain in the side"))
    if (f.sbp or 0) >= 180 or (f.dbp or 0) >= 120:
        out.append(Urgent("bp_180_120", f"혈압 {f.sbp or 0:.0f}/{f.dbp or 0:.0f} mmHg", f"blood pressure {f.sbp or 0:.0f}/{f.dbp or 0:.0f} mmHg"))
    if f.glucose_mgdl is not None and f.glucose_mgdl >= 300:
        out.append(Urgent("glucose_300", f"혈당 {f.glucose_mgdl:.0f} mg/dL", f"blood glucose {f.glucose_mgdl:.0f} mg/dL"))
    if _SPREADING.search(f.text):
        out.append(Urgent("cellulitis", "상처 주변으로 퍼지는 붉은 기", "redness spreading around a wound"))
    if t is not None and t >= 39 and _DAYS.search(f.text):
        out.append(Urgent("fever_3_days", "사흘 이상 계속되는 39도 이상의 열", "a fever of 39 °C or more for 3 days or more"))
    return out
