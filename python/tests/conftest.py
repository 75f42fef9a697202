"""Shared setup of the Python tier: the LMCache stand-in and this package on the path, the fdpblock jar,
a file-backed device per test, and the poll-then-drain loop LMCache's controllers run on the eventfds.

One JVM serves every test of a pytest process (a process can start only one); the tests that need a
fresh process (signals, the example) run one.
"""

from __future__ import annotations

import os
import select
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

TESTS = Path(__file__).resolve().parent
STUB = TESTS / "stub"
PYTHON_DIR = TESTS.parent
REPO = PYTHON_DIR.parent
sys.path[:0] = [str(STUB), str(PYTHON_DIR)]

pytest.importorskip("jpype", reason="JPype is not installed (Debian: python3-jpype; make deps installs it)")
pytest.importorskip("numpy", reason="numpy is not installed (Debian: python3-numpy; make deps installs it)")

SLOT_BYTES = 69632
"""A 64 KiB payload and its 4 KiB slot header."""
PAYLOAD_BYTES = 65536
DEVICE_BYTES = 32 << 20
POLL_GIVE_UP_MS = 120_000
"""How long the drain loops wait for a result before they call it lost: a guard against a hang, far
beyond what any task takes, never a measure of speed."""


def _find_jar() -> str:
    given = os.environ.get("FDPBLOCK_JAR")
    if given:
        if not Path(given).is_file():
            pytest.exit(f"FDPBLOCK_JAR={given} does not exist: build it (make build) or unset it", returncode=2)
        return given
    for candidate in (REPO / "target" / "fdpblock.jar", REPO / "src" / "tools" / "target" / "fdpblock.jar"):
        if candidate.is_file():
            return str(candidate)
    pytest.exit("no fdpblock jar: run make build (target/fdpblock.jar) or set FDPBLOCK_JAR", returncode=2)
    raise AssertionError("unreachable")


JAR = _find_jar()
os.environ["FDPBLOCK_JAR"] = JAR


def subprocess_env() -> dict[str, str]:
    """The environment of a child Python that imports the stand-in and this package."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(STUB), str(PYTHON_DIR)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["FDPBLOCK_JAR"] = JAR
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def make_device(path: Path, size: int = DEVICE_BYTES) -> str:
    """A sparse file of ``size`` bytes standing for the raw device."""
    with open(path, "wb") as f:
        f.truncate(size)
    return str(path)


def params(device_path: str, **extra: Any) -> dict[str, Any]:
    """raw_block params for a file device: posix engine, no O_DIRECT (tmpfs may refuse it)."""
    p: dict[str, Any] = {"device_path": device_path, "slot_bytes": SLOT_BYTES, "use_odirect": False}
    p.update(extra)
    return p


def odirect_dir(tmp_path: Path) -> Path:
    """``tmp_path``, or a fresh dir under /var/tmp when tmp_path's file system refuses O_DIRECT (tmpfs)."""
    probe = tmp_path / "odirect-probe"
    try:
        os.close(os.open(probe, os.O_CREAT | os.O_RDWR | os.O_DIRECT, 0o600))
        return tmp_path
    except OSError:
        fallback = Path(tempfile.mkdtemp(prefix="fdpblock-python-", dir="/var/tmp"))
        _odirect_dirs.append(fallback)
        return fallback
    finally:
        probe.unlink(missing_ok=True)


_odirect_dirs: list[Path] = []


@pytest.fixture(scope="session", autouse=True)
def _remove_odirect_dirs():
    yield
    for d in _odirect_dirs:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def device(tmp_path: Path) -> str:
    return make_device(tmp_path / "dev.img")


@pytest.fixture
def adapter(device: str):
    from fdpblock_lmcache import FdpblockL2Adapter

    a = FdpblockL2Adapter(params(device))
    yield a
    a.close()


def drain_until(fd: int, result: Callable[[], Optional[Any]]) -> Any:
    """Polls ``fd`` and drains it as LMCache's controllers do (poll, read the counter, ask for results)
    until ``result()`` answers; signals coalesce, so a wake-up may carry several results or one already
    taken by an earlier wake-up."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    answer = result()
    waited_ms = 0
    while answer is None:
        assert waited_ms < POLL_GIVE_UP_MS, f"no result after {POLL_GIVE_UP_MS} ms of polling fd {fd}"
        if poller.poll(1000):
            try:
                os.eventfd_read(fd)
            except BlockingIOError:  # another reader took the count
                pass
        else:
            waited_ms += 1000
        answer = result()
    return answer


def run_store(adapter: Any, keys: list, objects: list) -> Any:
    """Submits a store and returns its L2StoreResult."""
    task = adapter.submit_store_task(keys, objects)
    done: dict = {}

    def pop() -> Optional[Any]:
        done.update(adapter.pop_completed_store_tasks())
        return done.get(task)

    return drain_until(adapter.get_store_event_fd(), pop)


def run_lookup(adapter: Any, keys: list) -> Any:
    task = adapter.submit_lookup_and_lock_task(keys, {})
    return drain_until(adapter.get_lookup_and_lock_event_fd(), lambda: adapter.query_lookup_and_lock_result(task))


def run_load(adapter: Any, keys: list, objects: list) -> Any:
    task = adapter.submit_load_task(keys, objects)
    return drain_until(adapter.get_load_event_fd(), lambda: adapter.query_load_result(task))


def status_of(adapter: Any, name: str) -> Any:
    """A value of the adapter's status: at the top, or in the store's own part (``core``, LMCache's shape)."""
    status = adapter.report_status()
    return status[name] if name in status else status["core"][name]


class RecordingListener:
    """Records every event an adapter tells, in order."""

    def __init__(self) -> None:
        self.stored: list[tuple[list, list]] = []
        self.accessed: list[list] = []
        self.deleted: list[list] = []

    def on_l2_keys_stored(self, keys: list, sizes: list) -> None:
        self.stored.append((list(keys), list(sizes)))

    def on_l2_keys_accessed(self, keys: list) -> None:
        self.accessed.append(list(keys))

    def on_l2_keys_deleted(self, keys: list) -> None:
        self.deleted.append(list(keys))
