"""FlashInfer's paged wrappers with plan/run (flashinfer 0.2 signatures), on attnc kernels.

    from attnc.flashinfer import BatchDecodeWithPagedKVCacheWrapper
    w = BatchDecodeWithPagedKVCacheWrapper(torch.empty(128 << 20, dtype=torch.uint8, device="cuda"), "NHD")
    w.plan(kv_indptr, kv_indices, kv_last_page_len, num_qo_heads, num_kv_heads, head_dim, page_size,
           q_data_type=torch.bfloat16)
    out = w.run(q, (k_cache, v_cache))     # or run(q, kv_cache) with kv_cache [pages, 2, ...]

The page table is FlashInfer's (attention-semantics.md §4.3): kv_indptr [batch + 1] into
kv_indices (it need not start at 0), kv_last_page_len [batch] in 1..page_size. plan() reads the
table on the host (it synchronises when given device tensors, as FlashInfer's does) for the
longest request, which attnc's kernel choice needs, and keeps device copies (or copies into the
buffers given for CUDA graphs); run() passes the table to attnc as is. The float workspace buffer
is attnc's split-KV workspace. LSE is FlashInfer's: [total_q, num_qo_heads] fp32, base 2.
"""
import ctypes
import itertools

from . import _capi, _memo, _variants
from ._capi import check, lib
from ._tensors import arg, same_device
from .vllm import _FP8_CACHES, _HALF, _attention_variant, _new_call, _refuse

__all__ = ["BatchDecodeWithPagedKVCacheWrapper", "BatchPrefillWithPagedKVCacheWrapper"]

# Every plan() of every wrapper gets its own number: a remembered run() is keyed by it, so a new
# wrapper at a dead one's address never finds the dead one's calls.
_plan_numbers = itertools.count(1)


def _dtype_name(x, what):
    name = str(x).replace("torch.", "")
    if name not in _HALF:
        raise TypeError(f"{what} must be float16 or bfloat16, got {name}")
    return name


def _index_tensor(name, x, n=None):
    """Checks a 1-D int32 index tensor (of n entries when n is given)."""
    import torch
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be an int32 tensor, got {type(x).__name__}")
    if x.dtype != torch.int32 or x.dim() != 1:
        raise TypeError(f"{name} must be a 1-D int32 tensor, got {x.dtype} with shape {tuple(x.shape)}")
    if n is not None and x.shape[0] != n:
        raise ValueError(f"{name} has {x.shape[0]} entries, expected {n}")
    return x


def _host_ints(name, x, n=None):
    """A 1-D int32 index tensor's values on the host (batch-sized tables only: it copies)."""
    return _index_tensor(name, x, n).tolist()


