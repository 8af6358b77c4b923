"""The layer's ops through the C API (attnc_attention_merge / _cache_write / _lse_correct): tensors
checked here first (device, dtype, rank, innermost stride), then the library checks the call
against the spec before anything is loaded or launched."""
import ctypes

from . import _capi
from ._capi import CacheWrite, Cascade, LseCorrect, Merge, check, lib, new_struct
from ._tensors import TORCH_DTYPES, arg, expect_dim, same_device

_F32 = ("float32",)
_FP8 = {"fp8_e4m3": ("float8_e4m3fn", "uint8"), "fp8_e5m2": ("float8_e5m2", "uint8")}


def _stream(stream, a):
    if stream is None:
        if a.tensor is None:
            return 0
        import torch
        return torch.cuda.current_stream(a.tensor.device).cuda_stream
    return stream.cuda_stream if hasattr(stream, "cuda_stream") else int(stream)


def merge(att, output, prefix_output, prefix_lse, suffix_output, suffix_lse, output_lse=None, stream=None,
          lse_base=None, run=True):
    """vLLM's merge_attn_states: outputs [num_tokens, num_heads, head_size] in the spec's dtype,
    LSEs fp32 [num_heads, num_tokens] (any strides). lse_base None: the spec's ('e' or '2').
    run=False: check and return the attnc_merge without running it."""
    dt = (TORCH_DTYPES[att.spec["dtype"]],)
    lay = "[num_tokens, num_heads, head_size]"
    o, po, so = (arg(n, x, lay, dt) for n, x in (("output", output), ("prefix_output", prefix_output),
                                               ("suffix_output", suffix_output)))
    pl = arg("prefix_lse", prefix_lse, "[num_heads, num_tokens]", _F32)
    sl = arg("suffix_lse", suffix_lse, "[num_heads, num_tokens]", _F32)
    ol = arg("output_lse", output_lse, "[num_heads, num_tokens]", _F32, required=False)
    if lse_base not in _capi.LSE_BASES:
        raise ValueError(f"lse_base {lse_base!r}: expected None (the spec's), 'e' or '2'")
    m = new_struct(Merge, lib().attnc_merge_init)
    m.output, m.prefix_output, m.suffix_output = o.ptr, po.ptr, so.ptr
    m.prefix_lse, m.suffix_lse = pl.ptr, sl.ptr
    m.lse_base = _capi.LSE_BASES[lse_base]
    if o.shape:
        m.num_tokens, m.num_heads, m.head_size = o.shape
        for name, a in (("prefix_output", po), ("suffix_output", so)):
            if a.shape and a.shape != o.shape:
                raise ValueError(f"{name} has shape {a.shape}, output {o.shape}: they must match")
        for name, a in (("prefix_lse", pl), ("suffix_lse", sl), ("output_lse", ol)):
            if a is not None and a.shape and a.shape != (o.shape[1], o.shape[0]):
                raise ValueError(f"{name} must be [num_heads, num_tokens] = {(o.shape[1], o.shape[0])}, "
                                 f"got {a.shape}")
    else:
        raise ValueError("output must be a tensor (its shape gives num_tokens, num_heads, head_size)")
    for prefix, a in (("output", o), ("prefix", po), ("suffix", so)):
        if a.strides:
            setattr(m, prefix + "_row_stride", a.strides[0])
            setattr(m, prefix + "_head_stride", a.strides[1])
    for prefix, a in (("prefix_lse", pl), ("suffix_lse", sl), ("output_lse", ol)):
        if a is not None and a.strides:
            setattr(m, prefix + "_head_stride", a.strides[0])
            setattr(m, prefix + "_token_stride", a.strides[1])
    if ol is not None:
        m.output_lse = ol.ptr
    same_device(o, po, so, pl, sl, ol)
    if not run:
        return m
    check(lib().attnc_attention_merge(att._h, ctypes.byref(m), ctypes.c_void_p(_stream(stream, o))))
    return output


