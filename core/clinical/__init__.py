"""Sourced clinical tables behind a patient's answer: whom a question is about
(:mod:`core.clinical.person`), what a measured value means (:mod:`core.clinical.values`), drug
classes (:mod:`core.clinical.drugs`) and the risks a profile fact creates for a drug or condition
(:mod:`core.clinical.risks`).

Every row of these tables is a citable fact: the offline answer states it with its source, and an
LLM answer is given it as a fact it must keep.
"""
