"""Arrays, contexts and errors: what every op of the package shares.

Arrays reach the library as ``ndf_array`` descriptors over the caller's own
memory (zero-copy, strides in elements):

* NumPy arrays: the CPU backend, through ``__array_interface__``;
* torch tensors on the CPU: the CPU backend, through ``data_ptr()`` / ``stride()``;
* CUDA arrays (CuPy, torch, anything with ``__dlpack__``): through a DLPack
  capsule requested with the caller's current stream, on a context whose
  stream *is* that stream, so that the library's kernels are ordered after the
  caller's work and before what the caller queues next, with no
  synchronization.  One context per (thread, device, stream) is kept.

A result is allocated by the input's framework on the input's device (and, on
CUDA, by the framework's allocator, stream-ordered on the same stream).
"""

import ctypes
import os
import threading

import numpy as np

from . import _capi

C = _capi.functions
S = _capi.structs
K = _capi.consts
Array = S["ndf_array"]
NDF_CPU = K["NDF_DEVICE_CPU"]
NDF_CUDA = K["NDF_DEVICE_CUDA"]

# NumPy's names are the library's names (ndf_dtype_name); the table is built from the library.
DTYPE_CODE = {}
for _code in range(K["NDF_DTYPE_COUNT"]):
    _name = C["ndf_dtype_name"](_code)
    if _name:
        DTYPE_CODE[np.dtype(_name.decode())] = _code
CODE_DTYPE = {v: k for k, v in DTYPE_CODE.items()}

_INPUT_DTYPES = None


def input_dtypes():
    """The dtypes the library takes as op inputs, asked of the library itself (a 1-element
    grey_erosion per dtype, once): older versions take NDF_INT64 as an output dtype only."""
    global _INPUT_DTYPES
    if _INPUT_DTYPES is None:
        ctx = context()
        opt = S["ndf_grey_options"]()
        C["ndf_grey_options_init"](ctypes.byref(opt))
        opt.nsize, opt.size[0] = 1, 1
        ok = []
        for dt in DTYPE_CODE:
            a, b = np.zeros(1, dt), np.zeros(1, dt)
            da, _ = describe(a, HOST)
            db, _ = describe(b, HOST)
            if dt.kind == "b" or C["ndf_grey_erosion"](ctx, ctypes.byref(da), ctypes.byref(db),
                                                       ctypes.byref(opt)) == 0:
                ok.append(dt)
        _INPUT_DTYPES = tuple(ok)
    return _INPUT_DTYPES


class NdforgeError(RuntimeError):
    """A failure of the library that is neither a bad argument nor memory (device, compiler, I/O)."""


class UnsupportedError(RuntimeError):
    """NDF_ENOTSUP: a valid request that this backend does not do (a RuntimeError, as scipy raises)."""


_ERRORS = {
    K["NDF_EINVAL"]: ValueError,
    K["NDF_ENOMEM"]: MemoryError,
    K["NDF_ENOTSUP"]: UnsupportedError,
}


def raise_status(status, ctx=None):
    msg = (C["ndf_errmsg"](ctx) if ctx else C["ndf_last_error"]()) or b""
    msg = msg.decode(errors="replace") or C["ndf_status_string"](status).decode()
    raise _ERRORS.get(status, NdforgeError)(msg)


def check(status, ctx=None):
    if status:
        raise_status(status, ctx)


# --- contexts ------------------------------------------------------------------

_local = threading.local()
_MAX_CONTEXTS = 32  # per thread

# The options of the contexts the package makes (set_cpu_threads, set_device_memory_limit), and
# their version: a thread whose contexts were made under an older one replaces them on next use.
_options = {"cpu_threads": 0, "device_memory_limit": 0}
_options_version = 0
_options_lock = threading.Lock()


def _set_option(name, value):
    global _options_version
    with _options_lock:
        old = _options[name]
        if value != old:
            _options[name] = value
            _options_version += 1
    return old


class _Ctx(int):
    """A library context handle (passed to the C functions as the pointer it is) that destroys
    the context when the last reference goes: the thread's table below, and whatever still
    holds it -- a staged device copy freed later (ndimage._Staged) must not find its context
    destroyed when the options change or the table evicts it."""

    __slots__ = ()

    def __del__(self):
        try:
            C["ndf_ctx_destroy"](int(self))  # waits for its work
        except Exception:  # interpreter shutdown: the library may be gone already
            pass


