"""The benchmarks behind ``medbot bench …``: one module per benchmark, the helpers they share,
the labelled sets only they read, and the loopback LLM server benches and tests share.

Modules (each imported lazily by :mod:`bot.cli`, so ``medbot --help`` loads none of them):

- :mod:`.turn` (``bench turn``), per-node latency over a five-turn script;
- :mod:`.extraction`, :mod:`.memory`, :mod:`.cache`, :mod:`.triage`, :mod:`.channels`,
  :mod:`.robustness`, :mod:`.service`, :mod:`.llm`: ``bench <name>`` of the same name;
- :mod:`.retrieval` and :mod:`.answers`: the retrieval and grounded-answer benchmarks
  (packages: sets, index builds, timing, sweeps, scoring, reports);
- :mod:`.common`: percentiles and resident memory, shared by the benches;
- :mod:`.fake_llm`: a loopback OpenAI-compatible server (standard library only), used by
  ``bench channels`` and by the test suite;
- ``data/``: the team's labelled sets (``extraction_eval.jsonl``, ``extraction_holdout.jsonl``,
  ``korean_retrieval.jsonl``, ``triage_heldout.jsonl``, ``triage_blind.jsonl``), shipped as
  package data so every bench runs from an installed wheel.

The evaluation harness (``medbot eval``) is the sibling package :mod:`bot.eval`.
"""