class _PagedWrapper:
    def __init__(self, float_workspace_buffer, kv_layout="NHD", use_cuda_graph=False, indptr_buf=None,
                 indices_buf=None, last_page_len_buf=None, qo_indptr_buf=None):
        ws = arg("float_workspace_buffer", float_workspace_buffer, "[bytes]")
        if kv_layout not in ("NHD", "HND"):
            raise ValueError(f"kv_layout {kv_layout!r}: allowed: NHD, HND")
        if use_cuda_graph and (indptr_buf is None or indices_buf is None or last_page_len_buf is None):
            raise ValueError("use_cuda_graph=True needs the page-table buffers (indptr, indices, last_page_len): "
                             "run() must read the same addresses on every replay")
        self._workspace = float_workspace_buffer
        self._workspace_bytes = ws.tensor.numel() * ws.tensor.element_size()
        self.device = ws.tensor.device
        self._kv_layout = kv_layout
        self._use_cuda_graph = bool(use_cuda_graph)
        self._bufs = {"indptr": indptr_buf, "indices": indices_buf, "last_page_len": last_page_len_buf,
                      "qo_indptr": qo_indptr_buf}
        self._plan = None
        self._scales = {}  # v_scale value -> its device tensor (fp8 caches)

    @property
    def is_cuda_graph_enabled(self):
        return self._use_cuda_graph

    def _to_device(self, name, x):
        """x on this wrapper's device: copied into the CUDA-graph buffer of `name` when there is one."""
        buf = self._bufs.get(name)
        if buf is not None:
            if buf.shape[0] < x.shape[0]:
                raise ValueError(f"{name} has {x.shape[0]} entries, more than its CUDA-graph buffer's {buf.shape[0]}")
            buf[:x.shape[0]].copy_(x, non_blocking=True)
            return buf
        return x.to(self.device, non_blocking=True)

    def _plan_paged(self, qo_indptr, indptr, indices, last_page_len, num_qo_heads, num_kv_heads, head_dim_qk,
                    head_dim_vo, page_size, causal, window_left, logits_soft_cap, sm_scale, q_data_type,
                    kv_data_type, pos_encoding_mode, rope_scale, rope_theta):
        _refuse([(pos_encoding_mode != "NONE", f"pos_encoding_mode={pos_encoding_mode!r} (apply RoPE/ALiBi "
                                               "outside: 'NONE' only)"),
                 (rope_scale is not None or rope_theta is not None, "rope_scale/rope_theta")])
        dtype = _HALF[_dtype_name(q_data_type, "q_data_type")]
        kv_name = None if kv_data_type is None else str(kv_data_type).replace("torch.", "")
        if kv_name in _FP8_CACHES:
            kv_dtype = _FP8_CACHES[kv_name]
        elif kv_name is None or _HALF.get(kv_name) == dtype:
            kv_dtype = "same"
        else:
            raise NotImplementedError(f"kv_data_type {kv_data_type}: attnc reads K/V of q's dtype ({q_data_type}) "
                                      f"or fp8 ({', '.join(_FP8_CACHES)})")
        for name, x in (("num_qo_heads", num_qo_heads), ("num_kv_heads", num_kv_heads), ("page_size", page_size)):
            if isinstance(x, bool) or not isinstance(x, int) or x < 1:
                raise ValueError(f"{name} must be a positive int, got {x!r}")
        if num_qo_heads % num_kv_heads:
            raise ValueError(f"num_qo_heads {num_qo_heads} is not a multiple of num_kv_heads {num_kv_heads}")
        if page_size % 16:
            raise ValueError(f"page_size {page_size}: attnc reads pages of a multiple of 16 tokens")
        head_dim_vo = head_dim_qk if head_dim_vo is None else head_dim_vo
        _variants.check_head_dim("head_dim", head_dim_qk)
        _variants.check_head_dim("head_dim_vo", head_dim_vo)
        if isinstance(window_left, bool) or not isinstance(window_left, int) or window_left < -1:
            raise ValueError(f"window_left must be an int >= -1 (-1: no window), got {window_left!r}")
        cap = float(logits_soft_cap or 0.0)
        if cap < 0:
            raise ValueError(f"logits_soft_cap must be >= 0, got {logits_soft_cap}")
        ptr = _host_ints("indptr", indptr)
        batch = len(ptr) - 1
        if batch < 0:
            raise ValueError("indptr must have batch + 1 entries")
        last = _host_ints("last_page_len", last_page_len, batch)
        _index_tensor("indices", indices)  # its values only the kernels read (as FlashInfer's)
        lens = []
        for i in range(batch):
            pages = ptr[i + 1] - ptr[i]
            if pages < 0 or ptr[i] < 0 or ptr[i + 1] > indices.shape[0]:
                raise ValueError(f"indptr[{i}..{i + 1}] = {ptr[i]}..{ptr[i + 1]}: not a range of indices "
                                 f"(0..{indices.shape[0]})")
            if pages and not 1 <= last[i] <= page_size:
                raise ValueError(f"last_page_len[{i}] = {last[i]}; allowed: 1..{page_size}")
            lens.append((pages - 1) * page_size + last[i] if pages else 0)
        if qo_indptr is not None:
            qo = _host_ints("qo_indptr", qo_indptr, batch + 1)
            qlens = [qo[i + 1] - qo[i] for i in range(batch)]
            if any(n < 0 for n in qlens):
                raise ValueError(f"qo_indptr must not decrease, got {qo}")
            max_q, total_q = max(qlens, default=0), qo[-1] - qo[0]
        else:
            max_q, total_q = 1, batch
        if causal:
            mask = "causal" if window_left < 0 else (window_left, 0)
        else:
            mask = "none" if window_left < 0 else (window_left, -1)
        max_k = max(lens, default=0)
        if self._use_cuda_graph:
            # a graph captured after this plan replays after later ones: its launch must cover any
            # request the buffers can describe (the kernels read the lengths from the page table)
            max_k = max(max_k, self._bufs["indices"].shape[0] * page_size)
        self._plan = dict(
            dtype=dtype, hq=num_qo_heads, hkv=num_kv_heads, d=head_dim_qk, dv=head_dim_vo, page=page_size,
            mask=mask, cap=cap, scale=sm_scale, batch=batch, max_q=max_q, total_q=total_q, kv_dtype=kv_dtype,
            max_k=max_k, version=next(_plan_numbers),
            indptr=self._to_device("indptr", indptr), indices=self._to_device("indices", indices),
            last_page_len=self._to_device("last_page_len", last_page_len),
            qo_indptr=None if qo_indptr is None else self._to_device("qo_indptr", qo_indptr))

    def _split_cache(self, paged_kv_cache):
        if isinstance(paged_kv_cache, (tuple, list)):
            if len(paged_kv_cache) != 2:
                raise ValueError("paged_kv_cache as a tuple must be (k_cache, v_cache), got "
                                 f"{len(paged_kv_cache)} items")
            return paged_kv_cache
        if getattr(paged_kv_cache, "dim", None) is None or paged_kv_cache.dim() != 5 or paged_kv_cache.shape[1] != 2:
            raise ValueError("paged_kv_cache must be (k_cache, v_cache) or one tensor [pages, 2, page_size, Hkv, D] "
                             f"(NHD) / [pages, 2, Hkv, page_size, D] (HND), got shape "
                             f"{tuple(getattr(paged_kv_cache, 'shape', ()))}")
        return paged_kv_cache[:, 0], paged_kv_cache[:, 1]

    def run(self, q, paged_kv_cache, *args, q_scale=None, k_scale=None, v_scale=None, out=None, lse=None,
            return_lse=False):
        """out [total_q, Hq, Dv], or (out, lse [total_q, Hq] fp32 base 2). q_scale and k_scale (floats)
        fold into the softmax scale, as FlashInfer does; v_scale (a float) scales V of an fp8 cache
        (the output, as FlashInfer's), and must be None or 1 for 16-bit caches."""
        p = self._plan
        if p is None:
            raise RuntimeError(f"{type(self).__name__}.run() before plan()")
        if args:
            raise TypeError(f"run() takes no extra positional arguments (got {len(args)}): FlashInfer's are for "
                            "its own kernels' options")
        if v_scale not in (None, 1, 1.0) and p["kv_dtype"] == "same":
            raise NotImplementedError(f"v_scale={v_scale} with a 16-bit cache (an output scale): attnc scales V "
                                      "of fp8 caches only")
        key = _memo.lookup("flashinfer", id(self), p["version"], q, paged_kv_cache, q_scale, k_scale, v_scale, out,
                           lse, return_lse)
        if key.__class__ is tuple:  # a hit
            o, ls = key
            return (out if o is None else o, ls if lse is None else lse) if return_lse else (out if o is None else o)
        o, ls, var, c = self._call(p, q, paged_kv_cache, q_scale, k_scale, out, lse, return_lse, v_scale)
        check(lib().attnc_attention_run(var.handle, ctypes.byref(c), _memo.stream(self.device.index)))
        _memo.remember(key, var, c, self.device.index, tuple(o.shape) if out is None else None, o.dtype,
                       tuple(ls.shape) if return_lse and lse is None else None, False)
        return (o, ls) if return_lse else o

    forward = run

    def _call(self, p, q, paged_kv_cache, q_scale, k_scale, out, lse, return_lse, v_scale=None):
        import torch
        k_cache, v_cache = self._split_cache(paged_kv_cache)
        name = [n for n, d in _HALF.items() if d == p["dtype"]][0]
        qa = arg("q", q, "[total_q, num_qo_heads, head_dim]", (name,))
        layout = ("[pages, page_size, num_kv_heads, head_dim]" if self._kv_layout == "NHD"
                  else "[pages, num_kv_heads, page_size, head_dim]")
        kv_names = (name,) if p["kv_dtype"] == "same" else tuple(n for n, d in _FP8_CACHES.items()
                                                                  if d == p["kv_dtype"])
        ka = arg("k_cache", k_cache, layout, kv_names)
        va = arg("v_cache", v_cache, layout, kv_names)
        row, head = (1, 2) if self._kv_layout == "NHD" else (2, 1)
        for nm, a, d in (("q", qa, p["d"]), ("k_cache", ka, p["d"]), ("v_cache", va, p["dv"])):
            want = ((p["total_q"], p["hq"], d) if nm == "q" else None)
            if want is not None and a.shape != want:
                raise ValueError(f"q has shape {a.shape}, the plan says {want}")
            if nm != "q" and (a.shape[row] != p["page"] or a.shape[head] != p["hkv"] or a.shape[3] != d):
                raise ValueError(f"{nm} has shape {a.shape}: the plan says page_size {p['page']}, num_kv_heads "
                                 f"{p['hkv']}, head dim {d} in the {self._kv_layout} layout {layout}")
        if ka.shape[0] != va.shape[0]:
            raise ValueError(f"k_cache has {ka.shape[0]} pages, v_cache {va.shape[0]}")
        want_lse = ("token_major", "2") if return_lse else None
        dev = qa.tensor.device
        if dev != self.device:
            raise ValueError(f"q is on {dev}, the workspace buffer on {self.device}")
        var = _attention_variant(dev, p["dtype"], p["d"], p["dv"], p["hq"], p["hkv"], p["page"], p["mask"], p["cap"],
                                 False, False, want_lse, p["kv_dtype"])
        if out is None:
            out = torch.empty((p["total_q"], p["hq"], p["dv"]), dtype=qa.tensor.dtype, device=dev)
        oa = arg("out", out, "[total_q, num_qo_heads, head_dim_vo]", (name,))
        if oa.shape != (p["total_q"], p["hq"], p["dv"]):
            raise ValueError(f"out has shape {oa.shape}, expected {(p['total_q'], p['hq'], p['dv'])}")
        c = _new_call()
        if return_lse:
            if lse is None:
                lse = torch.empty((p["total_q"], p["hq"]), dtype=torch.float32, device=dev)
            la = arg("lse", lse, "[total_q, num_qo_heads]", ("float32",))
            if la.shape != (p["total_q"], p["hq"]) or not lse.is_contiguous():
                raise ValueError(f"lse must be a contiguous [total_q, num_qo_heads] = {(p['total_q'], p['hq'])}")
            c.lse = la.ptr
        same_device(qa, ka, va, oa)
        decode = p["qo_indptr"] is None
        c.kind = _capi.KINDS["decode" if decode or p["max_q"] <= 1 else "prefill_paged"]
        c.q, c.k, c.v, c.o = qa.ptr, ka.ptr, va.ptr, oa.ptr
        c.q_row_stride, c.q_head_stride = qa.strides[:2]
        c.o_row_stride, c.o_head_stride = oa.strides[:2]
        c.k_block_stride, c.k_row_stride, c.k_head_stride = ka.strides[0], ka.strides[row], ka.strides[head]
        c.v_block_stride, c.v_row_stride, c.v_head_stride = va.strides[0], va.strides[row], va.strides[head]
        c.page_size, c.num_blocks = p["page"], ka.shape[0]
        c.kv_indptr, c.kv_indices = p["indptr"].data_ptr(), p["indices"].data_ptr()
        c.kv_last_page_len = p["last_page_len"].data_ptr()
        if not decode:
            c.cu_seqlens_q = p["qo_indptr"].data_ptr()
        c.batch, c.total_q, c.max_seqlen_q, c.max_seqlen_k = p["batch"], p["total_q"], p["max_q"], p["max_k"]
        scale = p["scale"] if p["scale"] is not None else p["d"] ** -0.5
        scale *= float(q_scale if q_scale is not None else 1.0) * float(k_scale if k_scale is not None else 1.0)
        c.softmax_scale = scale
        c.workspace, c.workspace_bytes = self._workspace.data_ptr(), self._workspace_bytes
        if v_scale not in (None, 1, 1.0):
            c.v_scale = self._scale_tensor(float(v_scale)).data_ptr()
        return out, lse, var, c

    def _scale_tensor(self, value):
        """A device fp32 [1] holding `value` (made once per value: a fill kernel, capturable)."""
        t = self._scales.get(value)
        if t is None:
            import torch
            t = self._scales[value] = torch.full((1,), value, dtype=torch.float32, device=self.device)
        return t


