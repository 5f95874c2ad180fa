"""``/metrics`` in the Prometheus text format, for one process or for every process of a host.

**Single process** (``PROMETHEUS_MULTIPROC_DIR`` unset): the default registry of this process.

**Several processes** (``PROMETHEUS_MULTIPROC_DIR`` set to a directory, the same for every
``medbot run`` and ``medbot worker`` of a host, *before* they start): prometheus_client's
multiprocess mode. Each process writes its values to its own memory-mapped files
``<type>_<pid>.db`` in the directory, and ``/metrics`` of any of them serves the sum over the
host (in-flight turns and queue depth keep one series per process, labelled ``pid``).

Files of processes that ended are cleaned so the directory does not grow with restarts and no
dead process's gauge is served: at a clean exit (:func:`install_exit_cleanup`) the process folds
its counters and histograms into ``counter_archive.db`` / ``histogram_archive.db`` and deletes
its own files; a process killed with SIGKILL cannot, so every process sweeps the files of dead
pids of its host when it starts and after (:func:`sweep_dead`). Folding keeps every counter's
total (a counter that went down would read as a reset to Prometheus). Folding and reading take
an ``flock`` on ``<dir>/.lock`` (exclusive / shared), so a scrape never sees a process twice
or not at all. The directory must be local to the host (one per host or container, never
shared between hosts) and should be emptied when the host boots.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import glob
import logging
import os
import re
from collections.abc import Callable, Iterator

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest

log = logging.getLogger(__name__)

_PID_FILE = re.compile(r"^(counter|histogram|gauge_[a-z]+)_(\d+)\.db$")
_ARCHIVE = {"counter": "counter_archive.db", "histogram": "histogram_archive.db"}


def multiproc_dir() -> str | None:
    """``PROMETHEUS_MULTIPROC_DIR`` when it names a directory, else ``None``."""
    path = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    return path if path and os.path.isdir(path) else None


@contextlib.contextmanager
def _dir_lock(path: str, exclusive: bool) -> Iterator[None]:
    with open(os.path.join(path, ".lock"), "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def render() -> tuple[bytes, str]:
    """The metrics page: ``(body, content type)``; the host's sum in multiprocess mode."""
    path = multiproc_dir()
    if path is None:
        return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
    from prometheus_client import multiprocess

    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=path)
    with _dir_lock(path, exclusive=False):
        return generate_latest(registry), CONTENT_TYPE_LATEST


def fold_process(pid: int, path: str) -> int:
    """Fold the files of the ended process ``pid`` into the archives and delete them.

    Counters and histograms are added to ``counter_archive.db`` / ``histogram_archive.db``
    (rewritten to a temporary file, then renamed over the old one); live gauges are dropped
    (:func:`prometheus_client.multiprocess.mark_process_dead`). Returns the files removed.
    """
    from prometheus_client import multiprocess

    removed = 0
    with _dir_lock(path, exclusive=True):
        for typ, archive in _ARCHIVE.items():
            own = glob.glob(os.path.join(path, f"{typ}_{pid}.db"))
            if not own:
                continue
            target = os.path.join(path, archive)
            sources = own + ([target] if os.path.exists(target) else [])
            metrics = multiprocess.MultiProcessCollector.merge(sources, accumulate=False)
            _write_archive(metrics, target)
            for f in own:
                os.remove(f)
                removed += 1
        before = len(glob.glob(os.path.join(path, f"gauge_*_{pid}.db")))
        multiprocess.mark_process_dead(pid, path)
        for f in glob.glob(os.path.join(path, f"gauge_*_{pid}.db")):  # non-live gauge modes
            os.remove(f)
        removed += before
    return removed


def _write_archive(metrics, target: str) -> None:
    from prometheus_client.mmap_dict import MmapedDict, mmap_key

    tmp = target + ".tmp"
    with contextlib.suppress(FileNotFoundError):
        os.remove(tmp)
    out = MmapedDict(tmp)
    try:
        for metric in metrics:
            for sample in metric.samples:
                names, values = list(sample.labels), [sample.labels[k] for k in sample.labels]
                key = mmap_key(metric.name, sample.name, names, values, metric.documentation)
                out.write_value(key, sample.value, 0.0)
    finally:
        out.close()
    os.replace(tmp, target)


def sweep_dead(alive: Callable[[int], bool], path: str | None = None) -> int:
    """Fold the files of every process of this directory that is no longer ``alive``
    (e.g. killed with SIGKILL). Returns the files removed."""
    path = path or multiproc_dir()
    if path is None:
        return 0
    pids = {int(m.group(2)) for f in os.listdir(path) if (m := _PID_FILE.match(f))}
    removed = 0
    for pid in sorted(pids):
        if pid != os.getpid() and not alive(pid):
            try:
                removed += fold_process(pid, path)
            except OSError as exc:
                log.warning("metrics: could not fold the files of pid %s: %s", pid, exc)
    return removed


def install_exit_cleanup(alive: Callable[[int], bool]) -> None:
    """In multiprocess mode: sweep the dead processes' files now, and fold this process's own
    files when it exits normally (``atexit``)."""
    path = multiproc_dir()
    if path is None:
        return
    sweep_dead(alive, path)

    def at_exit(pid: int = os.getpid()) -> None:
        if os.getpid() != pid:  # a forked child inherits the handler
            return
        from prometheus_client import values

        with contextlib.suppress(Exception):
            values.ValueClass.close_all_files()  # type: ignore[attr-defined]
        with contextlib.suppress(OSError):
            fold_process(pid, path)

    atexit.register(at_exit)
