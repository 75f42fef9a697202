"""The adapter loaded as LMCache's MP server loads an external one: from a ``--l2-adapter`` value of type
``plugin`` (module path, class name, params), including the lines the documentation shows."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jpype
import numpy as np
import pytest

import fdpblock_lmcache
from conftest import PAYLOAD_BYTES, REPO, make_device, odirect_dir, run_load, run_lookup, run_store
from lmcache.v1.distributed.api import ObjectKey
from lmcache.v1.distributed.internal_api import L1MemoryDesc
from lmcache.v1.distributed.l2_adapters.base import L2AdapterInterface
from lmcache.v1.distributed.l2_adapters.plugin_l2_adapter import create_l2_adapter

DOCUMENTED = [REPO / "README.md", REPO / "docs" / "lmcache-python.md", REPO / "python" / "README.md"]


def documented_lines() -> list[str]:
    """Every ``--l2-adapter '...'`` value of the READMEs and docs/lmcache-python.md."""
    lines = []
    for page in DOCUMENTED:
        lines += re.findall(r"--l2-adapter '(\{.*?\})'", page.read_text(encoding="utf-8"))
    return lines


def plugin_line(adapter_params: dict) -> str:
    return json.dumps({"type": "plugin", "module_path": "fdpblock_lmcache", "class_name": "FdpblockL2Adapter",
                       "adapter_params": adapter_params})


def assert_round_trip(adapter, key: ObjectKey, data: np.ndarray) -> None:
    """``data`` stored under ``key`` and loaded back, byte for byte."""
    assert run_store(adapter, [key], [data]).is_successful()
    out = np.zeros_like(data)
    assert run_load(adapter, [key], [out]).get_indices_list() == [0]
    assert out.tobytes() == data.tobytes()


def test_the_loader_builds_it_from_module_path_class_name_and_params(tmp_path: Path):
    device = make_device(tmp_path / "dev.img")
    adapter = create_l2_adapter(plugin_line({"device_path": device, "slot_bytes": 69632, "use_odirect": False}))
    try:
        assert isinstance(adapter, fdpblock_lmcache.FdpblockL2Adapter) and isinstance(adapter, L2AdapterInterface)
        assert_round_trip(adapter, ObjectKey(b"\x00\x00\x00\x01", "m", 0), np.full(PAYLOAD_BYTES, 0x42, dtype=np.uint8))
    finally:
        adapter.close()


def test_no_config_class_so_the_loader_passes_the_params_dict():
    """The loader looks for ``<class_name>Config``: there is none, so the adapter gets the raw dict."""
    assert not hasattr(fdpblock_lmcache, "FdpblockL2AdapterConfig")
    assert getattr(fdpblock_lmcache.FdpblockL2Adapter, "config_class_name", None) is None


def test_the_loader_may_pass_the_l1_arena(tmp_path: Path):
    arena = np.zeros(2 * PAYLOAD_BYTES, dtype=np.uint8)
    desc = L1MemoryDesc(ptr=arena.ctypes.data, size=arena.nbytes, align_bytes=4096)
    adapter = create_l2_adapter(plugin_line({"device_path": make_device(tmp_path / "dev.img"), "slot_bytes": 69632,
                                             "use_odirect": False}), l1_memory_desc=desc)
    try:
        key = ObjectKey(b"\x07", "m", 0)
        assert run_store(adapter, [key], [arena[:PAYLOAD_BYTES]]).is_successful()
        assert run_lookup(adapter, [key]).get_indices_list() == [0]
        adapter.submit_unlock([key])
    finally:
        adapter.close()


def test_bad_params_through_the_loader_are_value_errors():
    with pytest.raises(ValueError, match="slot_bytes"):
        create_l2_adapter(plugin_line({"device_path": "/tmp/x.img", "slot_bytes": 100}))


def test_the_documented_lines_load_fdpblock():
    lines = documented_lines()
    assert len(lines) >= 5, "the READMEs and docs/lmcache-python.md show the --l2-adapter lines"
    engines = set()
    for line in lines:
        spec = json.loads(line)
        assert (spec["type"], spec["module_path"], spec["class_name"]) == ("plugin", "fdpblock_lmcache", "FdpblockL2Adapter")
        engines.add(spec["adapter_params"].get("io_engine", "posix"))
        # fdpblock's own config parser takes each one (it opens nothing): no typo, no value off its limits.
        params = {k: v for k, v in spec["adapter_params"].items() if k != "jvm"}
        jpype.JClass("io.fdpblock.core.RawBlockCoreConfig").fromJson(json.dumps(params))
    assert {"io_uring", "uring_cmd"} <= engines  # a raw device or file, and an NVMe namespace with FDP


def test_the_documented_file_line_stores_and_loads(tmp_path: Path):
    """The documented line for a file, pointed at a temp dir, runs as it is."""
    file_lines = [json.loads(line) for line in documented_lines() if json.loads(line)["adapter_params"]
                  ["device_path"].endswith(".img")]
    assert file_lines, "the docs show a line for a file"
    spec = file_lines[0]
    spec["adapter_params"]["device_path"] = str(odirect_dir(tmp_path) / "cache.img")
    spec["adapter_params"]["capacity_bytes"] = 64 << 20  # the documented 4 GiB is more than a test needs
    adapter = create_l2_adapter(json.dumps(spec))
    try:
        assert_round_trip(adapter, ObjectKey(b"doc", "m", 0), np.arange(PAYLOAD_BYTES, dtype=np.uint32).astype(np.uint8))
    finally:
        adapter.close()
