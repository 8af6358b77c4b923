"""Drop-in functions with the signatures vLLM calls (vllm_flash_attn and vllm._custom_ops).

    from attnc.vllm import flash_attn_varlen_func, merge_attn_states, reshape_and_cache_flash

Each call derives the kernel variant from its arguments (dtype, head sizes and counts, page size,
causal and window, softcap, ALiBi, sinks, LSE) and keeps one attnc.Attention per variant
(attnc._variants): the first call of a variant compiles its kernel or loads it from the SQLite
cache, later calls are a dict lookup, the argument checks and the C call. Arguments asking for
what attnc does not do raise NotImplementedError naming them; bad arguments raise ValueError or
TypeError before anything runs on the GPU. Under torch.compile the calls go through the torch
custom ops of attnc._torch_ops, so a compiled graph holds them without breaks.
"""
import ctypes

from . import _capi, _memo, _ops, _variants
from ._capi import Call, check, lib, new_struct
from ._tensors import arg, same_device

__all__ = ["flash_attn_varlen_func", "flash_attn_with_kvcache", "merge_attn_states", "reshape_and_cache_flash",
           "cascade_attention",
           "get_kv_cache_shape", "get_kv_cache_stride_order", "is_fa_version_supported", "flash_attn_supports_sinks",
           "flash_attn_supports_fp8"]

_HALF = {"bfloat16": "bf16", "float16": "fp16"}
_HALF_NAMES = tuple(_HALF)
_INT32 = ("int32",)
_F32 = ("float32",)
_KV_DTYPES = {"auto": "same", "bfloat16": "same", "float16": "same", "fp8": "fp8_e4m3", "fp8_e4m3": "fp8_e4m3",
              "fp8_e5m2": "fp8_e5m2"}
_FP8_CACHES = {"float8_e4m3fn": "fp8_e4m3", "float8_e5m2": "fp8_e5m2"}  # cache dtype -> spec kv_cache.dtype
_call_template = None


def _run(handle, call, stream):
    return lib().attnc_attention_run(handle, call, stream)  # stream: an int (CUstream)


def _new_call():
    global _call_template
    if _call_template is None:
        _call_template = new_struct(Call, lib().attnc_call_init)
    return Call.from_buffer_copy(_call_template)


def _stream(device):
    return _memo.stream(device.index)


def _no_torch():
    return False


try:  # torch.compile traces the drop-ins: while it does, they go through the custom ops
    from torch.compiler import is_compiling as _compiling
except ImportError:
    _compiling = _no_torch


def _refuse(asks):
    """NotImplementedError naming every argument that asks for something attnc does not do."""
    bad = [what for given, what in asks if given]
    if bad:
        raise NotImplementedError("attnc does not support " + "; ".join(bad))


def _mask(causal, window_size):
    """The spec's mask for FlashAttention's causal flag and window_size (left, right), -1 unbounded;
    causal fixes right to 0 (FlashAttention does the same)."""
    if window_size is None:
        left, right = -1, -1
    else:
        try:
            left, right = (int(w) for w in window_size)
        except (TypeError, ValueError):
            raise TypeError(f"window_size must be a pair (left, right) of ints, got {window_size!r}") from None
        if left < -1 or right < -1:
            raise ValueError(f"window_size {tuple(window_size)}: each side must be >= -1 (-1: unbounded)")
    if causal:
        right = 0
    if left < 0 and right < 0:
        return "causal" if causal else "none"
    if left < 0 and right == 0:
        return "causal"
    return (left, right)


def _scalar(name, x, lo=None):
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(x).__name__}")
    if lo is not None and not x >= lo:
        raise ValueError(f"{name} must be >= {lo}, got {x}")
    return x


def _half_dtype(name, a):
    if a.tensor is None:
        raise TypeError(f"{name}: attnc.vllm takes torch tensors, or tensors torch can view (__dlpack__, "
                        "__cuda_array_interface__) with torch installed; for device pointers use attnc.Attention")
    if a.dtype not in _HALF:
        raise TypeError(f"{name} must be bfloat16 or float16, got {a.dtype}")
    return _HALF[a.dtype]


def _bias(c, alibi_slopes, s_aux, hq, parts):
    """ALiBi slopes and sinks into the call; returns (alibi given, sinks given)."""
    al = arg("alibi_slopes", alibi_slopes, "[num_heads] or [batch, num_heads]", _F32, required=False)
    sk = arg("s_aux", s_aux, "[num_heads]", _F32, required=False)
    for name, a in (("alibi_slopes", al), ("s_aux", sk)):
        if a is not None:
            if a.shape[-1] != hq:
                raise ValueError(f"{name} has shape {a.shape}: its last dim must be num_heads = {hq}")
            parts.append(a)
    if al is not None:
        c.alibi_slopes = al.ptr
        if len(al.shape) == 2:
            c.alibi_batch_stride = al.strides[0]
    if sk is not None:
        c.sinks = sk.ptr
    return al is not None, sk is not None


