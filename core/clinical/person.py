"""Whom a question is about: the user, their child, or another person, with the age, sex,
pregnancy and weight that change an answer.

Age bands (:data:`AGE_GROUPS`): newborn < 28 days (WHO "neonatal period", the first 28 days of
life), infant 28 days to < 1 year, child 1 to < 12 years, adolescent 12 to < 18 years (AAP Bright
Futures; WHO defines adolescence as 10-19), adult 18 to < 65, older adult ≥ 65 (the WHO and
American Geriatrics Society Beers criteria threshold).
"""

from __future__ import annotations

from dataclasses import dataclass

AGE_GROUPS = ("newborn", "infant", "child", "adolescent", "adult", "older_adult")
NEWBORN_MAX_YEARS = 28 / 365.25
"""The neonatal period: the first 28 days of life (WHO)."""


def age_group(age_years: float | None) -> str | None:
    """The age band of :data:`AGE_GROUPS` for ``age_years`` (0.25 = 3 months); ``None`` when
    the age is unknown or negative."""
    if age_years is None or age_years < 0:
        return None
    for limit, group in ((NEWBORN_MAX_YEARS, "newborn"), (1, "infant"), (12, "child"),
                         (18, "adolescent"), (65, "adult")):
        if age_years < limit:
            return group
    return "older_adult"


@dataclass(frozen=True)
class Person:
    """Whom a question is about.

    Attributes:
        who: ``self`` (the user), ``child`` (the user's child or a baby they care for) or
            ``other`` (another adult).
        age_years: age in years (0.25 for 3 months); ``None`` when unknown.
        sex: ``male``, ``female`` or ``None``.
        pregnant: stated pregnant; ``pregnancy_week`` the gestational week when given.
        weight_kg: body weight in kg, when given.
    """

    who: str = "self"
    age_years: float | None = None
    sex: str | None = None
    pregnant: bool = False
    pregnancy_week: int | None = None
    weight_kg: float | None = None

    @property
    def age_group(self) -> str | None:
        """:func:`age_group` of :attr:`age_years`."""
        return age_group(self.age_years)

    @property
    def is_minor(self) -> bool:
        """True for a known age under 18, or a child of unknown age."""
        group = self.age_group
        return group in ("newborn", "infant", "child", "adolescent") or (group is None and self.who == "child")