class BatchDecodeWithPagedKVCacheWrapper(_PagedWrapper):
    """flashinfer.BatchDecodeWithPagedKVCacheWrapper: one query token per request."""

    def __init__(self, float_workspace_buffer, kv_layout="NHD", use_cuda_graph=False, use_tensor_cores=False,
                 paged_kv_indptr_buffer=None, paged_kv_indices_buffer=None, paged_kv_last_page_len_buffer=None,
                 jit_args=None):
        if jit_args is not None:
            raise NotImplementedError("jit_args (FlashInfer's custom kernels)")
        super().__init__(float_workspace_buffer, kv_layout, use_cuda_graph, paged_kv_indptr_buffer,
                         paged_kv_indices_buffer, paged_kv_last_page_len_buffer)

    def plan(self, indptr, indices, last_page_len, num_qo_heads, num_kv_heads, head_dim, page_size,
             pos_encoding_mode="NONE", window_left=-1, logits_soft_cap=None, q_data_type="float16",
             kv_data_type=None, data_type=None, sm_scale=None, rope_scale=None, rope_theta=None, non_blocking=True):
        if data_type is not None:  # FlashInfer's older name for both
            q_data_type = kv_data_type = data_type
        self._plan_paged(None, indptr, indices, last_page_len, num_qo_heads, num_kv_heads, head_dim, None, page_size,
                         True, window_left, logits_soft_cap, sm_scale, q_data_type, kv_data_type, pos_encoding_mode,
                         rope_scale, rope_theta)

    begin_forward = plan


