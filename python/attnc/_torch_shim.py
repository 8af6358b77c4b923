"""attnc._fast reading torch through torch's stable C shim: tensors' metadata and the stream.

A warm drop-in call keys itself by every tensor's pointer, shape, strides and dtype. Through
torch's Python API that is four calls a tensor (data_ptr(), dtype, shape, is_contiguous()), about
0.4 us each tensor, most of a warm call's cost over the C API. torch ships a C ABI meant to stay
stable across its versions (AOTInductor's shim, `aoti_torch_get_sizes` and friends, extern "C" in
libtorch_cpu) that reads them off an `at::Tensor*` in nanoseconds. The one thing it does not give
is the `at::Tensor` of a Python tensor: it is a field of torch's object (THPVariable: the object
header, then `at::Tensor cdata`), at an offset that is torch's private layout. So the offset is
only used after checking it on probe tensors: the pointer there must be each probe's `_cdata`
(its TensorImpl), and the shim's reads through it must equal the Python API's. Any mismatch, a
missing symbol, or ATTNC_NO_TORCH_SHIM=1 leaves the Python API reading tensors (the same keys'
contract, slower). The replay's current stream comes the same way, from
`aoti_torch_get_current_cuda_stream` (libtorch_cuda), once it agrees with torch's own; else a
Python call gives it.
"""
import ctypes
import os

_SHIM = ("layout", "dtype", "data_ptr", "dim", "sizes", "strides")  # aoti_torch_get_<name>, tensor_abi's order
_OFFSET = ctypes.sizeof(ctypes.c_ssize_t) + ctypes.sizeof(ctypes.c_void_p)  # after PyObject_HEAD


def _torch_lib(torch, name):
    """torch's lib<name>.so (loaded by `import torch`), or None."""
    path = os.path.join(os.path.dirname(torch.__file__), "lib", f"lib{name}.so")
    try:
        return ctypes.CDLL(path) if os.path.exists(path) else None
    except OSError:
        return None


def _probes(torch):
    base = torch.arange(2 * 3 * 5, dtype=torch.float32).view(2, 3, 5)
    return (base, base.transpose(0, 2), base[:, 1:, ::2], base[1], torch.zeros((), dtype=torch.int32),
            torch.empty(0, 4, dtype=torch.bfloat16), torch.empty(3, 1, 2, dtype=torch.float16).expand(3, 4, 2))


def _dtype_codes(shim, torch):
    names = {torch.float32: "float32", torch.int32: "int32", torch.bfloat16: "bfloat16", torch.float16: "float16"}
    codes = {}
    for dtype, name in names.items():
        fn = getattr(shim, "aoti_torch_dtype_" + name)
        fn.restype = ctypes.c_int32
        codes[dtype] = fn()
    return codes


def _offset_holds_cdata(torch, probes):
    if torch.Tensor.__basicsize__ < _OFFSET + ctypes.sizeof(ctypes.c_void_p):
        return False
    return all(ctypes.c_void_p.from_address(id(p) + _OFFSET).value == p._cdata for p in probes)


def enable(fast, torch, raw_stream):
    """Makes `fast` read torch tensors and the current stream through the shim where the checks
    pass: (tensors, stream), each True if it does."""
    fast.tensor_abi(None)
    fast.stream_abi(None)
    if os.environ.get("ATTNC_NO_TORCH_SHIM") == "1":
        return False, False
    return _enable_tensors(fast, torch), _enable_stream(fast, torch, raw_stream)


def stream_getter(torch):
    """aoti_torch_get_current_cuda_stream as a ctypes function, or None (no CUDA, or no such function)."""
    if not torch.cuda.is_available():
        return None
    try:
        get = _torch_lib(torch, "torch_cuda").aoti_torch_get_current_cuda_stream
    except AttributeError:  # no libtorch_cuda (None), or a torch without the function
        return None
    get.argtypes, get.restype = [ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p)], ctypes.c_int32
    return get


def current_stream(get, device):
    """The device's current stream through the shim (None when it fails)."""
    stream = ctypes.c_void_p()
    return (stream.value or 0) if get(device, ctypes.byref(stream)) == 0 else None


def _enable_stream(fast, torch, raw_stream):
    get = stream_getter(torch)
    if get is None:
        return False
    device = torch.cuda.current_device()
    if current_stream(get, device) != raw_stream(device):
        return False
    fast.stream_abi(ctypes.cast(get, ctypes.c_void_p).value)
    return True


def _enable_tensors(fast, torch):
    shim = _torch_lib(torch, "torch_cpu")
    try:
        fns = [ctypes.cast(getattr(shim, "aoti_torch_get_" + n), ctypes.c_void_p).value for n in _SHIM]
        strided_fn = shim.aoti_torch_layout_strided
        strided_fn.restype = ctypes.c_int32
        codes = _dtype_codes(shim, torch)
    except AttributeError:  # no shim (None), or an older torch without these functions
        return False
    probes = _probes(torch)
    if not _offset_holds_cdata(torch, probes):
        return False
    fast.tensor_abi(torch.Tensor, _OFFSET, strided_fn(), *fns)
    for p in probes:
        if fast.tensor_meta(p) != (p.data_ptr(), codes[p.dtype], tuple(p.shape), p.stride()):
            fast.tensor_abi(None)
            return False
    return True