def _contexts():
    d = getattr(_local, "ctx", None)
    if d is None:
        d = _local.ctx = {}
    if getattr(_local, "version", 0) != _options_version:  # the options changed: new contexts
        d.clear()  # each destroyed when nothing holds it any more
        _local.version = _options_version
    return d


def _count(name, value, lo, hi, what):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError("%s must be an integer, not %s" % (name, type(value).__name__))
    if not lo <= value <= hi:
        raise ValueError("%s must be %s, got %d" % (name, what, value))
    return int(value)


class _Restore:
    """What a setter returns: nothing to do, or, used as a context manager, the old value back on exit."""

    def __init__(self, name, old):
        self._name, self._old = name, old

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _set_option(self._name, self._old)
        return False


def set_cpu_threads(n):
    """Threads of the CPU backend for the calls that follow, in every thread
    (``ndf_ctx_options.cpu_threads``); 0 (the default) is OpenMP's count
    (OMP_NUM_THREADS, else one per core).  Results do not depend on it.  Also a
    context manager: ``with ndforge.set_cpu_threads(2): ...`` restores the
    previous count on exit (scipy.fft's ``set_workers`` is the model)."""
    n = _count("cpu_threads", n, 0, K["NDF_MAX_CPU_THREADS"], "in 0..%d" % K["NDF_MAX_CPU_THREADS"])
    return _Restore("cpu_threads", _set_option("cpu_threads", n))


def get_cpu_threads():
    """The count set_cpu_threads set (0: OpenMP's default)."""
    return _options["cpu_threads"]


def set_device_memory_limit(nbytes):
    """Most bytes of GPU memory the library's own arrays and scratch may hold at once on each of
    the package's CUDA contexts (``ndf_ctx_options.device_memory_limit``; 0, the default, is no
    limit); a call that would pass it raises MemoryError, as the device running out does.  The
    results of your framework (CuPy, torch) are allocated by it and not counted (cap those with
    its own allocator).  For the calls that follow, in every thread; also a context manager, as
    set_cpu_threads."""
    n = _count("device_memory_limit", nbytes, 0, 2 ** 63 - 1, "a number of bytes >= 0")
    return _Restore("device_memory_limit", _set_option("device_memory_limit", n))


def get_device_memory_limit():
    """The limit set_device_memory_limit set (0: none)."""
    return _options["device_memory_limit"]


def context(device=NDF_CPU, device_id=0, stream=None):
    """The library context of this thread for a device (and, on CUDA, a CUstream)."""
    key = (device, device_id, stream)
    d = _contexts()
    ctx = d.get(key)
    if ctx is None:
        opt = S["ndf_ctx_options"]()
        C["ndf_ctx_options_init"](ctypes.byref(opt))
        opt.cpu_threads = _options["cpu_threads"]
        opt.device_memory_limit = _options["device_memory_limit"]
        if device == NDF_CPU:
            opt.backend = K["NDF_BACKEND_CPU"]
        else:
            opt.backend = K["NDF_BACKEND_CUDA"]
            opt.device = device_id
            opt.stream = stream
        h = ctypes.c_void_p()
        check(C["ndf_ctx_create"](ctypes.byref(h), ctypes.byref(opt)))
        if len(d) >= _MAX_CONTEXTS:  # many short-lived streams: the oldest CUDA context goes (it waits for its work)
            old = next((k for k in d if k[0] != NDF_CPU), None)
            if old is not None:
                d.pop(old)
        ctx = d[key] = _Ctx(h.value)
    return ctx


def synchronize(device_id=0, stream=None):
    """Waits for the library's work on a CUDA context (the caller's stream usually does this)."""
    ctx = context(NDF_CUDA, device_id, stream)
    check(C["ndf_ctx_synchronize"](ctx), ctx)


