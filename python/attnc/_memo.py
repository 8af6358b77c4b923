"""Checked calls remembered by what their checks read, so a repeated call skips them.

Every check a drop-in makes reads only tensor metadata (pointer, shape, strides, dtype) and
scalars. A call whose key (those values) was checked before replays its struct: the variant
lookup, the checks and the struct filling are skipped, which is most of a warm call's host time
in Python. Tensors that a drop-in allocates per call (out when not given, lse) are not in the key:
a replay allocates them and writes their pointers into a copy of the struct. Serving engines pass
the same buffers every step (CUDA-graph inputs, the KV cache), so their calls hit.

lookup(*parts) is the C extension attnc._fast where it is built (python/csrc/fast.c: the key,
the table lookup and the replay in C, the library called without ctypes), else the Python code
below with the same contract; ATTNC_NO_FAST=1 takes the Python code. The extension reads torch
tensors and the current stream through torch's C shim where attnc/_torch_shim.py finds and checks it.
"""
import ctypes
import importlib.util
import os

from . import _torch_shim
from ._capi import Call, check, lib

_MAX_ENTRIES = 4096
_entries = {}
_fast = None  # the extension module once set up and wanted
shim = (False, False)  # whether _fast reads (tensors, the stream) through torch's C shim

try:  # the current stream's handle without making a torch.cuda.Stream object
    from torch._C import _cuda_getCurrentRawStream as _raw_stream
except ImportError:
    _raw_stream = None


class Uncacheable(Exception):
    """An argument whose metadata cannot key a call (not a torch tensor): take the full path."""


def meta(x):
    """What the checks read of a tensor argument (None for None)."""
    if x is None:
        return None
    try:
        if x.is_contiguous():
            return x.data_ptr(), x.shape, x.dtype
        return x.data_ptr(), x.shape, x.dtype, x.stride()
    except (AttributeError, TypeError):
        raise Uncacheable() from None


def stream(device_index):
    if _raw_stream is not None:
        return _raw_stream(device_index)
    import torch
    return torch.cuda.current_stream(device_index).cuda_stream


class Entry:
    """A checked call: the variant, the struct, and what a replay allocates."""
    __slots__ = ("var", "call", "device", "out_shape", "dtype", "lse_shape", "decode")

    def __init__(self, var, call, device, out_shape, dtype, lse_shape, decode):
        self.var, self.call, self.device = var, call, device
        self.out_shape, self.dtype, self.lse_shape, self.decode = out_shape, dtype, lse_shape, decode


class OpEntry:
    """A checked op call (merge, cache write): its C function, handle and struct."""
    __slots__ = ("fn", "handle", "struct", "device")

    def __init__(self, fn, handle, struct, device):
        self.fn, self.handle, self.struct, self.device = fn, handle, struct, device


_SCALARS = (int, float, bool, str, type(None))


class _Key(tuple):
    """A miss's key in Python (a hit returns a plain tuple)."""
    __slots__ = ()


def _part(x):
    t = type(x)
    if t in _SCALARS:
        return x
    if t is tuple or t is list:
        return (t.__name__,) + tuple(_part(y) for y in x)
    return meta(x)


def _py_lookup(*parts):
    """lookup() in Python: a tuple (out, lse) of the replayed call on a hit (each None unless
    allocated), the key (not a plain tuple) on a miss, None when a part cannot key a call."""
    try:
        key = _Key(_part(x) for x in parts)
        e = _entries.get(key)
    except Uncacheable:
        return None
    if e is None:
        return key
    if type(e) is OpEntry:
        run_op(e)
        return None, None
    return replay(e)


def fast_module():
    """attnc._fast, or None where it is not built: from the package (a wheel), else from
    <build>/python/ beside the build's runtime/libattnc.so (a source checkout)."""
    try:
        from . import _fast
        return _fast
    except ImportError:
        pass
    built = os.path.join(os.path.dirname(os.path.dirname(lib()._name)), "python", "_fast.abi3.so")
    if not os.path.exists(built):
        return None
    spec = importlib.util.spec_from_file_location("attnc._fast", built)
    fast = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fast)
    return fast


