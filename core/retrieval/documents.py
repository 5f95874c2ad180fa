"""Reading knowledge files (JSONL, Markdown, plain text) and chunking them by tokens.

JSONL records need ``text``; ``id`` (or BEIR's ``_id``), ``title``, ``source``, ``url`` and
``lang`` are read when present and every other field is kept as metadata. A bad record is
reported with its file and line and skipped; reading goes on.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.language.text import detect_lang, split_sentences
from core.language.tokens import count_tokens, encoding

_KNOWN = {"id", "_id", "title", "text", "source", "url", "lang"}


@dataclass(frozen=True)
class Document:
    """A source document; citations point to it."""

    doc_id: str
    title: str
    text: str
    source: str = ""
    url: str = ""
    lang: str = "en"
    meta: dict[str, Any] = field(default_factory=dict)
    line: int = 0

    def with_id(self, doc_id: str) -> "Document":
        """A copy under another id (used to keep a duplicate id's record as its own document)."""
        return Document(doc_id, self.title, self.text, self.source, self.url, self.lang,
                        self.meta, self.line)


@dataclass(frozen=True)
class Chunk:
    """A piece of a document of at most ``chunk_tokens`` tokens; ``hash`` keys its embedding."""

    chunk_id: str
    doc_id: str
    title: str
    text: str
    source: str
    url: str
    lang: str
    meta: dict[str, Any]

    @property
    def hash(self) -> str:
        """SHA-1 of the text that is embedded (title + text): equal text, equal vector."""
        return hashlib.sha1(f"{self.title}\n{self.text}".encode("utf-8")).hexdigest()

    def to_json(self) -> dict[str, Any]:
        """JSON-serialisable form stored in ``chunks.jsonl``."""
        return {"chunk_id": self.chunk_id, "doc_id": self.doc_id, "title": self.title,
                "text": self.text, "source": self.source, "url": self.url, "lang": self.lang,
                "meta": self.meta, "hash": self.hash}


@dataclass
class ReadError:
    """A record that could not be read: where and why."""

    path: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


def read_documents(path: Path, errors: list[ReadError]) -> Iterator[Document]:
    """Yield the documents of one file (``.jsonl``, ``.md``/``.markdown``, anything else as text).

    Appends a :class:`ReadError` to ``errors`` for each bad record and goes on.
    Raises:
        FileNotFoundError: ``path`` does not exist.
    """
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    if path.suffix.lower() in {".jsonl", ".ndjson"}:
        yield from _read_jsonl(path, errors)
        return
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        errors.append(ReadError(str(path), 0, f"not UTF-8 text ({exc.reason})"))
        return
    if not text.strip():
        errors.append(ReadError(str(path), 0, "empty file"))
        return
    title = path.stem
    if path.suffix.lower() in {".md", ".markdown"}:
        for line in text.splitlines():
            if line.startswith("# "):
                title = line[2:].strip()
                break
    yield Document(doc_id=path.stem, title=title, text=text, source=path.name,
                   url=path.resolve().as_uri(), lang=detect_lang(text))


def _read_jsonl(path: Path, errors: list[ReadError]) -> Iterator[Document]:
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                errors.append(ReadError(str(path), lineno, f"not valid JSON ({exc})"))
                continue
            doc = _record_to_document(rec, path, lineno, errors)
            if doc is not None:
                yield doc


def _record_to_document(rec: Any, path: Path, lineno: int,
                        errors: list[ReadError]) -> Document | None:
    if not isinstance(rec, dict):
        errors.append(ReadError(str(path), lineno, "record is not a JSON object"))
        return None
    text = rec.get("text")
    if not isinstance(text, str) or not text.strip():
        errors.append(ReadError(str(path), lineno, "missing or empty 'text'"))
        return None
    doc_id = str(rec.get("id") or rec.get("_id") or f"{path.stem}:{lineno}")
    title = str(rec.get("title") or "").strip()
    lang = str(rec.get("lang") or detect_lang(title + " " + text))
    meta = {k: v for k, v in rec.items() if k not in _KNOWN}
    return Document(doc_id=doc_id, title=title, text=text.strip(),
                    source=str(rec.get("source") or path.name), url=str(rec.get("url") or ""),
                    lang=lang, meta=meta, line=lineno)


def chunk_document(doc: Document, chunk_tokens: int = 300, overlap_tokens: int = 50) -> list[Chunk]:
    """Split a document into chunks of at most ``chunk_tokens`` tokens (cl100k_base).

    Sentences are packed greedily; consecutive chunks share up to ``overlap_tokens`` tokens of
    trailing sentences; a single sentence longer than the limit is cut on token boundaries.
    A document that fits is one chunk with ``chunk_id == doc_id``.
    """
    if count_tokens(doc.text) <= chunk_tokens:
        return [_chunk(doc, 0, doc.text, single=True)]
    pieces: list[str] = []
    for sent in split_sentences(doc.text):
        pieces.extend(_split_long(sent, chunk_tokens))
    chunks: list[Chunk] = []
    cur: list[tuple[str, int]] = []
    for piece in pieces:
        n = count_tokens(piece)
        if cur and sum(c for _, c in cur) + n > chunk_tokens:
            chunks.append(_chunk(doc, len(chunks), " ".join(p for p, _ in cur)))
            cur = _overlap_tail(cur, overlap_tokens, chunk_tokens - n)
        cur.append((piece, n))
    if cur:
        chunks.append(_chunk(doc, len(chunks), " ".join(p for p, _ in cur)))
    return chunks


def _split_long(sentence: str, limit: int) -> list[str]:
    """Cut a sentence into pieces of at most ``limit`` tokens, each cut moved back to a
    character boundary so no character is lost."""
    ids = encoding().encode(sentence, disallowed_special=())
    if len(ids) <= limit:
        return [sentence]
    pieces, i = [], 0
    while i < len(ids):
        j = min(i + limit, len(ids))
        while j > i + 1:
            try:
                pieces.append(encoding().decode_bytes(ids[i:j]).decode("utf-8"))
                break
            except UnicodeDecodeError:
                j -= 1
        else:
            pieces.append(encoding().decode_bytes(ids[i:j]).decode("utf-8", "replace"))
        i = j
    return pieces


def _overlap_tail(cur: list[tuple[str, int]], overlap: int, room: int) -> list[tuple[str, int]]:
    tail: list[tuple[str, int]] = []
    total = 0
    for piece, n in reversed(cur):
        if total + n > min(overlap, room):
            break
        tail.insert(0, (piece, n))
        total += n
    return tail


def _chunk(doc: Document, i: int, text: str, single: bool = False) -> Chunk:
    return Chunk(chunk_id=doc.doc_id if single else f"{doc.doc_id}#{i}", doc_id=doc.doc_id,
                 title=doc.title, text=text, source=doc.source, url=doc.url, lang=doc.lang,
                 meta=doc.meta)
