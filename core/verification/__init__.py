"""Sentence-level faithfulness checking (SPEC.md §11 "Verification", refining §3.4).

For each answer sentence and the evidence it cites, a calibrated probability that the
evidence supports it:

- :mod:`~core.verification.claims`: the answer's checkable sentences and their citations;
- :mod:`~core.verification.features`: offline features (similarity, numbers and units,
  drug and condition names, negation, modality);
- :mod:`~core.verification.offline`: the offline back end (features -> calibrated P);
- :mod:`~core.verification.endpoint`: the endpoint back end (one call for all sentences,
  constrained output and log-probabilities, calibrated with the offline features);
- :mod:`~core.verification.repair`: rewriting or dropping exactly the failed sentences;
- :mod:`~core.verification.calibration`: the shipped logistic parameters;
- :mod:`~core.verification.fit`: fitting them (scikit-learn, offline, ``train`` extra).
"""

from core.verification.claims import Claim, split_claims
from core.verification.offline import OfflineChecker
from core.verification.result import SentenceVerdict, Verification

__all__ = ["Claim", "OfflineChecker", "SentenceVerdict", "Verification", "split_claims"]