class BatchPrefillWithPagedKVCacheWrapper(_PagedWrapper):
    """flashinfer.BatchPrefillWithPagedKVCacheWrapper: query tokens by qo_indptr over paged K/V."""

    def __init__(self, float_workspace_buffer, kv_layout="NHD", use_cuda_graph=False, qo_indptr_buf=None,
                 paged_kv_indptr_buf=None, paged_kv_indices_buf=None, paged_kv_last_page_len_buf=None,
                 custom_mask_buf=None, mask_indptr_buf=None, backend="auto", jit_args=None):
        _refuse([(custom_mask_buf is not None or mask_indptr_buf is not None, "custom masks"),
                 (jit_args is not None, "jit_args (FlashInfer's custom kernels)")])
        if use_cuda_graph and qo_indptr_buf is None:
            raise ValueError("use_cuda_graph=True needs qo_indptr_buf as well")
        super().__init__(float_workspace_buffer, kv_layout, use_cuda_graph, paged_kv_indptr_buf, paged_kv_indices_buf,
                         paged_kv_last_page_len_buf, qo_indptr_buf)

    def plan(self, qo_indptr, paged_kv_indptr, paged_kv_indices, paged_kv_last_page_len, num_qo_heads, num_kv_heads,
             head_dim_qk, page_size, head_dim_vo=None, custom_mask=None, packed_custom_mask=None, causal=False,
             pos_encoding_mode="NONE", use_fp16_qk_reduction=False, sm_scale=None, window_left=-1,
             logits_soft_cap=None, rope_scale=None, rope_theta=None, q_data_type="float16", kv_data_type=None,
             non_blocking=True):
        _refuse([(custom_mask is not None or packed_custom_mask is not None, "custom masks"),
                 (use_fp16_qk_reduction, "use_fp16_qk_reduction=True (attnc accumulates q.k in fp32)")])
        self._plan_paged(qo_indptr, paged_kv_indptr, paged_kv_indices, paged_kv_last_page_len, num_qo_heads,
                         num_kv_heads, head_dim_qk, head_dim_vo, page_size, causal, window_left, logits_soft_cap,
                         sm_scale, q_data_type, kv_data_type, pos_encoding_mode, rope_scale, rope_theta)

    begin_forward = plan