def _fp8_query(q, q_descale, k_descale, out, k):
    """vLLM's fp8 path quantises q too (FlashAttention-3 reads fp8 q, k, v): attnc's kernels take
    16-bit queries, so q becomes an exact 16-bit copy (every e4m3/e5m2 value is a bf16 and an fp16
    one) and its descale folds into k_descale (scores are (q qd) . (k kd) = q . k (qd kd)). The copy
    and the product are new tensors each call: such calls are not remembered. Returns (q, k_descale)."""
    import torch
    if getattr(getattr(k, "dtype", None), "itemsize", 2) != 1:
        raise ValueError("an fp8 q (with q_descale) needs an fp8 KV cache: its descale folds into k_descale, which "
                         "16-bit caches do not read")
    dtype = out.dtype if out is not None else torch.bfloat16
    if q_descale is not None:
        k_descale = q_descale.float() if k_descale is None else q_descale.float() * k_descale
    return q.to(dtype), k_descale


def _kv_caches(kname, k, vname, v, layout, qa, paged):
    """k and v checked: (k arg, v arg, the spec's kv_cache.dtype). Paged caches may hold fp8 (float8
    e4m3fn / e5m2 tensors: vLLM's caches viewed as FlashAttention's fp8 dtype) read with 16-bit q."""
    allowed = (qa.dtype,) + (tuple(_FP8_CACHES) if paged else ())
    ka = arg(kname, k, layout, allowed)
    va = arg(vname, v, layout, (ka.dtype,))
    if ka.dtype == qa.dtype:
        return ka, va, "same"
    return ka, va, _FP8_CACHES[ka.dtype]


def _descales(c, k_descale, v_descale, batch, hkv, cache_dt, parts):
    """FlashAttention-3's k_descale/v_descale fp32 [batch, num_kv_heads] (any strides: vLLM passes
    an .expand() of one scale) into the call; read for fp8 caches, ignored for 16-bit ones as
    FlashAttention does."""
    if cache_dt == "same":
        return
    for name, x in (("k_descale", k_descale), ("v_descale", v_descale)):
        a = arg(name, x, "[batch, num_kv_heads]", _F32, required=False, any_strides=True)
        if a is None:
            continue
        if a.shape != (batch, hkv):
            raise ValueError(f"{name} has shape {a.shape}, expected (batch, num_kv_heads) = {(batch, hkv)}")
        setattr(c, name, a.ptr)
        setattr(c, name + "_batch_stride", a.strides[0])
        setattr(c, name + "_head_stride", a.strides[1])
        parts.append(a)


def _attention_variant(dev, dtype, d, dv, hq, hkv, page, mask, cap, alibi, sinks, lse, kv_dtype="same"):
    """The attention Variant of these values on device `dev` (created on its first call)."""
    key = ("attn", dtype, d, dv, hq, hkv, page, mask, cap, alibi, sinks, lse, dev.index, kv_dtype)
    return _variants.variant(key, lambda: _variants.spec_yaml(dtype, d, dv, hq, hkv, page, mask, cap, alibi, sinks,
                                                             lse, kv_cache_dtype=kv_dtype), dev.index or 0)


def _output(c, out, qa, total_q, hq, dv, parts):
    """out (allocated when None), checked and into the call."""
    if out is None:
        import torch
        out = torch.empty((total_q, hq, dv), dtype=qa.tensor.dtype, device=qa.tensor.device)
    oa = arg("out", out, "[total_q, num_heads, head_size]", (qa.dtype,))
    if oa.shape != (total_q, hq, dv):
        raise ValueError(f"out has shape {oa.shape}, expected {(total_q, hq, dv)}")
    parts.append(oa)
    c.o, c.o_row_stride, c.o_head_stride = oa.ptr, oa.strides[0], oa.strides[1]
    return out


# ---------------------------------------------------------------- flash_attn_varlen_func

