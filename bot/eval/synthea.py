"""Read Synthea's CSV export (Walonoski et al. 2018, JAMIA 25(3):230-238) into patient records.

Columns are found by header name, upper-cased, so both layouts work: the 2017 export in
``../shared/data/synthea`` (``patients.ID``; observations ``DATE, PATIENT, ENCOUNTER, CODE,
DESCRIPTION, VALUE, UNITS``) and newer ones (``patients.Id`` plus address and cost columns;
observations with ``CATEGORY`` and ``TYPE``; conditions with ``SYSTEM``). A file or column that
is missing raises :class:`SyntheaError` naming it.

What a scenario needs from a record: age (at the patient's last observation), sex, the active
conditions and medications (no ``STOP`` date), and the latest vital signs and labs by LOINC code
(README of the data: 8480-6 / 8462-4 blood pressure, 4548-4 HbA1c, 2345-7 or 2339-0 glucose,
2093-3 total cholesterol, 18262-6 LDL, 39156-5 BMI, 29463-7 weight).
"""

from __future__ import annotations

import csv
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

LOINC = {  # code -> our name (units as Synthea writes them)
    "8480-6": "systolic", "8462-4": "diastolic", "4548-4": "hba1c", "2345-7": "glucose",
    "2339-0": "glucose", "2093-3": "cholesterol", "18262-6": "ldl", "2085-9": "hdl",
    "2571-8": "triglycerides", "39156-5": "bmi", "29463-7": "weight", "33914-3": "egfr",
}


class SyntheaError(ValueError):
    """The export is missing a file or a column (the message names it)."""


@dataclass
class Patient:
    """One patient as the scenarios use it.

    Attributes:
        id: Synthea's patient UUID.
        age: whole years at ``as_of`` (the date of the patient's last observation).
        sex: ``M`` or ``F``.
        conditions: DESCRIPTION of each active condition (no STOP date), oldest first.
        medications: DESCRIPTION of each active medication, oldest first.
        latest: LOINC name (:data:`LOINC`) -> (value, units, date) of the latest observation.
    """

    id: str
    age: int
    sex: str
    as_of: str
    conditions: list[str] = field(default_factory=list)
    medications: list[str] = field(default_factory=list)
    latest: dict[str, tuple[float, str, str]] = field(default_factory=dict)


def _rows(path: Path, needed: tuple[str, ...]):
    if not path.is_file():
        raise SyntheaError(f"missing Synthea file {path}")
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = [h.strip().upper() for h in next(reader, [])]
        missing = [c for c in needed if c not in header]
        if missing:
            raise SyntheaError(f"{path.name} lacks column(s) {', '.join(missing)} (has {', '.join(header)})")
        idx = {c: header.index(c) for c in header}
        for row in reader:
            if row:
                yield {c: (row[i] if i < len(row) else "") for c, i in idx.items()}


def _age(birth: str, on: str) -> int:
    b, d = date.fromisoformat(birth[:10]), date.fromisoformat(on[:10])
    return d.year - b.year - ((d.month, d.day) < (b.month, b.day))


def _active(path: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    rows = sorted(_rows(path, ("START", "STOP", "PATIENT", "DESCRIPTION")), key=lambda r: r["START"])
    for r in rows:
        if not r["STOP"].strip() and r["DESCRIPTION"] not in out[r["PATIENT"]]:
            out[r["PATIENT"]].append(r["DESCRIPTION"])
    return out


def load_patients(folder: Path) -> list[Patient]:
    """Every living patient of the export, sorted by id (a stable order for seeded sampling).

    Raises:
        SyntheaError: a file or column is missing.
    """
    folder = Path(folder)
    latest: dict[str, dict[str, tuple[float, str, str]]] = defaultdict(dict)
    last_date: dict[str, str] = {}
    for r in _rows(folder / "observations.csv", ("DATE", "PATIENT", "CODE", "VALUE", "UNITS")):
        pid, day = r["PATIENT"], r["DATE"][:10]
        last_date[pid] = max(last_date.get(pid, day), day)
        name = LOINC.get(r["CODE"])
        if name is None:
            continue
        try:
            value = float(r["VALUE"])
        except ValueError:
            continue
        if name not in latest[pid] or day >= latest[pid][name][2]:
            latest[pid][name] = (value, r["UNITS"], day)
    conditions = _active(folder / "conditions.csv")
    medications = _active(folder / "medications.csv")
    patients = []
    for r in _rows(folder / "patients.csv", ("ID", "BIRTHDATE", "DEATHDATE", "GENDER")):
        pid = r["ID"]
        if not pid or r["DEATHDATE"].strip() or pid not in last_date:
            continue
        patients.append(Patient(pid, _age(r["BIRTHDATE"], last_date[pid]), r["GENDER"].strip().upper()[:1],
                                last_date[pid], conditions.get(pid, []), medications.get(pid, []),
                                latest.get(pid, {})))
    return sorted(patients, key=lambda p: p.id)
