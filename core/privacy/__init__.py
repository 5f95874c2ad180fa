"""What in a user's text may be specific to that user (SPEC.md §11 "Privacy": an answer is
shared only when nothing user-specific can be in it).

:func:`personal_findings` runs every detector over a text: identifiers by shape
(:mod:`core.privacy.shapes`), names and unknown words (:mod:`core.privacy.names`), a stated
age, sex or pregnancy and first-person statements (:mod:`core.privacy.statements`), and
instructions addressed to the assistant (:func:`core.privacy.injection.instruction_spans`). Each
detector errs towards finding something: the response cache treats any finding as "in doubt,
the answer is the asker's own" (:mod:`core.cache.ownership`).

The package also holds the rest of SPEC.md §11 "Privacy": user text quoted, never obeyed
(:mod:`core.privacy.injection`), erasure everywhere (:mod:`core.privacy.erasure`), the audit log's
pseudonyms (:mod:`core.privacy.audit`) and the retention job (:mod:`core.privacy.retention`).
"""

from __future__ import annotations

from core.privacy.injection import instruction_spans
from core.privacy.names import name_findings
from core.privacy.shapes import Finding, shape_findings
from core.privacy.statements import statement_findings

__all__ = ["Finding", "personal_findings", "is_personal_text"]


def personal_findings(text: str) -> list[Finding]:
    """Everything in ``text`` that may be specific to a person, sorted by position.

    Args:
        text: a question or message, English, Korean or mixed, of any length (the detectors
            are linear in it; the cache passes the question as the prompt holds it).
    Returns:
        :class:`core.privacy.shapes.Finding` items (kind, character span, text); empty when
        the text is made only of known words and asks without stating anything personal.
    """
    out = shape_findings(text) + name_findings(text) + statement_findings(text)
    out += [Finding("instruction", a, b, text[a:b]) for a, b in instruction_spans(text)]
    return sorted(out, key=lambda f: (f.start, f.end, f.kind))


def is_personal_text(text: str) -> bool:
    """True when :func:`personal_findings` finds anything in ``text``."""
    return bool(personal_findings(text))