def flash_attn_varlen_func(q, k, v, max_seqlen_q, cu_seqlens_q, max_seqlen_k, cu_seqlens_k=None, seqused_k=None,
                           q_v=None, dropout_p=0.0, softmax_scale=None, causal=False, window_size=None, softcap=0.0,
                           alibi_slopes=None, deterministic=False, return_attn_probs=False, block_table=None,
                           return_softmax_lse=False, out=None, scheduler_metadata=None, q_descale=None,
                           k_descale=None, v_descale=None, num_splits=0, fa_version=2, s_aux=None, cp_world_size=1,
                           cp_rank=0, cp_tot_seqused_k=None):
    """vllm_flash_attn.flash_attn_varlen_func. q [total_q, Hq, D]; without block_table k/v are
    [total_k, Hkv, D] with cu_seqlens_k; with block_table int32 [batch, max_blocks] they are paged
    caches [num_blocks, block_size, Hkv, D] (vLLM's key_cache / value_cache) with seqused_k int32
    [batch] (or cu_seqlens_k). Returns out, or (out, lse [Hq, total_q] fp32, natural log).
    scheduler_metadata, deterministic and fa_version are accepted and not needed (attnc schedules
    itself and is deterministic). fp8 paged caches (float8_e4m3fn / float8_e5m2 views, as vLLM
    passes them) are read with k_descale/v_descale fp32 [batch, Hkv]; an fp8 q with q_descale (vLLM's
    fp8 path) is read as an exact 16-bit copy, q_descale folded into k_descale. With 16-bit caches
    the descales are ignored, as FlashAttention does (vLLM passes them for every cache dtype)."""
    if q_v is not None or dropout_p or return_attn_probs or cp_world_size != 1 or cp_tot_seqused_k is not None:
        _refuse([(q_v is not None, "q_v (a separate V-side query, FlashAttention-3's MLA path)"),
                 (dropout_p, f"dropout_p={dropout_p} (inference only: 0)"),
                 (return_attn_probs, "return_attn_probs=True (the probabilities are never materialised)"),
                 (cp_world_size != 1 or cp_tot_seqused_k is not None,
                  "context parallelism (cp_world_size, cp_rank, cp_tot_seqused_k)")])
    fp8_q = q_descale is not None and getattr(getattr(q, "dtype", None), "itemsize", 2) == 1
    if fp8_q:
        q, k_descale = _fp8_query(q, q_descale, k_descale, out, k)
    if (k_descale is not None or v_descale is not None) and getattr(getattr(k, "dtype", None), "itemsize", 1) != 1:
        k_descale = v_descale = None  # a 16-bit cache does not read them: not keyed either
    if _compiling():
        return _torch_ops.varlen(q, k, v, max_seqlen_q, cu_seqlens_q, max_seqlen_k, cu_seqlens_k, seqused_k,
                                 softmax_scale, causal, window_size, softcap, alibi_slopes, block_table,
                                 return_softmax_lse, out, num_splits, s_aux, k_descale, v_descale)
    key = _memo.lookup("varlen", q, k, v, max_seqlen_q, cu_seqlens_q, max_seqlen_k, cu_seqlens_k, seqused_k,
                       softmax_scale, causal, window_size, softcap, alibi_slopes, block_table, return_softmax_lse, out,
                       num_splits, s_aux, k_descale, v_descale) if not fp8_q else None
    if key.__class__ is tuple:  # a hit: (out allocated or None, lse)
        if key[0] is not None:
            out = key[0]
        return (out, key[1]) if return_softmax_lse else out
    alloc = out is None
    var, c, dev, out, lse = varlen_call(q, k, v, max_seqlen_q, cu_seqlens_q, max_seqlen_k, cu_seqlens_k, seqused_k,
                                        softmax_scale, _mask(causal, window_size), softcap, alibi_slopes, block_table,
                                        return_softmax_lse, out, num_splits, s_aux, None, (k_descale, v_descale))
    check(_run(var.handle, ctypes.byref(c), _stream(dev)))
    _memo.remember(key, var, c, dev.index, tuple(out.shape) if alloc else None, out.dtype,
                   tuple(lse.shape) if return_softmax_lse else None, c.kind == _capi.KINDS["decode"])
    return (out, lse) if return_softmax_lse else out


def varlen(q, k, v, max_seqlen_q, cu_seqlens_q, max_seqlen_k, cu_seqlens_k, seqused_k, softmax_scale, mask, softcap,
           alibi_slopes, block_table, return_softmax_lse, out, num_splits, s_aux, lse=None, descales=(None, None)):
    """flash_attn_varlen_func after the refusals, with the mask already derived (_mask)."""
    var, c, dev, out, lse = varlen_call(q, k, v, max_seqlen_q, cu_seqlens_q, max_seqlen_k, cu_seqlens_k, seqused_k,
                                        softmax_scale, mask, softcap, alibi_slopes, block_table, return_softmax_lse,
                                        out, num_splits, s_aux, lse, descales)
    check(_run(var.handle, ctypes.byref(c), _stream(dev)))
    return (out, lse) if return_softmax_lse else out


