"""Maps LMCache's Python values to fdpblock's Java ones and back, field by field.

* keys: ``ObjectKey(chunk_hash, model_name, kv_rank, object_group_id, cache_salt)`` both ways; the
  kv_rank is an unsigned 32-bit number in Python and the same bits in a Java ``int``;
* buffers: a ``MemorySegment`` over the very memory of a memory object (its ``data_ptr`` and
  ``get_size()``), of a numpy array, a ctypes object or another buffer: nothing is copied;
* bitmaps, store results, usage and status maps by value;
* Java exceptions: the Python exceptions LMCache's contract names (see :func:`python_error`).
"""

from __future__ import annotations

import ctypes
import threading
from types import MappingProxyType
from typing import Any, Callable, Iterable, NamedTuple, Sequence, TypeVar

import jpype

T = TypeVar("T")

_UINT32 = 1 << 32
_INT32_MAX = (1 << 31) - 1


class DeviceIOError(OSError, RuntimeError):
    """The device failed or could not be opened. A ``RuntimeError``, as LMCache's raw_block raises when
    its core cannot open or recover the device, and an ``OSError``, as what it is."""


class Java:
    """The Java classes the bridge uses, resolved once after the JVM started."""

    def __init__(self) -> None:
        j = jpype.JClass
        self.L2Adapters = j("io.fdpblock.l2.L2Adapters")
        self.ObjectKey = j("io.fdpblock.l2.ObjectKey")
        self.MemoryObj = j("io.fdpblock.l2.MemoryObj")
        self.MemorySegment = j("java.lang.foreign.MemorySegment")
        self.Arrays = j("java.util.Arrays")
        self.Map = j("java.util.Map")
        self.List = j("java.util.List")
        self.Number = j("java.lang.Number")
        self.Boolean = j("java.lang.Boolean")
        self.ObjectKeyArray = jpype.JArray(self.ObjectKey)
        self.MemoryObjArray = jpype.JArray(self.MemoryObj)
        self.Integer = j("java.lang.Integer")
        self.IntegerArray = jpype.JArray(self.Integer)
        self.errors = (
            (j("java.lang.IllegalArgumentException"), ValueError),
            (j("java.lang.IndexOutOfBoundsException"), IndexError),
            (j("java.lang.UnsupportedOperationException"), NotImplementedError),
            (j("java.io.IOException"), DeviceIOError),
            (j("java.io.UncheckedIOException"), DeviceIOError),
            (j("java.lang.IllegalStateException"), RuntimeError),
        )
        # The whole address space as one segment: a buffer's segment is a slice of it, the same memory
        # as MemorySegment.ofAddress(address).reinterpret(length), in one unrestricted call per buffer.
        # The cast makes JPype call reinterpret through the exported interface, not the JDK's
        # internal implementation class (which reflection may not reach).
        null = jpype.JObject(self.MemorySegment.NULL, self.MemorySegment)
        self.all_memory = jpype.JObject(null.reinterpret(jpype.JLong(2**63 - 1)), self.MemorySegment)


_java: Java | None = None
_java_lock = threading.Lock()


def java() -> Java:
    """The resolved Java classes (the JVM must be running)."""
    global _java
    if _java is None:
        with _java_lock:
            if _java is None:
                _java = Java()
    return _java


# ---- exceptions ----

def python_error(e: BaseException) -> BaseException:
    """The Python exception for a Java one, its message kept and the Java exception as its cause.

    IllegalArgumentException -> ValueError (bad input), IndexOutOfBoundsException -> IndexError,
    UnsupportedOperationException -> NotImplementedError, IOException and UncheckedIOException ->
    :class:`DeviceIOError` (an OSError and a RuntimeError), IllegalStateException (closed) and anything
    else -> RuntimeError. A Python exception is returned as it is.
    """
    if not isinstance(e, jpype.JException):
        return e
    try:
        message = e.getMessage()
    except TypeError:  # JPype's own Python-side subclasses of some exceptions
        message = None
    message = str(e.getClass().getName()) if message is None else str(message)
    for java_type, python_type in java().errors:
        if isinstance(e, java_type):
            return python_type(message)
    return RuntimeError(f"{e.getClass().getName()}: {message}")