def _fast_path():
    """attnc._fast set up for torch tensors, or None (not built, no torch, or ATTNC_NO_FAST=1)."""
    global shim
    shim = (False, False)
    if os.environ.get("ATTNC_NO_FAST") == "1" or _raw_stream is None:
        return None
    fast = fast_module()
    if fast is None:
        return None
    import torch

    def alloc(shape, dtype, device):
        return torch.empty(shape, dtype=dtype or torch.float32, device=device)

    fast.init(torch.Tensor, _entries, _raw_stream, check, alloc)
    shim = _torch_shim.enable(fast, torch, _raw_stream)  # torch read in C where its shim checks out
    return fast


def _first_lookup(*parts):
    """Picks the C or the Python lookup on the first call (the library is loaded by then)."""
    set_fast(True)
    return lookup(*parts)


lookup = _first_lookup


def set_fast(enabled):
    """Takes the C lookup (when built) or the Python one from now on; drops remembered calls."""
    global _fast, lookup, shim
    _entries.clear()
    shim = (False, False)
    _fast = _fast_path() if enabled else None
    lookup = _fast.run if _fast is not None else _py_lookup
    return _fast is not None


def _address(fn):
    return ctypes.cast(fn, ctypes.c_void_p).value


def remember(key, var, call, device, out_shape, dtype, lse_shape, decode):
    """Keeps a checked attention call under `key` (lookup's miss) for replays."""
    if key is None:
        return
    if _fast is not None:
        f = Call.__dict__
        ws = (f["workspace"].offset, f["workspace_bytes"].offset) if decode else (-1, -1)
        e = _fast.Entry(key, _address(lib().attnc_attention_run), var.handle.value, bytes(call), device,
                        var if decode else None, f["o"].offset, f["lse"].offset, ws[0], ws[1], out_shape, dtype,
                        lse_shape)
    else:
        e = Entry(var, call, device, out_shape, dtype, lse_shape, decode)
    _keep(key, e)


def remember_op(key, e):
    """Keeps a checked op call (an OpEntry) under `key`."""
    if key is None:
        return
    if _fast is not None:
        e = _fast.Entry(key, _address(e.fn), e.handle.value, bytes(e.struct), e.device, None, -1, -1, -1, -1, None,
                        None, None)
    _keep(key, e)


def _keep(key, e):
    """Keeps `e` unless the call was made while capturing a CUDA graph (its workspace may not have
    grown to the shape then)."""
    import torch
    if torch.cuda.is_current_stream_capturing():
        return
    if len(_entries) >= _MAX_ENTRIES:
        _entries.clear()
    if _fast is not None:
        _fast.remember(e)  # under its key's hash (fast.c)
    else:
        _entries[key] = e


def run_op(e):
    check(e.fn(e.handle, ctypes.byref(e.struct), stream(e.device)))


def clear():
    _entries.clear()


def replay(e):
    """Runs a remembered call; returns (out, lse), each the tensor allocated for it or None."""
    c = e.call
    out = lse = None
    if e.out_shape is not None or e.lse_shape is not None:
        import torch
        c = Call.from_buffer_copy(c)
        if e.out_shape is not None:
            out = torch.empty(e.out_shape, dtype=e.dtype, device=e.device)
            c.o = out.data_ptr()
        if e.lse_shape is not None:
            lse = torch.empty(e.lse_shape, dtype=torch.float32, device=e.device)
            c.lse = lse.data_ptr()
    if e.decode:
        var = e.var
        if c.workspace != var.workspace_ptr:  # grown by a larger call since
            c.workspace, c.workspace_bytes = var.workspace_ptr, var.workspace_bytes
    check(lib().attnc_attention_run(e.var.handle, ctypes.byref(c), stream(e.device)))
    return out, lse