def lse_correct(att, output, partial, lses, rank, output_lse=None, stream=None, lse_base=None):
    """Decode context parallelism's LSE correction (docs/dcp.md) on the layer of the gathered query
    heads: partial [num_tokens, H, Dv] is this rank's attention over its shard, lses fp32 [N, ...]
    the all-gathered LSEs of the N ranks in the spec's LSE layout ([N, H, num_tokens] head-major,
    [N, num_tokens, H] token-major). output: [num_tokens, H, Dv] (may be partial itself), or
    [N, num_tokens, H / N, Dv] for a reduce-scatter over heads (head h in chunk h // (H / N)).
    output_lse: fp32 [H, num_tokens], the LSE over all ranks' keys."""
    dt = (TORCH_DTYPES[att.spec["dtype"]],)
    pa = arg("partial", partial, "[num_tokens, num_heads, head_size]", dt)
    oa = arg("output", output,
             "[num_tokens, num_heads, head_size] or [chunks, num_tokens, heads_per_chunk, head_size]", dt)
    la = arg("lses", lses, "[world_size, num_heads, num_tokens]", _F32)
    ol = arg("output_lse", output_lse, "[num_heads, num_tokens]", _F32, required=False)
    if lse_base not in _capi.LSE_BASES:
        raise ValueError(f"lse_base {lse_base!r}: expected None (the spec's), 'e' or '2'")
    if not (pa.shape and oa.shape and la.shape):
        raise ValueError("output, partial and lses must be tensors (their shapes give the sizes)")
    tokens, heads, d = pa.shape
    n = la.shape[0]
    head_major = att.spec["lse_layout"] != "token_major"
    want = (n, heads, tokens) if head_major else (n, tokens, heads)
    if la.shape != want:
        dims = "num_heads, num_tokens" if head_major else "num_tokens, num_heads"
        raise ValueError(f"lses must be [world_size, {dims}] = {want} (the spec's LSE layout), got {la.shape}")
    c = new_struct(LseCorrect, lib().attnc_lse_correct_init)
    c.output, c.partial, c.lses = oa.ptr, pa.ptr, la.ptr
    c.num_tokens, c.num_heads, c.head_size, c.world_size, c.rank = tokens, heads, d, n, int(rank)
    if len(oa.shape) == 4:
        chunks, t, c.heads_per_chunk, dd = oa.shape
        if (chunks * c.heads_per_chunk, t, dd) != (heads, tokens, d):
            raise ValueError(f"output {oa.shape} must be [chunks, num_tokens, heads_per_chunk, head_size] with "
                             f"chunks * heads_per_chunk = {heads}, num_tokens {tokens}, head_size {d}")
        c.output_chunk_stride, c.output_row_stride, c.output_head_stride = oa.strides[:3]
    else:
        if oa.shape != pa.shape:
            raise ValueError(f"output has shape {oa.shape}, partial {pa.shape}: they must match")
        c.output_row_stride, c.output_head_stride = oa.strides[:2]
    c.partial_row_stride, c.partial_head_stride = pa.strides[:2]
    c.lses_rank_stride = la.strides[0]
    if head_major:
        c.lses_head_stride, c.lses_token_stride = la.strides[1], la.strides[2]
    else:
        c.lses_token_stride, c.lses_head_stride = la.strides[1], la.strides[2]
    if ol is not None:
        if ol.shape != (heads, tokens):
            raise ValueError(f"output_lse must be [num_heads, num_tokens] = {(heads, tokens)}, got {ol.shape}")
        c.output_lse = ol.ptr
        c.output_lse_head_stride, c.output_lse_token_stride = ol.strides
    c.lse_base = _capi.LSE_BASES[lse_base]
    same_device(oa, pa, la, ol)
    check(lib().attnc_attention_lse_correct(att._h, ctypes.byref(c), ctypes.c_void_p(_stream(stream, pa))))
    return output