def varlen_call(q, k, v, max_seqlen_q, cu_seqlens_q, max_seqlen_k, cu_seqlens_k, seqused_k, softmax_scale, mask,
                softcap, alibi_slopes, block_table, return_softmax_lse, out, num_splits, s_aux, lse,
                descales=(None, None)):
    """The checked attnc_call of a varlen call: (variant, call, device, out, lse)."""
    qa = arg("q", q, "[total_q, num_heads, head_size]", _HALF_NAMES)
    dtype = _half_dtype("q", qa)
    paged = block_table is not None
    layout = "[num_blocks, block_size, num_kv_heads, head_size]" if paged else "[total_k, num_kv_heads, head_size]"
    ka, va, kv_dtype = _kv_caches("k", k, "v", v, layout, qa, paged)
    for name, a in (("q", qa), ("k", ka), ("v", va)):
        if a.shape is None:
            raise TypeError(f"{name} must be a tensor (its shape gives the head counts and sizes), not a pointer")
    total_q, hq, d = qa.shape
    hkv, dv = ka.shape[-2], va.shape[-1]
    _variants.check_head_dim("q's head_size", d)
    _variants.check_head_dim("v's head_size", dv)
    if ka.shape[-1] != d:
        raise ValueError(f"k's head_size is {ka.shape[-1]}, q's {d}: they must match")
    if va.shape[:-1] != ka.shape[:-1]:
        raise ValueError(f"v has shape {va.shape}, k {ka.shape}: they must match except in the head size")
    if hkv < 1 or hq % hkv:
        raise ValueError(f"q has {hq} heads, k {hkv}: num_heads must be a multiple of num_kv_heads")
    max_seqlen_q = int(_scalar("max_seqlen_q", max_seqlen_q, 0))
    max_seqlen_k = int(_scalar("max_seqlen_k", max_seqlen_k, 0))
    cap = float(_scalar("softcap", softcap or 0.0, 0.0))
    splits = int(_scalar("num_splits", num_splits or 0, 0))
    c = _new_call()
    parts = [qa, ka, va]
    cq = arg("cu_seqlens_q", cu_seqlens_q, "[batch + 1]", _INT32)
    parts.append(cq)
    batch = cq.shape[0] - 1 if cq.shape else None
    if batch is None:
        raise TypeError("cu_seqlens_q must be a tensor (its length gives the batch)")
    page = 16
    if paged:
        kind = "decode" if max_seqlen_q <= 1 else "prefill_paged"
        page = ka.shape[1]
        if page % 16:
            raise ValueError(f"block_size (k.shape[1]) is {page}: attnc reads pages of a multiple of 16 tokens")
        bt = arg("block_table", block_table, "[batch, max_blocks_per_seq]", _INT32)
        if bt.shape[0] != batch:
            raise ValueError(f"block_table has {bt.shape[0]} rows, cu_seqlens_q says batch {batch}")
        parts.append(bt)
        c.block_table, c.block_table_stride, c.max_blocks_per_seq = bt.ptr, bt.strides[0], bt.shape[1]
        c.num_blocks, c.page_size = ka.shape[0], page
        c.k_block_stride, c.k_row_stride, c.k_head_stride = ka.strides[:3]
        c.v_block_stride, c.v_row_stride, c.v_head_stride = va.strides[:3]
        if seqused_k is not None:
            su = arg("seqused_k", seqused_k, "[batch]", _INT32)
            if su.shape[0] != batch:
                raise ValueError(f"seqused_k has {su.shape[0]} entries, cu_seqlens_q says batch {batch}")
            c.seqused_k = su.ptr
            parts.append(su)
        elif cu_seqlens_k is not None:
            ck = arg("cu_seqlens_k", cu_seqlens_k, "[batch + 1]", _INT32)
            if ck.shape[0] != batch + 1:
                raise ValueError(f"cu_seqlens_k has {ck.shape[0]} entries, cu_seqlens_q {batch + 1}: they must match")
            c.cu_seqlens_k = ck.ptr
            parts.append(ck)
        else:
            raise ValueError("a paged call (block_table given) needs seqused_k (or cu_seqlens_k): the KV length "
                             "of each request")
    else:
        kind = "prefill"
        if seqused_k is not None:
            raise NotImplementedError("seqused_k without block_table: attnc's contiguous prefill takes "
                                      "cu_seqlens_k only (pass the KV lengths through cu_seqlens_k)")
        ck = arg("cu_seqlens_k", cu_seqlens_k, "[batch + 1]", _INT32)
        if ck.shape[0] != batch + 1:
            raise ValueError(f"cu_seqlens_k has {ck.shape[0]} entries, cu_seqlens_q {batch + 1}: they must match")
        parts.append(ck)
        c.cu_seqlens_k, c.total_k = ck.ptr, ka.shape[0]
        c.k_row_stride, c.k_head_stride = ka.strides[:2]
        c.v_row_stride, c.v_head_stride = va.strides[:2]
        if splits > 1:
            raise ValueError(f"num_splits={splits} on a contiguous prefill: split-KV is for paged calls (0 or 1 here)")
    alibi, sinks = _bias(c, alibi_slopes, s_aux, hq, parts)
    _descales(c, descales[0], descales[1], batch, hkv, kv_dtype, parts)
    lse_spec = ("head_major", "e") if return_softmax_lse else None
    dev = qa.tensor.device
    var = _attention_variant(dev, dtype, d, dv, hq, hkv, page, mask, cap, alibi, sinks, lse_spec, kv_dtype)
    out = _output(c, out, qa, total_q, hq, dv, parts)
    if return_softmax_lse:
        if lse is None:
            import torch
            lse = torch.empty((hq, total_q), dtype=torch.float32, device=dev)
        c.lse = lse.data_ptr()
    c.kind = _capi.KINDS[kind]
    c.q, c.k, c.v = qa.ptr, ka.ptr, va.ptr
    c.q_row_stride, c.q_head_stride = qa.strides[:2]
    c.cu_seqlens_q, c.batch, c.total_q = cq.ptr, batch, total_q
    c.max_seqlen_q, c.max_seqlen_k = max_seqlen_q, max_seqlen_k
    if softmax_scale is not None:
        c.softmax_scale = float(_scalar("softmax_scale", softmax_scale))
    c.num_splits = splits
    same_device(*parts)
    if kind == "decode":
        c.workspace, c.workspace_bytes = var.workspace_for(kind, batch, max_seqlen_q, max_seqlen_k, splits, dev)
    return var, c, dev, out, lse


# ---------------------------------------------------------------- flash_attn_with_kvcache

