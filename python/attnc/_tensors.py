"""Tensor arguments: torch tensors (checked: CUDA, dtype, rank, innermost stride 1) or raw ints
(device pointers, taken as given: the caller then passes sizes and strides itself)."""


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
        raise TypeError(f"{name}: expected a torch tensor {layout} or a device pointer (int), got {type(x).__name__}")
    dtype = str(x.dtype).replace("torch.", "")
    if not getattr(x, "is_cuda", False):
        raise ValueError(f"{name} must be a CUDA tensor, got one on {x.device}")
    # "[Hq] or [batch, Hq]": each alternative allows its own number of dims.
    ndims = sorted({alt.count(",") + 1 for alt in layout.split(" or ")})
    if x.dim() not in ndims:
        dims = " or ".join(str(n) for n in ndims)
        raise ValueError(f"{name} must be {layout} ({dims} dims), got shape {tuple(x.shape)}")
    if dtypes and dtype not in dtypes:
        raise TypeError(f"{name} must be {' or '.join(dtypes)}, got {dtype}")
    if not any_strides and x.stride(-1) != 1 and x.shape[-1] > 1:
        raise ValueError(f"{name}: the last dim must be contiguous (stride 1), got strides {tuple(x.stride())}")
    return Arg(x.data_ptr(), tuple(x.shape), tuple(x.stride()), dtype, x)


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
