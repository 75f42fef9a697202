"""Starts the one JVM of this process (JPype) with fdpblock on its class path.

A process holds at most one JVM and JPype cannot restart it, so the first adapter starts it and every
later one shares it. What the JVM gets, and why:

* ``--enable-native-access=ALL-UNNAMED``: fdpblock calls libc and liburing through the FFM API, and
  the bridge builds segments over Python's buffers (a restricted method); without it JDK 25 warns.
* ``-Xrs``: the JVM leaves SIGINT, SIGTERM, SIGHUP and SIGQUIT to the host, so Ctrl-C and the
  server's own shutdown handling stay Python's (JPype is told not to take SIGINT either).
* faulthandler off before the start: the JVM handles SIGSEGV itself (safepoint polls, implicit null
  checks). faulthandler enabled earlier would, when disabled later (pytest does so at exit), put back
  the handler it found before the JVM's, and the next such signal would kill the process. A host that
  enables faulthandler after the JVM started must preload the JDK's ``lib/libjsig.so`` instead.
"""

from __future__ import annotations

import faulthandler
import logging
import os
import re
import threading
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

logger = logging.getLogger(__name__)

MIN_JAVA_FEATURE = 25
"""The oldest Java release fdpblock runs on."""

_BASE_OPTIONS = ("--enable-native-access=ALL-UNNAMED", "-Xrs")
_START_LOCK = threading.Lock()
_started_with: dict[str, Any] | None = None


class JvmUnavailableError(RuntimeError):
    """No JVM could be started for fdpblock here: no JDK >= 25, no fdpblock jar, or no JPype."""


def _java_feature(jdk: Path) -> int:
    """The feature release a JDK's ``release`` file names (25 for "25.0.1"), 0 when unreadable."""
    try:
        text = (jdk / "release").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return 0
    m = re.search(r'^JAVA_VERSION="(\d+)', text, re.MULTILINE)
    return int(m.group(1)) if m else 0


def _version_key(path: Path) -> list[Any]:
    """Sorts directory names by their numbers, so that ``jdk-25`` comes after ``jdk-9``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path.name)]


def find_jdk(java_home: str | None = None) -> Path:
    """The JDK to start: ``java_home`` when given, else ``JAVA_HOME`` when it is a JDK >= 25, else the
    newest JDK >= 25 under ``/usr/lib/jvm`` (as the project's Makefile chooses).

    Raises:
        JvmUnavailableError: when ``java_home`` is not a JDK >= 25, or none is found.
    """
    if java_home:
        jdk = Path(java_home)
        feature = _java_feature(jdk)
        if feature < MIN_JAVA_FEATURE or not (jdk / "lib" / "server" / "libjvm.so").is_file():
            raise JvmUnavailableError(
                f"java_home {java_home!r} is not a JDK >= {MIN_JAVA_FEATURE} with lib/server/libjvm.so (its release "
                f"file says {feature or 'nothing readable'}); give the directory of a JDK {MIN_JAVA_FEATURE} or later"
            )
        return jdk
    candidates: list[Path] = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(Path(os.environ["JAVA_HOME"]))
    jvm_dir = Path("/usr/lib/jvm")
    if jvm_dir.is_dir():
        candidates.extend(sorted((p for p in jvm_dir.iterdir() if p.is_dir()), key=_version_key, reverse=True))
    for jdk in candidates:
        if _java_feature(jdk) >= MIN_JAVA_FEATURE and (jdk / "lib" / "server" / "libjvm.so").is_file():
            return jdk
    raise JvmUnavailableError(
        f"no JDK >= {MIN_JAVA_FEATURE} found (JAVA_HOME={os.environ.get('JAVA_HOME', '')!r}, /usr/lib/jvm): "
        f"install one, e.g. Temurin {MIN_JAVA_FEATURE}, or give \"jvm\": {{\"java_home\": ...}} in the adapter params"
    )


def _checkout_jar() -> Path:
    """``target/fdpblock.jar`` of the repository this package sits in (``make build`` makes it)."""
    return Path(__file__).resolve().parents[2] / "target" / "fdpblock.jar"


def find_class_path(class_path: str | Sequence[str] | None = None) -> list[str]:
    """fdpblock's class path: ``class_path`` when given, else ``FDPBLOCK_CLASSPATH`` (entries joined by
    ``os.pathsep``), else ``FDPBLOCK_JAR``, else the checkout's ``target/fdpblock.jar``.

    The runnable jar holds the library and all its dependencies; the library jar works too, with
    Jackson, BouncyCastle and hash4j beside it.

    Raises:
        JvmUnavailableError: when an entry does not exist.
    """
    if class_path is None:
        env = os.environ.get("FDPBLOCK_CLASSPATH")
        if env:
            class_path = env.split(os.pathsep)
        elif os.environ.get("FDPBLOCK_JAR"):
            class_path = [os.environ["FDPBLOCK_JAR"]]
        else:
            class_path = [str(_checkout_jar())]
    entries = [class_path] if isinstance(class_path, str) else list(class_path)
    missing = [e for e in entries if not Path(e).exists()]
    if missing or not entries:
        raise JvmUnavailableError(
            f"fdpblock class path entries not found: {missing or entries}; build the jar (make build makes "
            f"target/fdpblock.jar), or set FDPBLOCK_JAR to it, or give \"jvm\": {{\"class_path\": [...]}}"
        )
    return [str(Path(e).resolve()) for e in entries]


def _jpype_support_jar(jpype_module: Any) -> list[str]:
    """JPype's own jar when it is not where JPype looks for it (Debian moves it to /usr/share/java)."""
    beside = Path(jpype_module.__file__).resolve().parent.parent / "org.jpype.jar"
    if beside.is_file():
        return []
    for candidate in (Path("/usr/share/java/org.jpype.jar"),):
        if candidate.is_file():
            return [str(candidate)]
    return []