def flash_attn_with_kvcache(q, k_cache, v_cache, k=None, v=None, rotary_cos=None, rotary_sin=None, cache_seqlens=None,
                            cache_batch_idx=None, cache_leftpad=None, block_table=None, softmax_scale=None,
                            causal=False, window_size=(-1, -1), softcap=0.0, rotary_interleaved=True,
                            alibi_slopes=None, num_splits=0, return_softmax_lse=False, *, out=None,
                            scheduler_metadata=None, q_descale=None, k_descale=None, v_descale=None, fa_version=2,
                            s_aux=None, cp_world_size=1, cp_rank=0, cp_tot_seqused_k=None, max_seqlen_k=None):
    """vllm_flash_attn.flash_attn_with_kvcache over a paged cache: q [batch, seqlen_q, Hq, D],
    caches [num_blocks, block_size, Hkv, D], block_table int32 [batch, max_blocks], cache_seqlens
    int32 [batch]. Returns out [batch, seqlen_q, Hq, Dv], or (out, lse [batch, Hq, seqlen_q]).
    max_seqlen_k (attnc's keyword): the longest cache_seqlens, for choosing the kernel without
    reading the GPU; default max_blocks * block_size (what a CUDA graph must cover anyway)."""
    if k is not None or v is not None or rotary_cos is not None or rotary_sin is not None or \
            cache_batch_idx is not None or cache_leftpad is not None or cp_world_size != 1 or \
            cp_tot_seqused_k is not None:
        _refuse([(k is not None or v is not None, "appending k/v (write them with reshape_and_cache_flash first)"),
                 (rotary_cos is not None or rotary_sin is not None,
                  "rotary_cos/rotary_sin (apply RoPE before the call)"),
                 (cache_batch_idx is not None, "cache_batch_idx (index block_table's rows instead)"),
                 (cache_leftpad is not None, "cache_leftpad"),
                 (cp_world_size != 1 or cp_tot_seqused_k is not None,
                  "context parallelism (cp_world_size, cp_rank, cp_tot_seqused_k)")])
    fp8_q = q_descale is not None and getattr(getattr(q, "dtype", None), "itemsize", 2) == 1
    if fp8_q:
        q, k_descale = _fp8_query(q, q_descale, k_descale, out, k_cache)
    if (k_descale is not None or v_descale is not None) and \
            getattr(getattr(k_cache, "dtype", None), "itemsize", 1) != 1:
        k_descale = v_descale = None  # a 16-bit cache does not read them: not keyed either
    compiling = _compiling()
    # a repeat (the same metadata and scalars) was checked before: the checks below run on a miss
    key = None if fp8_q or compiling else _memo.lookup(
        "kvcache", q, k_cache, v_cache, cache_seqlens, block_table, softmax_scale, causal, window_size, softcap,
        alibi_slopes, num_splits, return_softmax_lse, out, s_aux, max_seqlen_k, k_descale, v_descale)
    if key.__class__ is tuple:  # a hit
        o, lse = key
        if o is None:
            o = out
    else:
        if block_table is None:
            raise NotImplementedError("k_cache without block_table: attnc reads paged caches; a contiguous "
                                      "[batch, seqlen, Hkv, D] cache is block_table = arange(batch)[:, None] when "
                                      "seqlen is a multiple of 16")
        if cache_seqlens is None:
            raise ValueError("cache_seqlens (int32 [batch], the KV length of each request) is required")
        if not (hasattr(q, "dim") and q.dim() == 4):
            raise ValueError(f"q must be a tensor [batch, seqlen_q, num_heads, head_size], got "
                             f"{tuple(q.shape) if hasattr(q, 'shape') else type(q).__name__}")
        mask = _mask(causal, window_size)
        if max_seqlen_k is None:
            if getattr(block_table, "shape", None) is None or getattr(k_cache, "shape", None) is None:
                raise TypeError("block_table and k_cache must be tensors")
            max_seqlen_k = block_table.shape[-1] * k_cache.shape[1]
        if compiling:
            return _torch_ops.with_kvcache(q, k_cache, v_cache, cache_seqlens, block_table, softmax_scale, causal,
                                           window_size, softcap, alibi_slopes, num_splits, return_softmax_lse, out,
                                           s_aux, max_seqlen_k, k_descale, v_descale)
        var, c, dev, o, lse = kvcache_call(q, k_cache, v_cache, cache_seqlens, block_table, softmax_scale, mask,
                                           softcap, alibi_slopes, num_splits, return_softmax_lse, out, s_aux,
                                           max_seqlen_k, descales=(k_descale, v_descale))
        check(_run(var.handle, ctypes.byref(c), _stream(dev)))
        if q.is_contiguous():  # a strided q is copied by the reshape: not the same pointer next time
            _memo.remember(key, var, c, dev.index, tuple(o.shape) if out is None else None, o.dtype,
                           tuple(lse.shape) if return_softmax_lse else None, True)
    if return_softmax_lse:
        b, sq, hq = o.shape[:3]
        return o, lse.view(b, sq, hq).transpose(1, 2)
    return o


_arange_cache = {}


def _query_starts(b, sq, device):
    """cu_seqlens_q of `b` requests of `sq` tokens (int32, made once per shape and device)."""
    key = (b, sq, device.index)
    t = _arange_cache.get(key)
    if t is None:
        import torch
        t = _arange_cache[key] = torch.arange(0, (b + 1) * sq, sq, dtype=torch.int32, device=device)
    return t


def with_kvcache(q, k_cache, v_cache, cache_seqlens, block_table, softmax_scale, mask, softcap, alibi_slopes,
                 num_splits, return_softmax_lse, out, s_aux, max_seqlen_k, lse=None, descales=(None, None)):
    """flash_attn_with_kvcache after the refusals (the custom op's body)."""
    var, c, dev, o, lse = kvcache_call(q, k_cache, v_cache, cache_seqlens, block_table, softmax_scale, mask, softcap,
                                       alibi_slopes, num_splits, return_softmax_lse, out, s_aux, max_seqlen_k, lse,
                                       descales)
    check(_run(var.handle, ctypes.byref(c), _stream(dev)))
    if return_softmax_lse:
        return o, lse.view(o.shape[0], o.shape[1], o.shape[2]).transpose(1, 2)
    return o


