"""The agent core: graph, nodes, extraction, memory, retrieval, cache, prompts, LLM clients.

Depends on ``storage`` and ``config`` only; never on ``adapters``.
"""