def cache_write(att, key, value, key_cache, value_cache, slot_mapping, k_scale=None, v_scale=None, stream=None,
                check_slots=False, run=True):
    """vLLM's reshape_and_cache_flash: key/value [num_tokens(+padding), Hkv, D], caches
    [num_blocks, block_size, Hkv, D] (vLLM's layout; other layouts as strided views), slot_mapping
    int64 [num_tokens] (< 0 skips a token). fp8 caches (spec kv_cache.dtype fp8_*): k_scale and
    v_scale fp32 [1] or [Hkv]. check_slots: copy slot_mapping to the host and check every slot
    first (synchronises). run=False: check and return the attnc_cache_write without running it."""
    dt = (TORCH_DTYPES[att.spec["dtype"]],)
    kv_dtype = att.spec["kv_cache_dtype"]
    cache_dt = _FP8.get(kv_dtype, dt)
    ka = arg("key", key, "[num_tokens, num_kv_heads, head_size]", dt)
    va = arg("value", value, "[num_tokens, num_kv_heads, head_size]", dt)
    kc = arg("key_cache", key_cache, "[num_blocks, block_size, num_kv_heads, head_size]", cache_dt)
    vc = arg("value_cache", value_cache, "[num_blocks, block_size, num_kv_heads, head_size]", cache_dt)
    sm = arg("slot_mapping", slot_mapping, "[num_tokens]", ("int64",))
    hkv = att.spec["num_kv_heads"]
    for name, a, d in (("key", ka, "head_dim"), ("value", va, "head_dim_v")):
        expect_dim(name, a, 1, hkv, "kv heads")
        expect_dim(name, a, 2, att.spec[d], d.replace("_", " "))
    for name, a, d in (("key_cache", kc, "head_dim"), ("value_cache", vc, "head_dim_v")):
        expect_dim(name, a, 2, hkv, "kv heads")
        expect_dim(name, a, 3, att.spec[d], d.replace("_", " "))
    fp8 = kv_dtype in _FP8
    if fp8 and (k_scale is None or v_scale is None):
        raise ValueError(f"k_scale and v_scale (fp32 [1] or [num_kv_heads]) are required: the cache is {kv_dtype}")
    if not fp8 and (k_scale is not None or v_scale is not None):
        raise ValueError(f"k_scale/v_scale given but the cache holds {att.spec['dtype']} (spec kv_cache.dtype "
                         f"{kv_dtype}); scales are for fp8 caches")
    w = new_struct(CacheWrite, lib().attnc_cache_write_init)
    w.key, w.value, w.key_cache, w.value_cache, w.slot_mapping = ka.ptr, va.ptr, kc.ptr, vc.ptr, sm.ptr
    if sm.shape is None:
        raise ValueError("slot_mapping must be a tensor (its length is num_tokens)")
    w.num_tokens = sm.shape[0]
    if ka.shape and ka.shape[0] < w.num_tokens:
        raise ValueError(f"key has {ka.shape[0]} rows, fewer than slot_mapping's {w.num_tokens} tokens")
    if va.shape and va.shape[0] < w.num_tokens:
        raise ValueError(f"value has {va.shape[0]} rows, fewer than slot_mapping's {w.num_tokens} tokens")
    if kc.shape and vc.shape and kc.shape[:2] != vc.shape[:2]:
        raise ValueError(f"key_cache and value_cache differ in pages: {kc.shape} vs {vc.shape}")
    parts = [ka, va, kc, vc, sm]
    if fp8:
        ks = arg("k_scale", k_scale, "[num_kv_heads]", _F32)
        vs = arg("v_scale", v_scale, "[num_kv_heads]", _F32)
        n = ks.shape[0] if ks.shape else 1
        if n not in (1, hkv) or (vs.shape and vs.shape[0] != n):
            raise ValueError(f"k_scale/v_scale must both be [1] or [num_kv_heads={hkv}], got "
                             f"{ks.shape} and {vs.shape}")
        w.k_scale, w.v_scale, w.per_head_scale = ks.ptr, vs.ptr, int(n == hkv and hkv > 1)
        parts += [ks, vs]
    for prefix, a in (("key", ka), ("value", va)):
        if a.strides:
            setattr(w, prefix + "_row_stride", a.strides[0])
            setattr(w, prefix + "_head_stride", a.strides[1])
    for prefix, a in (("key_cache", kc), ("value_cache", vc)):
        if a.strides:
            setattr(w, prefix + "_block_stride", a.strides[0])
            setattr(w, prefix + "_page_stride", a.strides[1])
            setattr(w, prefix + "_head_stride", a.strides[2])
    if kc.shape:
        w.num_blocks, w.block_size = kc.shape[0], kc.shape[1]
    host = None
    if check_slots and sm.tensor is not None:
        host = sm.tensor.detach().to("cpu").contiguous()
        w.host_slot_mapping = host.data_ptr()
    same_device(*parts)
    if not run:
        return w
    check(lib().attnc_attention_cache_write(att._h, ctypes.byref(w), ctypes.c_void_p(_stream(stream, ka))))



