"""Settings and feature flags (SPEC.md §10), loaded once per process."""

from config.flags import FeatureFlags
from config.settings import Settings, get_settings

__all__ = ["FeatureFlags", "Settings", "get_settings"]
