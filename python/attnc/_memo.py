"""Checked calls remembered by what their checks read, so a repeated call skips them.

Every check a drop-in makes reads only tensor metadata (pointer, shape, strides, dtype) and
scalars. A call whose key (those values) was checked before replays its attnc_call: the variant
lookup, the checks and the struct filling are skipped, which is most of a warm call's host time
in Python. Tensors that a drop-in allocates per call (out when not given, lse) are not in the key:
a replay allocates them and writes their pointers into a copy of the call. Serving engines pass
the same buffers every step (CUDA-graph inputs, the KV cache), so their calls hit.
"""
import ctypes

from ._capi import Call, check, lib

_MAX_ENTRIES = 4096
_entries = {}

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


def get(key):
    return _entries.get(key)


def remember(key, entry):
    """Keeps `entry` unless the call was made while capturing a CUDA graph (its workspace may not
    have grown to the shape then)."""
    import torch
    if torch.cuda.is_current_stream_capturing():
        return
    if len(_entries) >= _MAX_ENTRIES:
        _entries.clear()
    _entries[key] = entry


class OpEntry:
    """A checked op call (merge, cache write): its C function, handle and struct."""
    __slots__ = ("fn", "handle", "struct", "device")

    def __init__(self, fn, handle, struct, device):
        self.fn, self.handle, self.struct, self.device = fn, handle, struct, device


def run_op(e):
    check(e.fn(e.handle, ctypes.byref(e.struct), stream(e.device)))


def clear():
    _entries.clear()


def replay(e, out):
    """Runs a remembered call; returns (out, lse) (lse None unless the call returns it)."""
    c = e.call
    lse = None
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
