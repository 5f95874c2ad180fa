"""``python -m bot.bench.retrieval DATASET... [--chunk]``: prepare each set's index and embed every
document (resumable), for a long background run before ``medbot bench retrieval``."""

import sys
from pathlib import Path

from bot.bench.retrieval.build import embed_datasets

embed_datasets([Path(a) for a in sys.argv[1:] if not a.startswith("--")],
               unit="chunk" if "--chunk" in sys.argv else "doc")
