"""Safety layer: emergency triage before anything else runs (issue 3)."""

from core.safety.replies import emergency_reply
from core.safety.triage import CATEGORIES, RedFlag, red_flags

__all__ = ["CATEGORIES", "RedFlag", "red_flags", "emergency_reply"]
