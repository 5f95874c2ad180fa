"""The answer's prompt and its quality (SPEC.md §3.3, §3.4).

- :mod:`core.answer.context`: the token-budgeted prompt sections;
- :mod:`core.answer.prompts`: the prompt texts;
- :mod:`core.answer.document_compression`: compression of retrieved documents that
  would not fit their budget;
- :mod:`core.answer.evidence`: the sentences of the documents that answer the question;
- :mod:`core.answer.quality`: the quality score of self-refine.

The sentence-level checker is :mod:`core.verification`.
"""
