"""Token counting (cl100k_base, bundled) and truncation; loading works with no network."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from core.language.tokens import count_tokens, encoding, truncate_tokens

MIXED = "메트포르민 복용 중 설사가 계속돼요. Metformin 500 mg twice daily — is that normal? 😊"


@pytest.mark.parametrize("text, expected", [
    ("", 0),
    ("hello world", 2),
    ("tiktoken is great!", 6),
    ("<|endoftext|>", 7),  # special-token text counts as plain text
])
def test_count_tokens_known_cl100k_counts(text, expected):
    assert count_tokens(text) == expected


def test_encoding_is_cl100k():
    enc = encoding()
    assert enc.n_vocab == 100277
    assert enc.encode("hello world") == [15339, 1917]
    assert encoding() is enc


@pytest.mark.parametrize("text", [
    MIXED,
    "고혈압 환자는 소금 섭취를 하루 5 g 미만으로 줄이는 것이 좋습니다." * 3,
    "Blood pressure above 140/90 mmHg on repeated readings is hypertension.",
])
def test_truncate_tokens_is_a_bounded_prefix(text):
    total = count_tokens(text)
    assert total > 10
    previous = ""
    for limit in range(0, total + 3):
        cut = truncate_tokens(text, limit)
        assert text.startswith(cut), (limit, cut)
        assert count_tokens(cut) <= limit
        assert "\ufffd" not in cut
        assert cut.startswith(previous)  # longer limits never give a shorter prefix
        previous = cut
        if limit >= total:
            assert cut == text
    assert truncate_tokens(text, 1) != ""
    assert truncate_tokens(text, -5) == ""


def test_truncate_korean_drops_partial_character():
    text = "당뇨병"  # each syllable takes more than one byte-level token
    ids = encoding().encode(text)
    assert len(ids) > len(text)
    for limit in range(len(ids) + 1):
        cut = truncate_tokens(text, limit)
        assert cut in ("", "당", "당뇨", "당뇨병")
        assert count_tokens(cut) <= limit


_OFFLINE = textwrap.dedent("""
    import json, socket

    attempts = []

    def _refuse(*args, **kwargs):
        attempts.append(repr(args[1:] if args else kwargs))
        raise OSError("network unreachable")

    socket.socket.connect = _refuse
    socket.socket.connect_ex = _refuse
    socket.create_connection = lambda *a, **k: _refuse(None, *a, **k)
    _getaddrinfo = socket.getaddrinfo
    socket.getaddrinfo = lambda *a, **k: _refuse(None, *a, **k)

    from core.language.tokens import count_tokens
    n = count_tokens(TEXT)
    print(json.dumps({"count": n, "attempts": attempts}))
""")


def test_tokens_load_offline_with_empty_cache(tmp_path):
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    env = dict(os.environ)
    env["TIKTOKEN_CACHE_DIR"] = str(cache)
    env.pop("DATA_GYM_CACHE_DIR", None)
    for proxy in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        env.pop(proxy, None)
    code = f"TEXT = {MIXED!r}\n" + _OFFLINE
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=Path(__file__).resolve().parents[1], timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["attempts"] == []
    assert out["count"] == count_tokens(MIXED)
    assert out["count"] > 20
