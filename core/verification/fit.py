"""Fitting a back end's calibration (offline, scikit-learn from the ``train`` extra; the runtime
never imports this module).

L2-regularised logistic regression over the back end's features (Platt scaling generalised to
several inputs; Platt 1999), its strength ``C`` chosen by 5-fold cross-validated log-loss on the
training data from :data:`C_GRID`, class weights off so the probabilities stay calibrated to the
training data's base rate. The output records the SHA-256 of the
training data so that a shipped model can be traced to what it learnt from.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from core.verification.calibration import Calibration

C_GRID = (0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0)


def choose_c(x: np.ndarray, y: np.ndarray, seed: int = 0) -> tuple[float, dict[str, float]]:
    """The ``C`` of :data:`C_GRID` with the lowest 5-fold cross-validated log-loss (stratified,
    shuffled with ``seed``); returns it and the loss of every candidate."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    folds = StratifiedKFold(5, shuffle=True, random_state=seed)
    losses = {c: -float(np.mean(cross_val_score(LogisticRegression(C=c, max_iter=5000), x, y, cv=folds,
                                                scoring="neg_log_loss"))) for c in C_GRID}
    best = min(losses, key=losses.get)  # type: ignore[arg-type]
    return best, {str(c): round(v, 4) for c, v in losses.items()}


def sha256_files(paths: list[Path]) -> str:
    """SHA-256 over the bytes of ``paths`` in the given order."""
    h = hashlib.sha256()
    for p in paths:
        h.update(Path(p).read_bytes())
    return h.hexdigest()


def fit(backend: str, features: tuple[str, ...], x: np.ndarray, y: np.ndarray, data: list[Path],
        floor: float = 0.5, c: float | None = None, extra: dict | None = None) -> Calibration:
    """Fit the logistic model.

    Args:
        backend: ``offline`` or ``endpoint``.
        features: the column names of ``x``.
        x: (n, len(features)) feature matrix; y: (n,) 0/1 labels (1 = supported).
        data: the training files (hashed into ``trained_on``).
        floor: the support floor to ship.
        c: inverse regularisation strength (``None``: :func:`choose_c`).
        extra: more provenance (e.g. the endpoint's model name).
    Returns:
        The fitted :class:`Calibration`.
    Raises:
        ImportError: scikit-learn is not installed (``pip install -e '.[train]'``).
        ValueError: only one class in ``y``.
    """
    from sklearn.linear_model import LogisticRegression

    if len(set(y.tolist())) < 2:
        raise ValueError("calibration needs supported and unsupported items")
    cv = {}
    if c is None:
        c, cv = choose_c(x, y)
    model = LogisticRegression(C=c, max_iter=5000).fit(x, y)
    p = model.predict_proba(x)[:, 1]
    trained = {"sha256": sha256_files(data), "files": [Path(d).name for d in data], "n": int(len(y)),
               "positives": int(y.sum()), "brier_train": round(float(np.mean((p - y) ** 2)), 4),
               "method": f"sklearn LogisticRegression(C={c})", "cv_log_loss": cv, **(extra or {})}
    return Calibration(backend, tuple(features), tuple(float(w) for w in model.coef_[0]),
                       float(model.intercept_[0]), floor, trained)
