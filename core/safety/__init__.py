"""Safety layer: emergency triage before anything else runs (SPEC.md §11 "Emergency triage")."""

from core.safety.replies import emergency_reply, urgent_line
from core.safety.triage import CATEGORIES, RedFlag, TriageResult, assess, red_flags

__all__ = ["CATEGORIES", "RedFlag", "TriageResult", "assess", "red_flags", "emergency_reply", "urgent_line"]
