"""The JVM inside a Python host: its signal use must not crash the host. Each case runs in a fresh
Python process, since one process starts one JVM."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from conftest import subprocess_env

PRELUDE = """
import faulthandler, json, os, signal, sys, tempfile, threading, time
from fdpblock_lmcache import FdpblockL2Adapter

def caught(sig):
    # SigCgt of /proc/self/status: the signals this process has a handler for.
    for line in open("/proc/self/status"):
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (sig - 1) & 1)

tmp = tempfile.mkdtemp()
"""


def run_child(body: str, tmp_path: Path) -> subprocess.CompletedProcess:
    script = tmp_path / "child.py"
    script.write_text(PRELUDE + textwrap.dedent(body), encoding="utf-8")
    return subprocess.run([sys.executable, str(script)], env=subprocess_env(), capture_output=True, text=True)


def test_faulthandler_is_disabled_before_the_jvm_takes_sigsegv(tmp_path: Path):
    run = run_child("""
        faulthandler.enable()
        a = FdpblockL2Adapter({"device_path": os.path.join(tmp, "d.img"), "capacity_bytes": 16 << 20,
                               "slot_bytes": 69632, "use_odirect": False})
        print("faulthandler enabled:", faulthandler.is_enabled())
        print("SIGSEGV caught after start:", caught(signal.SIGSEGV))
        faulthandler.disable()  # what pytest does at exit: with faulthandler on, this removed the JVM's handler
        print("SIGSEGV caught after disable:", caught(signal.SIGSEGV))
        a.close()
    """, tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.splitlines() == ["faulthandler enabled: False", "SIGSEGV caught after start: True",
                                       "SIGSEGV caught after disable: True"]
    assert "faulthandler disabled before starting the JVM" in run.stderr


def test_sigint_stays_pythons_and_the_jvm_runs_with_reduced_signals(tmp_path: Path):
    run = run_child("""
        import jpype
        # Python's own SIGINT handler, as a host started in the foreground has it (a shell's background job
        # inherits SIGINT ignored, and Python then installs none)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        a = FdpblockL2Adapter({"device_path": os.path.join(tmp, "d.img"), "capacity_bytes": 16 << 20,
                               "slot_bytes": 69632, "use_odirect": False})
        args = [str(x) for x in jpype.JClass("java.lang.management.ManagementFactory").getRuntimeMXBean().getInputArguments()]
        print("jvm options:", " ".join(a for a in args if a in ("-Xrs", "--enable-native-access=ALL-UNNAMED")))
        # A signal sent to the process may be taken by any of the JVM's threads, and Python runs its
        # handler on the main thread some time later: send it to the main thread, and wait for it there.
        main = threading.main_thread().ident
        try:
            signal.pthread_kill(main, signal.SIGINT)
            waited = time.monotonic() + 60
            while time.monotonic() < waited:
                time.sleep(0.01)
            print("no KeyboardInterrupt")
        except KeyboardInterrupt:
            print("KeyboardInterrupt in Python")
        terms = []
        signal.signal(signal.SIGTERM, lambda s, f: terms.append(s))
        signal.pthread_kill(main, signal.SIGTERM)
        waited = time.monotonic() + 60
        while not terms and time.monotonic() < waited:
            time.sleep(0.01)
        print("SIGTERM handled by Python:", terms == [signal.SIGTERM])
        a.close()
        print("closed")
    """, tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.splitlines() == ["jvm options: --enable-native-access=ALL-UNNAMED -Xrs",
                                       "KeyboardInterrupt in Python", "SIGTERM handled by Python: True", "closed"]


def test_an_adapter_left_open_is_closed_at_exit_before_the_jvm_stops(tmp_path: Path):
    """A put is acknowledged before its log record is durable (meta_sync_interval_ms): only a close makes
    it so. An adapter the host forgot to close is closed at exit, so the reopened store still has the key
    (killed instead, the store reopens without it)."""
    device = tmp_path / "d.img"
    params = {"device_path": str(device), "capacity_bytes": 16 << 20, "slot_bytes": 69632, "use_odirect": False}
    run = run_child(f"""
        from lmcache.v1.distributed.api import ObjectKey
        import select
        a = FdpblockL2Adapter({params!r})
        task = a.submit_store_task([ObjectKey(b"kept", "m", 0)], [bytes(65536)])
        p = select.poll(); p.register(a.get_store_event_fd(), select.POLLIN)
        done = {{}}
        while task not in done:
            p.poll(1000)
            done.update(a.pop_completed_store_tasks())
        print("stored:", done[task].is_successful())
    """, tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.splitlines() == ["stored: True"]
    reopen = run_child(f"""
        a = FdpblockL2Adapter({params!r})
        status = a.report_status()
        print("recovered keys:", status.get("recovered_keys", status.get("core", {{}}).get("recovered_keys")))
        a.close()
    """, tmp_path)
    assert reopen.returncode == 0, reopen.stdout + reopen.stderr
    assert reopen.stdout.splitlines() == ["recovered keys: 1"]