def call(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)``, a Java exception raised as :func:`python_error` says."""
    try:
        return fn(*args)
    except jpype.JException as e:
        raise python_error(e) from e


# ---- keys ----

def _signed32(value: int) -> int:
    """The Java ``int`` with the bits of an unsigned 32-bit ``value``."""
    if not 0 <= value < _UINT32:
        if -(1 << 31) <= value < 0:
            return value
        raise ValueError(f"kv_rank {value} does not fit in 32 bits (0 .. {_UINT32 - 1})")
    return value - _UINT32 if value > _INT32_MAX else value


def java_key(key: Any) -> Any:
    """fdpblock's ObjectKey for an LMCache ObjectKey.

    Raises:
        ValueError: for a key fdpblock refuses (a model name with '@', a salt with '/', ...).
    """
    j = java()
    try:
        k = j.ObjectKey.of(key.model_name, _signed32(int(key.kv_rank)), bytes(key.chunk_hash))
        if key.cache_salt:
            k = k.withCacheSalt(key.cache_salt)
        group = getattr(key, "object_group_id", 0)
        if group:
            k = k.withObjectGroupId(int(group))
        return k
    except jpype.JException as e:
        raise python_error(e) from e
    except AttributeError as e:
        raise ValueError(f"{key!r} is not an ObjectKey (chunk_hash, model_name, kv_rank, cache_salt)") from e


def java_keys(keys: Sequence[Any]) -> Any:
    """A Java ``List<ObjectKey>`` of ``keys``, in order."""
    j = java()
    return j.Arrays.asList(j.ObjectKeyArray([java_key(k) for k in keys]))


def python_key(key_type: type, jkey: Any) -> Any:
    """The LMCache ObjectKey (of ``key_type``) for an fdpblock ObjectKey."""
    rank = int(jkey.kvRank())
    fields: dict[str, Any] = {
        "chunk_hash": bytes(jkey.chunkHash()),
        "model_name": str(jkey.modelName()),
        "kv_rank": rank + _UINT32 if rank < 0 else rank,
        "cache_salt": str(jkey.cacheSalt()),
    }
    group = int(jkey.objectGroupId())
    if group:  # left out when 0, so that key types without the field work too
        fields["object_group_id"] = group
    return key_type(**fields)


def python_keys(key_type: type, jkeys: Iterable[Any]) -> list[Any]:
    return [python_key(key_type, k) for k in jkeys]


# ---- buffers ----

class Memory(NamedTuple):
    """Where a buffer's bytes are, and what keeps them there while Java uses them."""

    address: int
    length: int
    pin: Any
    """A memoryview export (a bytearray cannot be resized while it lives), or None."""


def memory_of(obj: Any, writable: bool) -> Memory:
    """The memory ``obj`` holds, without copying it.

    Accepted: an LMCache memory object (``data_ptr`` and ``get_size()``), anything with ``data_ptr``
    and ``nbytes`` (a tensor), a numpy array (C-contiguous), and any object of the buffer protocol
    (ctypes objects, bytearray, memoryview; bytes for a store). A load needs writable memory.

    Raises:
        ValueError: for an object without such memory, a non-contiguous array, or a read-only buffer
            given for a load.
    """
    get_size = getattr(obj, "get_size", None)
    data_ptr = getattr(obj, "data_ptr", None)
    if data_ptr is not None and (get_size is not None or hasattr(obj, "nbytes")):
        address = data_ptr() if callable(data_ptr) else data_ptr
        length = get_size() if get_size is not None else obj.nbytes
        return Memory(int(address), int(length), None)
    interface = getattr(obj, "__array_interface__", None)
    if interface is not None:
        flags = getattr(obj, "flags", None)
        if flags is not None and not flags["C_CONTIGUOUS"]:
            raise ValueError(f"array of shape {obj.shape} is not C-contiguous: give a contiguous copy "
                             "(numpy.ascontiguousarray) so that its bytes are one range of memory")
        address, read_only = interface["data"]
        if writable and read_only:
            raise ValueError("a load needs a writable buffer; this array is read-only")
        return Memory(int(address), int(obj.nbytes), None)
    if isinstance(obj, bytes):
        if writable:
            raise ValueError("a load needs a writable buffer; bytes are read-only: use a bytearray")
        # bytes are immutable: their own storage is read in place, at the address ctypes sees.
        return Memory(ctypes.cast(ctypes.c_char_p(obj), ctypes.c_void_p).value or 0, len(obj), None)
    try:
        view = memoryview(obj)
    except TypeError as e:
        raise ValueError(f"{type(obj).__name__} holds no memory the adapter can read or fill: give a memory "
                         "object (data_ptr, get_size), a numpy array, a ctypes object or a buffer") from e
    if not view.contiguous:
        raise ValueError("buffer is not contiguous: give one range of memory")
    if view.readonly:
        raise ValueError(f"read-only {type(obj).__name__} buffer: give bytes, a bytearray, a numpy array or a "
                         "memory object")
    if view.nbytes == 0:
        return Memory(0, 0, None)
    return Memory(ctypes.addressof(ctypes.c_char.from_buffer(view)), view.nbytes, view)


