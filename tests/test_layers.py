"""The import direction of the house rules (docs/architecture.md): bot -> adapters -> core ->
storage -> config, never back up, and no shipped package imports the test suite.

Every ``import`` and ``from ... import`` of every module is read with :mod:`ast`, including the
ones inside functions (a lazy import is still a dependency), so a violation anywhere in a file
fails here with its file and line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

FORBIDDEN = {
    "config": {"storage", "core", "adapters", "bot", "tests"},
    "storage": {"core", "adapters", "bot", "tests"},
    "core": {"adapters", "bot", "tests"},
    "adapters": {"storage", "bot", "tests"},
    "bot": {"tests"},
}
"""Per layer, the top-level packages its modules must not import."""


def imported_roots(path: Path) -> list[tuple[int, str]]:
    """The top-level package of every absolute import in ``path``, with its line number
    (relative imports stay inside their own package and are skipped)."""
    tree = ast.parse(path.read_text("utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
    return found


def violations(layer: str) -> list[str]:
    """``file:line imports package`` for every forbidden import under ``layer``."""
    out = []
    for path in sorted((ROOT / layer).rglob("*.py")):
        for line, root in imported_roots(path):
            if root in FORBIDDEN[layer]:
                out.append(f"{path.relative_to(ROOT)}:{line} imports {root}")
    return out


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_imports_point_down_only(layer):
    assert (ROOT / layer).is_dir()
    assert violations(layer) == []


def test_the_checker_sees_lazy_and_from_imports(tmp_path):
    """The walk finds an import inside a function and a dotted ``from`` import, so an empty
    list above means there are none, not that the checker missed them."""
    probe = tmp_path / "probe.py"
    probe.write_text("import os\n\ndef f():\n    from storage.redis import get_redis\n"
                     "    import adapters.formatting as fmt\n    from . import sibling\n")
    assert imported_roots(probe) == [(1, "os"), (4, "storage"), (5, "adapters")]