def kvcache_call(q, k_cache, v_cache, cache_seqlens, block_table, softmax_scale, mask, softcap, alibi_slopes,
                 num_splits, return_softmax_lse, out, s_aux, max_seqlen_k, lse=None, descales=(None, None)):
    """The checked decode call of flash_attn_with_kvcache (cu_seqlens_q for seqlen_q > 1):
    (variant, call, device, out [b, sq, Hq, Dv], lse token-major [b * sq, Hq] or None)."""
    b, sq, hq, d = q.shape
    dv = v_cache.shape[-1]
    qf = q.reshape(b * sq, hq, d)
    if out is not None:
        if tuple(out.shape) != (b, sq, hq, dv):
            raise ValueError(f"out has shape {tuple(out.shape)}, expected {(b, sq, hq, dv)}")
        of = out.view(b * sq, hq, dv)
    else:
        of = None
    cu = _query_starts(b, sq, q.device) if sq > 1 else None
    lse_tm = None
    if return_softmax_lse:
        import torch
        lse_tm = lse if lse is not None else torch.empty((b * sq, hq), dtype=torch.float32, device=q.device)
    var, c, dev, res = _decode_call(qf, k_cache, v_cache, block_table, cache_seqlens, max_seqlen_k, cu, sq,
                                    softmax_scale, mask, softcap, alibi_slopes, num_splits, s_aux, of, lse_tm, descales)
    return var, c, dev, (res.view(b, sq, hq, dv) if out is None else out), lse_tm


def _decode_call(q, k_cache, v_cache, block_table, seqused_k, max_seqlen_k, cu_seqlens_q, max_seqlen_q, softmax_scale,
                 mask, softcap, alibi_slopes, num_splits, s_aux, out, lse_token_major, descales=(None, None)):
    """The checked decode call (variant, call, device, out) whose LSE (when wanted) is token-major
    [total_q, Hq] (FlashAttention's with_kvcache layout is a view of it)."""
    qa = arg("q", q, "[total_q, num_heads, head_size]", _HALF_NAMES)
    dtype = _half_dtype("q", qa)
    total_q, hq, d = qa.shape
    layout = "[num_blocks, block_size, num_kv_heads, head_size]"
    ka, va, kv_dtype = _kv_caches("k_cache", k_cache, "v_cache", v_cache, layout, qa, True)
    hkv, dv, page = ka.shape[2], va.shape[3], ka.shape[1]
    _variants.check_head_dim("q's head_size", d)
    _variants.check_head_dim("v_cache's head_size", dv)
    if ka.shape[3] != d:
        raise ValueError(f"k_cache's head_size is {ka.shape[3]}, q's {d}: they must match")
    if va.shape[:3] != ka.shape[:3]:
        raise ValueError(f"v_cache has shape {va.shape}, k_cache {ka.shape}: they must match except in the head size")
    if hq % hkv:
        raise ValueError(f"q has {hq} heads, k_cache {hkv}: num_heads must be a multiple of num_kv_heads")
    if page % 16:
        raise ValueError(f"block_size (k_cache.shape[1]) is {page}: attnc reads pages of a multiple of 16 tokens")
    bt = arg("block_table", block_table, "[batch, max_blocks_per_seq]", _INT32)
    su = arg("cache_seqlens", seqused_k, "[batch]", _INT32)
    batch = bt.shape[0]
    if su.shape[0] != batch:
        raise ValueError(f"cache_seqlens has {su.shape[0]} entries, block_table {batch} rows")
    if cu_seqlens_q is None and total_q != batch:
        raise ValueError(f"q has {total_q} tokens for {batch} requests (one token per request without cu_seqlens_q)")
    cap = float(_scalar("softcap", softcap or 0.0, 0.0))
    splits = int(_scalar("num_splits", num_splits or 0, 0))
    max_seqlen_k = int(_scalar("max_seqlen_k", max_seqlen_k, 0))
    parts = [qa, ka, va, bt, su]
    c = _new_call()
    alibi, sinks = _bias(c, alibi_slopes, s_aux, hq, parts)
    _descales(c, descales[0], descales[1], batch, hkv, kv_dtype, parts)
    lse_spec = ("token_major", "e") if lse_token_major is not None else None
    dev = qa.tensor.device
    var = _attention_variant(dev, dtype, d, dv, hq, hkv, page, mask, cap, alibi, sinks, lse_spec, kv_dtype)
    out = _output(c, out, qa, total_q, hq, dv, parts)
    if cu_seqlens_q is not None:
        cq = arg("cu_seqlens_q", cu_seqlens_q, "[batch + 1]", _INT32)
        c.cu_seqlens_q = cq.ptr
        parts.append(cq)
    if lse_token_major is not None:
        c.lse = lse_token_major.data_ptr()
    c.kind = _capi.KINDS["decode"]
    c.q, c.k, c.v = qa.ptr, ka.ptr, va.ptr
    c.q_row_stride, c.q_head_stride = qa.strides[:2]
    c.block_table, c.block_table_stride, c.max_blocks_per_seq = bt.ptr, bt.strides[0], bt.shape[1]
    c.seqused_k, c.num_blocks, c.page_size = su.ptr, ka.shape[0], page
    c.k_block_stride, c.k_row_stride, c.k_head_stride = ka.strides[:3]
    c.v_block_stride, c.v_row_stride, c.v_head_stride = va.strides[:3]
    c.batch, c.total_q, c.max_seqlen_q, c.max_seqlen_k = batch, total_q, max_seqlen_q, max_seqlen_k
    if softmax_scale is not None:
        c.softmax_scale = float(_scalar("softmax_scale", softmax_scale))
    c.num_splits = splits
    same_device(*parts)
    c.workspace, c.workspace_bytes = var.workspace_for("decode", batch, max_seqlen_q, max_seqlen_k, splits, dev)
    return var, c, dev, out