def segment(address: int, length: int) -> Any:
    """A ``MemorySegment`` of ``length`` bytes at ``address``: the same memory, nothing copied."""
    return java().all_memory.asSlice(jpype.JLong(address), jpype.JLong(length))


def memory_meta(obj: Any) -> tuple[list[int], str, str, list[int]] | None:
    """LMCache's metadata of a memory object (shape, dtype name, format name, cached positions), as
    fdpblock keeps it with the chunk; None when the object has none."""
    meta = getattr(obj, "metadata", None) or getattr(obj, "meta", None)
    if meta is None or not hasattr(meta, "shape"):
        return None
    shape = [int(d) for d in meta.shape] if meta.shape is not None else None
    dtype = getattr(meta, "dtype", None)
    dtype_name = None if dtype is None else str(dtype).removeprefix("torch.")
    fmt = getattr(meta, "fmt", None)
    fmt_name = None if fmt is None else getattr(fmt, "name", str(fmt))
    positions = getattr(meta, "cached_positions", None)
    if positions is not None:
        positions = [int(p) for p in (positions.tolist() if hasattr(positions, "tolist") else positions)]
    return shape, dtype_name, fmt_name, positions


def java_memory_objs(objects: Sequence[Any], writable: bool) -> tuple[Any, list[Any]]:
    """A Java ``List<MemoryObj>`` over the memory of ``objects``, in order, with their metadata, and what
    must be held with the objects while Java uses that memory (see :class:`Memory`)."""
    j = java()
    out = []
    pins = []
    for i, obj in enumerate(objects):
        if obj is None:
            raise ValueError(f"objects[{i}] is None")
        memory = memory_of(obj, writable)
        if memory.pin is not None:
            pins.append(memory.pin)
        mo = j.MemoryObj.of(segment(memory.address, memory.length))
        meta = memory_meta(obj)
        if meta is not None:
            shape, dtype, fmt, positions = meta
            mo = mo.withMeta(_int_list(shape), dtype, fmt, _int_list(positions))
        out.append(mo)
    return j.Arrays.asList(j.MemoryObjArray(out)), pins


def _int_list(values: list[int] | None) -> Any:
    if values is None:
        return None
    j = java()
    return j.Arrays.asList(j.IntegerArray([j.Integer.valueOf(v) for v in values]))  # boxed one by one: JPype does not


# ---- results ----

def python_bitmap(bitmap_type: type, jbitmap: Any) -> Any:
    """The LMCache Bitmap (of ``bitmap_type``) with the bits of an fdpblock Bitmap."""
    out = bitmap_type(int(jbitmap.size()))
    for i in jbitmap.indices():
        out.set(int(i))
    return out


def python_value(value: Any) -> Any:
    """A status value of Java (maps, lists, numbers, booleans, strings) as plain Python values."""
    if value is None:
        return None
    j = java()
    if isinstance(value, j.Map):
        return {str(e.getKey()): python_value(e.getValue()) for e in value.entrySet()}
    if isinstance(value, j.List):
        return [python_value(v) for v in value]
    if isinstance(value, j.Boolean):
        return bool(value.booleanValue())
    if isinstance(value, j.Number):
        if str(value.getClass().getName()) in ("java.lang.Double", "java.lang.Float", "java.math.BigDecimal"):
            return float(value.doubleValue())
        return int(value.longValue())
    if isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def usage_mapping(jmap: Any) -> MappingProxyType:
    """A read-only ``{cache_salt: bytes}`` of a Java ``Map<String, Long>``."""
    return MappingProxyType({str(e.getKey()): int(e.getValue()) for e in jmap.entrySet()})
