"""Safety layer: emergency triage before anything else runs (issues 3 and 11)."""

from core.safety.replies import emergency_reply, urgent_line
from core.safety.triage import CATEGORIES, RedFlag, TriageResult, assess, red_flags

__all__ = ["CATEGORIES", "RedFlag", "TriageResult", "assess", "red_flags", "emergency_reply", "urgent_line"]
