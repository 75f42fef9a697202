"""The stand-in's loader of external adapters, following LMCache's documented flow for
``--l2-adapter '{"type": "plugin", "module_path": ..., "class_name": ..., "adapter_params": {...}}'``:
import the module, take the class, require it to be an L2AdapterInterface, then construct it with a
config object when the module has a config class for it, else with the raw params dict."""

from __future__ import annotations

import importlib
import json
from typing import Any

from lmcache.v1.distributed.l2_adapters.base import L2AdapterInterface
from lmcache.v1.distributed.l2_adapters.config import L2AdapterConfigBase


def _config_class(module: Any, spec: dict, adapter_cls: type) -> type | None:
    for name in (spec.get("config_class_name"), spec["class_name"] + "Config",
                 getattr(adapter_cls, "config_class_name", None)):
        candidate = getattr(module, name, None) if name else None
        if isinstance(candidate, type) and issubclass(candidate, L2AdapterConfigBase):
            return candidate
    return None


def create_l2_adapter(l2_adapter_json: str, l1_memory_desc: Any = None) -> L2AdapterInterface:
    """The adapter one ``--l2-adapter`` value describes (only the ``plugin`` type here).

    Raises:
        ValueError: for a missing or malformed field.
        ImportError, AttributeError, TypeError: for a module, class or class kind that does not fit.
    """
    spec = json.loads(l2_adapter_json)
    if spec.get("type") != "plugin":
        raise ValueError(f"this stand-in loads only plugin adapters, not {spec.get('type')!r}")
    for field_name in ("module_path", "class_name"):
        if not isinstance(spec.get(field_name), str) or not spec[field_name]:
            raise ValueError(f"{field_name} must be a non-empty string")
    params = spec.get("adapter_params", {})
    if not isinstance(params, dict):
        raise ValueError("adapter_params must be a dict")
    module = importlib.import_module(spec["module_path"])
    adapter_cls = getattr(module, spec["class_name"])
    if not (isinstance(adapter_cls, type) and issubclass(adapter_cls, L2AdapterInterface)):
        raise TypeError(f"{spec['module_path']}.{spec['class_name']} is not an L2AdapterInterface")
    kwargs = {} if l1_memory_desc is None else {"l1_memory_desc": l1_memory_desc}
    config_cls = _config_class(module, spec, adapter_cls)
    if config_cls is not None:
        return adapter_cls(config_cls.from_dict(params), **kwargs)
    return adapter_cls(params, **kwargs)
