"""fdpblock as an LMCache L2 adapter: ``FdpblockL2Adapter`` implements LMCache's ``L2AdapterInterface``
by calling fdpblock's Java adapter in this process (JPype), so that LMCache's MP server stores its KV
cache on a raw device, a file or an NVMe namespace with FDP through fdpblock.

Load it from LMCache's ``--l2-adapter`` JSON as a plugin::

    {"type": "plugin", "module_path": "fdpblock_lmcache", "class_name": "FdpblockL2Adapter",
     "adapter_params": {"device_path": "/var/lib/kv/cache.img", "capacity_bytes": 4294967296,
                        "slot_bytes": 69632}}

docs/lmcache-python.md has the details.
"""

from fdpblock_lmcache.adapter import FdpblockL2Adapter
from fdpblock_lmcache.bridge import DeviceIOError
from fdpblock_lmcache.jvm import JvmUnavailableError

__all__ = ["FdpblockL2Adapter", "DeviceIOError", "JvmUnavailableError"]