# --- DLPack -------------------------------------------------------------------

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_capsule_ptr = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_ptr.restype = ctypes.c_void_p
_capsule_ptr.argtypes = [ctypes.py_object, ctypes.c_char_p]
# DLPack type codes: 0 int, 1 uint, 2 float, 6 bool
_DL_DTYPE = {(0, 8): "int8", (0, 16): "int16", (0, 32): "int32", (0, 64): "int64", (1, 8): "uint8",
             (1, 16): "uint16", (1, 32): "uint32", (1, 64): "uint64", (2, 16): "float16", (2, 32): "float32",
             (2, 64): "float64", (6, 8): "bool", (4, 16): "bfloat16"}


def _dlpack_array(capsule):
    t = _DLTensor.from_address(_capsule_ptr(capsule, b"dltensor"))
    name = _DL_DTYPE.get((t.dtype.code, t.dtype.bits))
    if name is None or t.dtype.lanes != 1:
        raise TypeError("ndforge: DLPack dtype code %d bits %d lanes %d is not supported"
                        % (t.dtype.code, t.dtype.bits, t.dtype.lanes))
    code = _dtype_code(name)
    n = t.ndim
    shape = [t.shape[i] for i in range(n)]
    if t.strides:
        strides = [t.strides[i] for i in range(n)]
    else:
        strides = _contiguous_strides(shape)
    # an empty array may have no memory: data NULL (None through ctypes)
    return _make((t.data or 0) + t.byte_offset, t.device.device_type, t.device.device_id, code, shape, strides)


# --- descriptors ----------------------------------------------------------------

def _contiguous_strides(shape):
    st, acc = [0] * len(shape), 1
    for i in range(len(shape) - 1, -1, -1):
        st[i] = acc
        acc *= max(shape[i], 1)
    return st


def _dtype_code(dt):
    try:
        return DTYPE_CODE[np.dtype(dt)]
    except (KeyError, TypeError):
        pass
    raise TypeError("ndforge: dtype %s is not supported by the library (supported: %s)"
                    % (dt, ", ".join(sorted(str(d) for d in DTYPE_CODE))))


def _packers():
    """struct.Structs that write an ndf_array's fields in place, laid out from the parsed ctypes fields
    (native alignment, as C): the scalar head, and n int64 values for the shape and the strides."""
    import struct
    codes = {ctypes.c_void_p: "P", ctypes.c_int: "i", ctypes.c_int64: "q"}
    fields = Array._fields_
    head = "@" + "".join(codes[t] for name, t in fields if not hasattr(t, "_length_"))
    arrays = [name for name, t in fields if hasattr(t, "_length_")]
    scalars = [name for name, t in fields if not hasattr(t, "_length_")]
    if (arrays != ["shape", "strides"] or scalars != ["data", "device", "device_id", "dtype", "ndim"]
            or getattr(Array, "data").offset != 0 or struct.calcsize(head) > getattr(Array, "shape").offset):
        return None
    return (struct.Struct(head), [struct.Struct("@%dq" % n) for n in range(K["NDF_MAX_NDIM"] + 1)],
            getattr(Array, "shape").offset, getattr(Array, "strides").offset)


_PACK = _packers()
_MAXD = K["NDF_MAX_NDIM"]


# Descriptors already built, by (device, device_id, dtype code, shape, strides, stride unit): a call on
# arrays of a layout seen before copies the bytes and writes the data pointer (the per-call cost).
_LAYOUTS = {}
_MAX_LAYOUTS = 4096
_PTR = _PACK[0].__class__("@P") if _PACK is not None else None  # the data pointer, at offset 0