def cascade(att, output, query, key_cache, value_cache, cu_query_lens, max_query_len, cu_prefix_query_lens,
            prefix_kv_lens, suffix_kv_lens, block_table, common_prefix_len, max_kv_len=0, softmax_scale=None,
            softcap=None, sinks=None, workspace=None, stream=None):
    """vLLM's cascade_attention: every request shares its first common_prefix_len KV tokens (the
    same pages at the start of each block_table row). query/output [num_tokens, Hq, D/Dv], caches
    [num_blocks, page_size, Hkv, D] (any strides), int32 cu_query_lens [num_reqs + 1],
    cu_prefix_query_lens [2] = {0, num_tokens}, prefix_kv_lens [1], suffix_kv_lens [num_reqs],
    block_table [num_reqs, max_blocks]. workspace: a CUDA tensor of at least
    att.cascade_workspace_needed(num_tokens) bytes (None: the reserved one)."""
    dt = (TORCH_DTYPES[att.spec["dtype"]],)
    qa = arg("query", query, "[num_tokens, num_heads, head_size]", dt)
    oa = arg("output", output, "[num_tokens, num_heads, head_size_v]", dt)
    layout = "[num_blocks, block_size, num_kv_heads, head_size]"
    ka, va = arg("key_cache", key_cache, layout, dt), arg("value_cache", value_cache, layout, dt)
    for name, a, d in (("query", qa, "head_dim"), ("output", oa, "head_dim_v")):
        expect_dim(name, a, 1, att.spec["num_q_heads"], "q heads")
        expect_dim(name, a, 2, att.spec[d], d.replace("_", " "))
    for name, a, d in (("key_cache", ka, "head_dim"), ("value_cache", va, "head_dim_v")):
        expect_dim(name, a, 2, att.spec["num_kv_heads"], "kv heads")
        expect_dim(name, a, 3, att.spec[d], d.replace("_", " "))
    i32 = ("int32",)
    cu = arg("cu_query_lens", cu_query_lens, "[num_reqs + 1]", i32)
    cp = arg("cu_prefix_query_lens", cu_prefix_query_lens, "[2]", i32)
    pk = arg("prefix_kv_lens", prefix_kv_lens, "[1]", i32)
    sk = arg("suffix_kv_lens", suffix_kv_lens, "[num_reqs]", i32)
    bt = arg("block_table", block_table, "[num_reqs, max_blocks]", i32)
    sa = arg("sinks", sinks, "[num_heads]", _F32, required=False)
    for a in (qa, oa, ka, cu, bt):
        if a.shape is None:
            raise ValueError("query, output, key_cache, cu_query_lens and block_table must be tensors (their shapes "
                             "give the sizes)")
    c = new_struct(Cascade, lib().attnc_cascade_init)
    c.query, c.key_cache, c.value_cache, c.output = qa.ptr, ka.ptr, va.ptr, oa.ptr
    c.q_row_stride, c.q_head_stride = qa.strides[:2]
    c.o_row_stride, c.o_head_stride = oa.strides[:2]
    c.k_block_stride, c.k_row_stride, c.k_head_stride = ka.strides[:3]
    c.v_block_stride, c.v_row_stride, c.v_head_stride = va.strides[:3]
    c.num_blocks, c.page_size = ka.shape[0], ka.shape[1]
    c.num_tokens, c.num_reqs = qa.shape[0], cu.shape[0] - 1
    c.cu_query_lens, c.cu_prefix_query_lens, c.prefix_kv_lens, c.suffix_kv_lens = cu.ptr, cp.ptr, pk.ptr, sk.ptr
    c.max_query_len, c.common_prefix_len = int(max_query_len), int(common_prefix_len)
    c.max_kv_len = int(max_kv_len or 0)
    c.block_table, c.block_table_stride, c.max_blocks_per_seq = bt.ptr, bt.strides[0], bt.shape[1]
    if softmax_scale is not None:
        c.softmax_scale = float(softmax_scale)
    if softcap is not None:
        c.softcap = float(softcap)
    parts = [qa, oa, ka, va, cu, cp, pk, sk, bt]
    if sa is not None:
        c.sinks = sa.ptr
        parts.append(sa)
    if workspace is not None:
        wa = arg("workspace", workspace, "[bytes]", None)
        c.workspace = wa.ptr
        c.workspace_bytes = wa.tensor.numel() * wa.tensor.element_size() if wa.tensor is not None else 0
        parts.append(wa)
    same_device(*parts)
    check(lib().attnc_attention_cascade(att._h, ctypes.byref(c), ctypes.c_void_p(_stream(stream, qa))))
    return output
