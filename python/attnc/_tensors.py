"""Tensor arguments: torch tensors (checked: CUDA, dtype, rank, innermost stride 1), tensors of other
frameworks through DLPack (`__dlpack__`) or `__cuda_array_interface__` (CuPy, Numba, JAX, ...), with
the same checks and errors, or raw ints (device pointers, taken as given: the caller then passes
sizes and strides itself). A foreign tensor becomes a zero-copy torch view when torch is installed
(outputs the drop-ins allocate are then torch tensors); without torch a `__cuda_array_interface__`
is read directly (shape, strides, dtype, pointer)."""


class Arg:
    """A device pointer with what is known of it (shape, strides and dtype only for tensors)."""
    __slots__ = ("ptr", "shape", "strides", "dtype", "tensor")

    def __init__(self, ptr, shape=None, strides=None, dtype=None, tensor=None):
        self.ptr, self.shape, self.strides, self.dtype, self.tensor = ptr, shape, strides, dtype, tensor


TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16"}


def arg(name, x, layout, dtypes=None, required=True, any_strides=False):
    """Arg for `x`; `layout` names the dims ("[total_q, Hq, D]") and fixes the rank. any_strides: the
    kernel reads it element by element with its strides (so 0, a broadcast, is fine too)."""
    if x is None:
        if required:
            raise ValueError(f"{name} is required: a CUDA tensor {layout} or a device pointer (int)")
        return None
    if isinstance(x, bool):
        raise TypeError(f"{name}: expected a tensor {layout} or a device pointer (int), got bool")
    if isinstance(x, int):
        if x <= 0:
            raise ValueError(f"{name}: device pointer must be > 0, got {x}")
        return Arg(x)
    if not (hasattr(x, "data_ptr") and hasattr(x, "stride") and hasattr(x, "dtype")):
        x = _foreign(name, x, layout)
        if isinstance(x, Arg):
            return _checked(name, x, layout, dtypes, any_strides)
    dtype = str(x.dtype).replace("torch.", "")
    if not getattr(x, "is_cuda", False):
        raise ValueError(f"{name} must be a CUDA tensor, got one on {x.device}")
    return _checked(name, Arg(x.data_ptr(), tuple(x.shape), tuple(x.stride()), dtype, x), layout, dtypes,
                    any_strides)


def _checked(name, a, layout, dtypes, any_strides=False):
    """The rank, dtype and innermost-stride checks every tensor argument gets."""
    # "[Hq] or [batch, Hq]": each alternative allows its own number of dims.
    ndims = sorted({alt.count(",") + 1 for alt in layout.split(" or ")})
    if len(a.shape) not in ndims:
        dims = " or ".join(str(n) for n in ndims)
        raise ValueError(f"{name} must be {layout} ({dims} dims), got shape {a.shape}")
    if dtypes and a.dtype not in dtypes:
        raise TypeError(f"{name} must be {' or '.join(dtypes)}, got {a.dtype}")
    if not any_strides and a.strides[-1] != 1 and a.shape[-1] > 1:
        raise ValueError(f"{name}: the last dim must be contiguous (stride 1), got strides {a.strides}")
    return a


# __cuda_array_interface__ typestr -> dtype name (little-endian, or byte-sized with '|').
_TYPESTRS = {"f2": "float16", "f4": "float32", "i4": "int32", "i8": "int64", "u1": "uint8"}


def _foreign(name, x, layout):
    """A tensor of another framework: a torch view of it when torch is installed, else an Arg read
    from its __cuda_array_interface__."""
    has_cai, has_dlpack = hasattr(x, "__cuda_array_interface__"), hasattr(x, "__dlpack__")
    if not (has_cai or has_dlpack):
        raise TypeError(f"{name}: expected a tensor {layout} (torch, or any with __dlpack__ or "
                        f"__cuda_array_interface__) or a device pointer (int), got {type(x).__name__}")
    try:
        import torch
    except ImportError:
        torch = None
    if has_dlpack and hasattr(x, "__dlpack_device__"):
        kind = x.__dlpack_device__()[0]
        if kind not in (2, 13):  # kDLCUDA, kDLCUDAManaged
            raise ValueError(f"{name} must be a CUDA tensor, got one on DLPack device type {kind} "
                             "(1: CPU, 2: CUDA, 3: CUDA host)")
    if torch is not None:
        return torch.from_dlpack(x) if has_dlpack else torch.as_tensor(x, device="cuda")
    if not has_cai:
        raise TypeError(f"{name}: a DLPack tensor ({type(x).__name__}) needs torch installed to be read; "
                        "without torch pass one with __cuda_array_interface__")
    cai = x.__cuda_array_interface__
    shape = tuple(int(n) for n in cai["shape"])
    typestr = cai["typestr"]
    dtype = _TYPESTRS.get(typestr[1:]) if typestr[:1] in "<|" else None
    if dtype is None:
        raise TypeError(f"{name}: __cuda_array_interface__ typestr {typestr!r} is not one attnc reads; allowed: "
                        + ", ".join(("|" if k == "u1" else "<") + k for k in _TYPESTRS))
    size = int(typestr[2:])
    if cai.get("strides") is None:
        strides = tuple(math_prod(shape[i + 1:]) for i in range(len(shape)))
    else:
        if any(b % size for b in cai["strides"]):
            raise ValueError(f"{name}: strides {tuple(cai['strides'])} bytes are not whole {dtype} elements")
        strides = tuple(b // size for b in cai["strides"])
    ptr = int(cai["data"][0])
    if ptr == 0 and math_prod(shape):
        raise ValueError(f"{name}: __cuda_array_interface__ has a null data pointer")
    return Arg(ptr, shape, strides, dtype, None)


def math_prod(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def expect_dim(name, a, dim, want, what):
    """Checks dim `dim` of a tensor Arg against `want` (skipped for raw pointers)."""
    if a is not None and a.shape is not None and a.shape[dim] != want:
        raise ValueError(f"{name}: dim {dim} ({what}) is {a.shape[dim]}, the spec needs {want}; shape {a.shape}")


def need(name, value, why):
    if value is None:
        raise ValueError(f"{name} is required {why}")
    return value


def same_device(*args):
    devs = {(a.tensor.device.type, a.tensor.device.index) for a in args if a is not None and a.tensor is not None}
    if len(devs) > 1:
        raise ValueError(f"tensors are on different devices: {sorted(devs)}")