def start(
    java_home: str | None = None,
    class_path: str | Sequence[str] | None = None,
    options: Iterable[str] = (),
) -> None:
    """Starts the JVM once per process; later calls check that fdpblock is loadable and return.

    Settings given to a later call than the first are not applied (the JVM is already running): they
    are logged when they differ.

    Raises:
        JvmUnavailableError: no JPype, no JDK >= 25, no jar, or a JVM started elsewhere without fdpblock.
    """
    global _started_with
    try:
        import jpype
    except ImportError as e:
        raise JvmUnavailableError(
            "JPype is not installed: install Debian's python3-jpype (make deps does) or pip's JPype1"
        ) from e
    requested = {"java_home": java_home, "class_path": class_path, "options": list(options)}
    with _START_LOCK:
        if jpype.isJVMStarted():
            if _started_with is not None and requested != _started_with and any(requested.values()):
                logger.warning(
                    "fdpblock: the JVM already runs with %s; the settings %s of this adapter are not applied",
                    _started_with, requested)
        else:
            jdk = find_jdk(java_home)
            entries = find_class_path(class_path) + _jpype_support_jar(jpype)
            if faulthandler.is_enabled():
                faulthandler.disable()
                logger.warning(
                    "fdpblock: faulthandler disabled before starting the JVM: disabling it later would remove "
                    "the JVM's SIGSEGV handler and crash the process (preload %s/lib/libjsig.so to keep both)",
                    jdk)
            jvm_options = list(_BASE_OPTIONS) + list(options)
            logger.info("fdpblock: starting the JVM of %s with %s, class path %s", jdk, jvm_options, entries)
            jpype.startJVM(
                str(jdk / "lib" / "server" / "libjvm.so"),
                *jvm_options,
                classpath=entries,
                convertStrings=False,
                interrupt=False,
            )
            _started_with = requested
        try:
            jpype.JClass("io.fdpblock.l2.L2Adapters")
        except Exception as e:  # a JVM some other code started, without fdpblock
            raise JvmUnavailableError(
                "the JVM of this process has no fdpblock on its class path (it was started before, by other "
                "code): start it with the fdpblock jar, or let fdpblock_lmcache start it first"
            ) from e


def start_from_params(jvm_params: Mapping[str, Any] | None) -> None:
    """:func:`start` with the ``"jvm"`` object of the adapter params (keys: java_home, class_path,
    options).

    Raises:
        ValueError: for a key it does not know, or a value of the wrong type.
    """
    params = dict(jvm_params or {})
    known = {"java_home", "class_path", "options"}
    unknown = sorted(set(params) - known)
    if unknown:
        raise ValueError(f"adapter params \"jvm\": unknown keys {unknown}; known: {sorted(known)}")
    java_home = params.get("java_home")
    if java_home is not None and not isinstance(java_home, str):
        raise ValueError(f"adapter params \"jvm\".java_home must be a string, got {java_home!r}")
    class_path = params.get("class_path")
    if class_path is not None and not (
            isinstance(class_path, str)
            or (isinstance(class_path, list) and all(isinstance(e, str) for e in class_path))):
        raise ValueError(f"adapter params \"jvm\".class_path must be a string or a list of strings, got {class_path!r}")
    options = params.get("options", [])
    if not (isinstance(options, list) and all(isinstance(o, str) for o in options)):
        raise ValueError(f"adapter params \"jvm\".options must be a list of strings, got {options!r}")
    start(java_home, class_path, options)