# ---------------------------------------------------------------- merge_attn_states

def merge_attn_states(output, prefix_output, prefix_lse, suffix_output, suffix_lse, output_lse=None):
    """vllm.attention.ops.merge_attn_states: outputs [num_tokens, num_heads, head_size] (bf16 or
    fp16; head_size a multiple of 8 up to 256), LSEs fp32 [num_heads, num_tokens], natural log; +inf
    LSEs count as -inf (FlashAttention-2's empty rows). Writes output (and output_lse)."""
    if _compiling():
        _torch_ops.merge(output, prefix_output, prefix_lse, suffix_output, suffix_lse, output_lse)
        return
    key = _memo.lookup("merge", output, prefix_output, prefix_lse, suffix_output, suffix_lse, output_lse)
    if key.__class__ is tuple:  # a hit
        return
    o = arg("output", output, "[num_tokens, num_heads, head_size]", _HALF_NAMES)
    dtype = _half_dtype("output", o)
    t, h, d = o.shape
    _variants.check_head_dim("output's head_size", d)
    dev = o.tensor.device
    var = _variants.variant(("merge", dtype, h, d, dev.index),
                            lambda: _variants.spec_yaml(dtype, d, d, h, h, lse=("head_major", "e"), kernels=("merge",)),
                            dev.index or 0)
    m = _ops.merge(var.att, output, prefix_output, prefix_lse, suffix_output, suffix_lse, output_lse, lse_base="e",
                   run=False)
    e = _memo.OpEntry(lib().attnc_attention_merge, var.handle, m, dev.index)
    _memo.run_op(e)
    _memo.remember_op(key, e)


# ---------------------------------------------------------------- reshape_and_cache_flash

def reshape_and_cache_flash(key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype="auto", k_scale=None,
                            v_scale=None):
    """vllm._custom_ops.reshape_and_cache_flash: key/value [num_tokens(+padding), Hkv, D], caches
    [num_blocks, block_size, Hkv, D] (any strides: HND is a permuted view), slot_mapping int64
    [num_tokens] (-1 skips a token). kv_cache_dtype 'auto' (the caches hold key's dtype; k_scale
    and v_scale are ignored, as vLLM does), 'fp8'/'fp8_e4m3' or 'fp8_e5m2' (caches float8 or uint8;
    stored = fp8(x / scale), scales fp32 [1], [] or [Hkv])."""
    if kv_cache_dtype not in _KV_DTYPES:
        raise ValueError(f"kv_cache_dtype {kv_cache_dtype!r}: allowed: {', '.join(_KV_DTYPES)}")
    if _KV_DTYPES[kv_cache_dtype] == "same":
        k_scale = v_scale = None
    else:
        k_scale, v_scale = _scale("k_scale", k_scale), _scale("v_scale", v_scale)
    if _compiling():
        _torch_ops.cache_write(key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype, k_scale, v_scale)
        return
    mkey = _memo.lookup("cache_write", key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype, k_scale,
                        v_scale)
    if mkey.__class__ is tuple:  # a hit
        return
    ka = arg("key", key, "[num_tokens, num_kv_heads, head_size]", _HALF_NAMES)
    dtype = _half_dtype("key", ka)
    va = arg("value", value, "[num_tokens, num_kv_heads, head_size]", (ka.dtype,))
    kc = arg("key_cache", key_cache, "[num_blocks, block_size, num_kv_heads, head_size]")
    cache_dt = _KV_DTYPES[kv_cache_dtype]
    if cache_dt == "same" and kc.dtype and kc.dtype.startswith("float8"):
        raise ValueError(f"key_cache is {kc.dtype} but kv_cache_dtype is {kv_cache_dtype!r}: pass 'fp8_e4m3' "
                         "or 'fp8_e5m2'")
    hkv, d, dv, page = ka.shape[1], ka.shape[2], va.shape[2], kc.shape[1]
    _variants.check_head_dim("key's head_size", d)
    _variants.check_head_dim("value's head_size", dv)
    dev = ka.tensor.device
    vkey = ("cache_write", dtype, hkv, d, dv, page, cache_dt, dev.index)
    var = _variants.variant(vkey, lambda: _variants.spec_yaml(dtype, d, dv, hkv, hkv, page_size=page,
                                                             kv_cache_dtype=cache_dt, kernels=("cache_write",)),
                            dev.index or 0)
    w = _ops.cache_write(var.att, key, value, key_cache, value_cache, slot_mapping, k_scale, v_scale, run=False)
    e = _memo.OpEntry(lib().attnc_attention_cache_write, var.handle, w, dev.index)
    _memo.run_op(e)
    _memo.remember_op(mkey, e)


