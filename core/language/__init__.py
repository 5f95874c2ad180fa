"""Language utilities every other package uses: text (language, sanitising, sentences,
cache keys: :mod:`core.language.text`), exact token counts (:mod:`core.language.tokens`)
and the text embedders (:mod:`core.language.embedding`)."""