def _described(ptr, device, device_id, code, shape, strides, unit=1):
    """An ndf_array for data at ptr; strides in units of `unit` bytes-per-element (1: in elements)."""
    key = (device, device_id, code, shape, strides, unit)
    try:
        a = Array.from_buffer_copy(_LAYOUTS[key])
    except KeyError:
        st = strides if unit == 1 else [s // unit for s in strides]
        a = _make(0, device, device_id, code, shape, st)
        if len(_LAYOUTS) < _MAX_LAYOUTS:
            _LAYOUTS[key] = bytes(a)
    except TypeError:  # an unhashable shape or strides (a list)
        st = strides if unit == 1 else [s // unit for s in strides]
        return _make(ptr, device, device_id, code, shape, st)
    if _PTR is not None:
        _PTR.pack_into(a, 0, ptr or 0)
    else:
        a.data = ptr
    return a


def _make(ptr, device, device_id, code, shape, strides):
    n = len(shape)
    if n > _MAXD:
        raise ValueError("ndforge: %d axes; the library takes at most %d" % (n, _MAXD))
    a = Array()
    if _PACK is not None:
        head, vec, so, to = _PACK
        head.pack_into(a, 0, ptr or 0, device, device_id, code, n)
        v = vec[n]
        v.pack_into(a, so, *shape)
        v.pack_into(a, to, *strides)
        return a
    a.data, a.device, a.device_id, a.dtype, a.ndim = ptr, device, device_id, code, n
    a.shape[:n] = shape
    a.strides[:n] = strides
    return a


def kind_of(x):
    """'numpy', 'torch' or 'cupy' (the framework that results are made with)."""
    mod = type(x).__module__.split(".")[0]
    if mod in ("torch", "cupy"):
        return mod
    if isinstance(x, np.ndarray):
        return "numpy"
    if hasattr(x, "__dlpack__"):
        return "dlpack"
    return "numpy"


def as_array(x):
    """NumPy arrays stay; lists and scalars become NumPy arrays (as scipy's np.asarray); a NumPy array of
    the other byte order becomes a native copy (the library reads native values; scipy converts too)."""
    k = kind_of(x)
    if k == "numpy":
        if not isinstance(x, np.ndarray):
            x = np.asarray(x)
        if not x.dtype.isnative:
            x = x.astype(x.dtype.newbyteorder("="))
    elif k == "dlpack":
        dev = x.__dlpack_device__()
        if dev[0] == NDF_CPU:
            x = np.from_dlpack(x)
        else:
            x = _cuda_framework().from_dlpack(x)
    return x


def _cuda_framework():
    try:
        import cupy
        return cupy
    except ImportError:
        import torch
        return torch


class Placement:
    """Where a call runs: CPU, or a CUDA device and the caller's current stream there."""
    __slots__ = ("device", "device_id", "stream", "kind")

    def __init__(self, device, device_id, stream, kind):
        self.device, self.device_id, self.stream, self.kind = device, device_id, stream, kind

    @property
    def ctx(self):
        return context(self.device, self.device_id, self.stream)


_torch_raw_stream = None
_CUDA_PLACEMENTS = {}  # (device, stream) -> Placement of torch CUDA tensors (placements hold no context)


def _torch_stream(dev):
    """The raw CUstream of torch's current stream on a device (0 = the legacy default stream)."""
    global _torch_raw_stream
    if _torch_raw_stream is None:
        import torch
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        _torch_raw_stream = raw if raw is not None else (lambda d: torch.cuda.current_stream(d).cuda_stream)
    return _torch_raw_stream(dev)


def placement(x):
    k = kind_of(x)
    if k == "numpy":
        return _CPU_PLACEMENT["numpy"]
    if k == "torch":
        if x.is_cpu:
            return _CPU_PLACEMENT["torch"]
        if not x.is_cuda:
            raise TypeError("ndforge: torch device %s is not supported (cpu, cuda)" % x.device)
        dev = x.get_device()
        key = (dev, _torch_stream(dev) or 1)  # 0 is the legacy stream: CU_STREAM_LEGACY
        p = _CUDA_PLACEMENTS.get(key)
        if p is None:
            if len(_CUDA_PLACEMENTS) >= 256:
                _CUDA_PLACEMENTS.clear()
            p = _CUDA_PLACEMENTS[key] = Placement(NDF_CUDA, dev, key[1], k)
        return p
    if k == "cupy":
        import cupy
        dev = x.device.id
        with cupy.cuda.Device(dev):
            s = cupy.cuda.get_current_stream().ptr
        return Placement(NDF_CUDA, dev, s or 1, k)
    raise TypeError("ndforge: unsupported array type %s" % type(x))


def empty_like(x, where):
    """A new C-contiguous array of x's framework, dtype, shape and device."""
    k = where.kind
    if k == "numpy":
        return np.empty(x.shape, x.dtype)
    if k == "torch":
        import torch
        return torch.empty_like(x, memory_format=torch.contiguous_format)
    return empty(where, x.shape, x.dtype)


# torch tensors are described from data_ptr() / stride() (zero-copy, no capsule), on the CPU and on CUDA,
# where the context's stream is the tensor's current stream, which is what DLPack's stream exchange would
# settle on; NDFORGE_TORCH_DLPACK=1 sends CUDA tensors through __dlpack__ like every other producer.
TORCH_DLPACK = os.environ.get("NDFORGE_TORCH_DLPACK") == "1"
_TORCH_CODE = {}


def _torch_code(t):
    try:
        return _TORCH_CODE[t]
    except KeyError:
        code = _TORCH_CODE[t] = _dtype_code(str(t).replace("torch.", ""))
        return code


def describe(x, where):
    """(ndf_array, keep-alive) for x, which lives where `where` says."""
    k = where.kind
    if k == "numpy":
        dt = x.dtype
        code = DTYPE_CODE.get(dt)
        if code is None:
            code = _dtype_code(dt)
        if not x.flags.aligned:  # strides (or the address) not multiples of the element size
            x = np.ascontiguousarray(x)
        return _described(x.__array_interface__["data"][0], NDF_CPU, 0, code, x.shape, x.strides, dt.itemsize), x
    if k == "torch" and (where.device == NDF_CPU or not TORCH_DLPACK):
        return _described(x.data_ptr(), where.device, where.device_id, _torch_code(x.dtype), x.shape, x.stride()), x
    # CUDA (cupy, other producers): DLPack, asking the producer to order its work before our stream
    cap = x.__dlpack__(stream=where.stream)
    a = _dlpack_array(cap)
    if k == "cupy" and any(st < 0 for st in x.strides):
        # CuPy's export divides a negative byte stride by the item size as an unsigned number (a view
        # g[::-1] comes out with a stride near 2^62); its own strides, in bytes, are signed
        size = x.dtype.itemsize
        a.strides[:x.ndim] = [st // size for st in x.strides]
    return a, (x, cap)


def empty(where, shape, dtype, like=None):
    """A new C-contiguous array of the framework and device of `where`."""
    dtype = np.dtype(dtype)
    if where.kind == "numpy":
        return np.empty(shape, dtype)
    if where.kind == "torch":
        import torch
        dev = "cpu" if where.device == NDF_CPU else "cuda:%d" % where.device_id
        return torch.empty(tuple(shape), dtype=getattr(torch, dtype.name), device=dev)
    import cupy
    with cupy.cuda.Device(where.device_id):
        return cupy.empty(tuple(shape), dtype)


_DTYPE_OF = {}


def dtype_of(x):
    """The NumPy dtype of an array or tensor; 'float16'/'bfloat16' for torch's half types."""
    t = x.dtype
    try:
        return _DTYPE_OF[t]
    except (KeyError, TypeError):
        pass
    if kind_of(x) == "torch":
        name = str(t).replace("torch.", "")
        r = name if name in ("float16", "bfloat16") else np.dtype(name)
    else:
        r = np.dtype(t)
    _DTYPE_OF[t] = r
    return r


def copy_into(dst, src):
    """dst[...] = src, casting as NumPy does (dst and src of one framework)."""
    k = kind_of(dst)
    if k == "numpy":
        np.copyto(dst, src, casting="unsafe")
    elif k == "torch":
        dst.copy_(src)
    else:
        dst[...] = src


def to_host_numpy(x, dtype=None):
    """A NumPy copy of a small argument (structures, footprints, thresholds, directions)."""
    k = kind_of(x)
    if k == "torch":
        x = x.detach().cpu().numpy()
    elif k == "cupy":
        x = x.get()
    return np.asarray(x) if dtype is None else np.ascontiguousarray(x, dtype=dtype)


def host_array(x, dtype=None):
    """(ndf_array, keep-alive) of a host NumPy copy of x (for structures and footprints)."""
    a = to_host_numpy(x, dtype)
    if a.dtype == np.bool_ and dtype is None:
        pass
    return describe(a, _HOST)


_HOST = Placement(NDF_CPU, 0, None, "numpy")
HOST = _HOST
_CPU_PLACEMENT = {"numpy": _HOST, "torch": Placement(NDF_CPU, 0, None, "torch")}