def _scale(name, s):
    if s is None:
        raise ValueError(f"{name} (fp32 [1] or [num_kv_heads]) is required for an fp8 cache")
    if hasattr(s, "dim") and s.dim() == 0:
        return s.view(1)
    return s


# ---------------------------------------------------------------- cascade_attention

def cascade_attention(output, query, key_cache, value_cache, cu_query_lens, max_query_len, cu_prefix_query_lens,
                      prefix_kv_lens, suffix_kv_lens, max_kv_len, softmax_scale, alibi_slopes, sliding_window,
                      logits_soft_cap, block_table, common_prefix_len, fa_version=2, prefix_scheduler_metadata=None,
                      suffix_scheduler_metadata=None, q_descale=None, k_descale=None, v_descale=None, s_aux=None):
    """vLLM's cascade_attention (vllm/v1/attention/backends/flash_attn.py): the shared prefix's
    pages read once for all requests (prefix pass), each request's own KV (suffix pass, causal),
    then merge_attn_states. Writes output [num_tokens, Hq, Dv]. As in vLLM, common_prefix_len must
    not pass any request's context (seq_len - query_len): the prefix pass is unmasked."""
    _refuse([(alibi_slopes is not None, "ALiBi in cascade attention (vLLM refuses it too)"),
             (sliding_window not in (None, (-1, -1), [-1, -1]), "a sliding window in cascade attention "
                                                               "(vLLM refuses it too)")])
    qa = arg("query", query, "[num_tokens, num_heads, head_size]", _HALF_NAMES)
    dtype = _half_dtype("query", qa)
    ka = arg("key_cache", key_cache, "[num_blocks, block_size, num_kv_heads, head_size]", (qa.dtype,))
    va = arg("value_cache", value_cache, "[num_blocks, block_size, num_kv_heads, head_size]", (qa.dtype,))
    hq, d, hkv, dv, page = qa.shape[1], qa.shape[2], ka.shape[2], va.shape[3], ka.shape[1]
    _variants.check_head_dim("query's head_size", d)
    _variants.check_head_dim("value_cache's head_size", dv)
    if hq % hkv:
        raise ValueError(f"query has {hq} heads, key_cache {hkv}: num_heads must be a multiple of num_kv_heads")
    cap = float(_scalar("logits_soft_cap", logits_soft_cap or 0.0, 0.0))
    sinks = s_aux is not None
    dev = qa.tensor.device
    var = _attention_variant(dev, dtype, d, dv, hq, hkv, page, "causal", cap, False, sinks, None)
    ws = var.cascade_workspace(qa.shape[0], dev)
    _ops.cascade(var.att, output, query, key_cache, value_cache, cu_query_lens, max_query_len, cu_prefix_query_lens,
                 prefix_kv_lens, suffix_kv_lens, block_table, common_prefix_len, max_kv_len, softmax_scale, None,
                 s_aux, ws)
    return output


# ---------------------------------------------------------------- backend helpers

def get_kv_cache_shape(num_blocks, block_size, num_kv_heads, head_size, cache_dtype_str="auto"):
    """FlashAttentionBackend.get_kv_cache_shape: (2, num_blocks, block_size, num_kv_heads, head_size);
    kv_cache[0] and kv_cache[1] are the key and value caches the functions above take."""
    for name, x in (("num_blocks", num_blocks), ("num_kv_heads", num_kv_heads)):
        if isinstance(x, bool) or not isinstance(x, int) or x < 1:
            raise ValueError(f"{name} must be a positive int, got {x!r}")
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 16 or block_size % 16:
        raise ValueError(f"block_size must be a positive multiple of 16, got {block_size!r}")
    if isinstance(head_size, bool) or not isinstance(head_size, int):
        raise ValueError(f"head_size must be an int, got {head_size!r}")
    _variants.check_head_dim("head_size", head_size)
    if cache_dtype_str not in _KV_DTYPES:
        raise ValueError(f"cache_dtype_str {cache_dtype_str!r}: allowed: {', '.join(_KV_DTYPES)}")
    return (2, num_blocks, block_size, num_kv_heads, head_size)


def get_kv_cache_stride_order(include_num_layers_dimension=False):
    """The identity (NHD); HND caches are permuted views, which every function here takes."""
    return (0, 1, 2, 3, 4, 5) if include_num_layers_dimension else (0, 1, 2, 3, 4)


def is_fa_version_supported(fa_version, device=None):
    return fa_version in (2, 3)


def flash_attn_supports_sinks():
    return True


def flash_attn_supports_fp8():
    """True: fp8 paged caches are read (with 16-bit queries, or fp8 ones and q_descale)."""
    return True


if _compiling is not _no_torch:
    try:
        from . import _torch_ops  # noqa: E402  (registers the custom ops torch.compile traces)
    except AttributeError as e:  # a torch before 2.4 has no torch.library.custom_op
        raise ImportError(f"attnc.vllm needs torch >= 2.4 (torch.library.custom_op): {e}") from e
