"""Every file the shipped packages read is in the wheel: each data file under ``bot/``,
``adapters/``, ``core/``, ``storage/`` and ``config/`` is matched by a pattern of
``pyproject.toml``'s ``[tool.setuptools.package-data]`` (``medbot bench …`` must run
from an installed package, not only from the checkout). Markdown files are documentation and
stay out of the wheel.
"""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOP = ("bot", "adapters", "core", "storage", "config")


def shipped_patterns() -> dict[Path, list[str]]:
    """Package directory -> its package-data glob patterns (``pyproject.toml``)."""
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    data = conf["tool"]["setuptools"]["package-data"]
    return {ROOT.joinpath(*pkg.split(".")): patterns for pkg, patterns in data.items()}


def covered(path: Path, patterns: dict[Path, list[str]]) -> bool:
    """True when a pattern of a package above ``path`` globs it, as setuptools does."""
    return any(path in set(pkg.glob(p)) for pkg, pats in patterns.items()
               if pkg in path.parents for p in pats)


def data_files() -> list[Path]:
    """The files of the shipped packages that Python does not import as modules: everything
    tracked by git that is not a ``.py`` file of a package directory (one with ``__init__.py``)
    and not Markdown."""
    listed = subprocess.run(["git", "ls-files", *TOP], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.split()
    out = []
    for rel in listed:
        path = ROOT / rel
        if path.suffix == ".md" or not path.exists():
            continue
        if path.suffix == ".py" and (path.parent / "__init__.py").exists():
            continue
        out.append(path)
    return out


def test_every_data_file_is_package_data():
    patterns = shipped_patterns()
    files = data_files()
    assert any(p.parent == ROOT / "bot" / "bench" / "data" for p in files)  # the walk sees them
    missing = [str(p.relative_to(ROOT)) for p in files if not covered(p, patterns)]
    assert missing == []


def test_the_check_notices_a_file_no_pattern_names():
    patterns = shipped_patterns()
    assert covered(ROOT / "bot" / "bench" / "data" / "korean_retrieval.jsonl", patterns)
    assert not covered(ROOT / "bot" / "bench" / "data" / "no-such-file.csv", patterns)
    assert not covered(ROOT / "bot" / "bench" / "fake_llm.py", patterns)  # a module, not data
