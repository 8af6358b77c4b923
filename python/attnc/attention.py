"""attnc.Attention: one spec's attention layer, dispatched per call by libattnc."""
import ctypes
import json
import os

from . import _capi, _ops
from ._capi import Call, Options, Selection, check, lib, new_struct
from ._tensors import TORCH_DTYPES, arg, expect_dim, need, same_device

_INT32 = ("int32",)
_F32 = ("float32",)
_FP8_CACHE = _ops._FP8  # kv_cache_dtype -> the torch dtypes an fp8 cache may have


def _torch():
    try:
        import torch
        return torch
    except ImportError:
        return None


class Attention:
    """Attention(spec, db=None, use_tuning=True, no_jit=None, background_compile=False, device=0,
    device_info=None)

    spec: a YAML file path or the YAML text. db: None = the default cache, "none" = memory only,
    else a database path. no_jit: None = $ATTNC_NO_JIT. device_info: describe the GPU instead of
    asking the driver ({"name", "arch", "sm_count", "driver_version"}): select() and prepare() then
    work without a GPU.
    """

    def __init__(self, spec, db=None, use_tuning=True, no_jit=None, background_compile=False, device=0,
                 device_info=None):
        L = lib()
        o = new_struct(Options, L.attnc_options_init)
        self._keep = []  # bytes the options point at, alive while creating
        if db is not None:
            o.db = self._bytes(os.fspath(db))
        o.device = int(device)
        o.use_tuning = 1 if use_tuning else 0
        o.no_jit = -1 if no_jit is None else (1 if no_jit else 0)
        o.background_compile = 1 if background_compile else 0
        if device_info is not None:
            o.device_name = self._bytes(device_info["name"])
            o.device_arch = self._bytes(device_info["arch"])
            o.device_sm_count = int(device_info["sm_count"])
            o.device_driver_version = int(device_info.get("driver_version", 0))
        self._h = ctypes.c_void_p()
        text = os.fspath(spec) if isinstance(spec, os.PathLike) else spec
        if not isinstance(text, str):
            raise TypeError(f"spec: expected a path or YAML text, got {type(spec).__name__}")
        if "\n" not in text and (os.path.exists(text) or text.endswith((".yaml", ".yml"))):
            check(L.attnc_attention_create_from_file(text.encode(), ctypes.byref(o), ctypes.byref(self._h)))
        else:
            check(L.attnc_attention_create_from_yaml(text.encode(), ctypes.byref(o), ctypes.byref(self._h)))
        self._keep = []
        buf = ctypes.create_string_buffer(4096)
        check(L.attnc_attention_spec_json(self._h, buf, len(buf)))
        self.spec = json.loads(buf.value.decode())
        self._last = None

    def _bytes(self, s):
        b = s.encode()
        self._keep.append(b)
        return b

    def close(self):
        if getattr(self, "_h", None) and self._h.value:
            lib().attnc_attention_destroy(self._h)
            self._h = ctypes.c_void_p()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # --- selection, workspace, warming

    @staticmethod
    def _kind(kind):
        if kind not in _capi.KINDS:
            raise ValueError(f"kind {kind!r}: expected one of {', '.join(_capi.KINDS)}")
        return _capi.KINDS[kind]

    def select(self, kind, batch, max_seqlen_q, max_seqlen_k):
        """What a call of this shape uses: {'config': {...}, 'num_splits', 'origin', 'bucket', 'entry', ...}."""
        buf = ctypes.create_string_buffer(2048)
        check(lib().attnc_attention_select(self._h, self._kind(kind), int(batch), int(max_seqlen_q),
                                           int(max_seqlen_k), None, buf, len(buf)))
        return json.loads(buf.value.decode())

    def last_choice(self):
        """select() for the shape of the last prefill/decode call (None before any)."""
        return None if self._last is None else self.select(*self._last)

    def reserve(self, batch=None, max_seqlen_k=None, max_seqlen_q=1, kind="decode", bytes=None, max_num_splits=0):
        """Sizes the workspace for every call of `kind` up to this shape (or to `bytes`): split-KV
        partials at the dispatcher's split count or any num_splits a call forces (max_num_splits > 0
        covers forced counts only up to it: less memory), and for an int8_qkv layer's prefill
        (kind="prefill", batch x max_seqlen_k keys; "prefill_paged", batch x max_seqlen_k rounded up
        to the key tile) V widened to fp16 once per call (v_prewiden);
        without it that prefill runs on the kernel that widens V per query block (slower, same
        result). The workspace keeps the largest size reserved; call it once per kind."""
        if bytes is None:
            need("reserve: batch", batch, "(or bytes=)")
            need("reserve: max_seqlen_k", max_seqlen_k, "(or bytes=)")
            bytes = self.workspace_needed(batch, max_seqlen_k, max_seqlen_q, kind, max_num_splits)
        check(lib().attnc_attention_reserve_bytes(self._h, int(bytes)))

    def workspace_needed(self, batch, max_seqlen_k, max_seqlen_q=1, kind="decode", max_num_splits=0):
        n = ctypes.c_size_t()
        check(lib().attnc_attention_workspace_needed_splits(self._h, self._kind(kind), int(batch), int(max_seqlen_q),
                                                            int(max_seqlen_k), int(max_num_splits),
                                                            ctypes.byref(n)))
        return n.value

    # --- ops of the same layer (attnc/_ops.py)

    def merge(self, output, prefix_output, prefix_lse, suffix_output, suffix_lse, output_lse=None, stream=None,
              lse_base=None):
        """vLLM's merge_attn_states into `output`; see attnc._ops.merge."""
        return _ops.merge(self, output, prefix_output, prefix_lse, suffix_output, suffix_lse, output_lse, stream,
                          lse_base)

    def lse_correct(self, output, partial, lses, rank, output_lse=None, stream=None, lse_base=None):
        """Decode context parallelism's LSE correction into `output`; see attnc._ops.lse_correct."""
        return _ops.lse_correct(self, output, partial, lses, rank, output_lse, stream, lse_base)

    def dcp_context_yaml(self, world_size):
        """The spec (YAML) of the layer a decode context parallel rank runs over its shard, this
        layer being the rank's own: world_size times the query heads, no mask, the LSE returned
        (docs/dcp.md). Raises AttncError (not supported) for ALiBi, windows, sinks, block sparsity."""
        buf = ctypes.create_string_buffer(16384)
        check(lib().attnc_attention_dcp_context_yaml(self._h, int(world_size), buf, len(buf)))
        return buf.value.decode()

    def cache_write(self, key, value, key_cache, value_cache, slot_mapping, k_scale=None, v_scale=None, stream=None,
                    check_slots=False):
        """vLLM's reshape_and_cache_flash into the paged caches; see attnc._ops.cache_write."""
        _ops.cache_write(self, key, value, key_cache, value_cache, slot_mapping, k_scale, v_scale, stream, check_slots)

    def cascade(self, output, query, key_cache, value_cache, cu_query_lens, max_query_len, cu_prefix_query_lens,
                prefix_kv_lens, suffix_kv_lens, block_table, common_prefix_len, **kw):
        """vLLM's cascade_attention (shared-prefix split) into `output`; see attnc._ops.cascade."""
        return _ops.cascade(self, output, query, key_cache, value_cache, cu_query_lens, max_query_len,
                            cu_prefix_query_lens, prefix_kv_lens, suffix_kv_lens, block_table, common_prefix_len,
                            **kw)

    def cascade_workspace_needed(self, num_tokens):
        n = ctypes.c_size_t()
        check(lib().attnc_attention_cascade_workspace_needed(self._h, int(num_tokens), ctypes.byref(n)))
        return n.value

    def prepare(self, kind, batch, max_seqlen_q, max_seqlen_k):
        """Builds the kernel a call of this shape uses into the cache (no GPU needed); returns
        'memory', 'cache' or 'compiled'."""
        o = ctypes.c_int()
        check(lib().attnc_attention_prepare(self._h, self._kind(kind), int(batch), int(max_seqlen_q),
                                            int(max_seqlen_k), ctypes.byref(o)))
        return ["memory", "cache", "compiled"][o.value]

    def wait_background(self):
        check(lib().attnc_attention_wait_background(self._h))

    def warnings(self):
        return lib().attnc_attention_warnings(self._h).decode()

    # --- calls

    def prefill(self, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, out=None, lse=None,
                stream=None, softmax_scale=None, **extra):
        """Contiguous varlen prefill: q [total_q, Hq, D], k/v [total_k, Hkv, D], cu_seqlens int32
        [batch + 1]. Returns out (and lse when the spec has one). Raw pointers for k and v need
        total_k=N (their rows): prefill_sm90 reads them through TMA tensor maps."""
        c, qa = self._start("prefill", q, extra)
        ka = arg("k", k, "[total_k, Hkv, D]", self._dtypes())
        va = arg("v", v, "[total_k, Hkv, Dv]", self._dtypes())
        expect_dim("k", ka, 1, self.spec["num_kv_heads"], "kv heads")
        expect_dim("k", ka, 2, self.spec["head_dim"], "head dim")
        expect_dim("v", va, 1, self.spec["num_kv_heads"], "kv heads")
        expect_dim("v", va, 2, self.spec["head_dim_v"], "head dim v")
        c.k, c.v = ka.ptr, va.ptr
        c.total_k = ka.shape[0] if ka.shape else int(extra.pop("total_k", -1))
        if va.shape and ka.shape and va.shape[0] != ka.shape[0]:
            raise ValueError(f"k and v must have the same rows (total_k): {ka.shape[0]} and {va.shape[0]}")
        extra.pop("total_k", None)
        if ka.strides:
            c.k_row_stride, c.k_head_stride = ka.strides[0], ka.strides[1]
        if va.strides:
            c.v_row_stride, c.v_head_stride = va.strides[0], va.strides[1]
        cq = self._seqlens(c, "cu_seqlens_q", cu_seqlens_q, extra)
        ck = arg("cu_seqlens_k", cu_seqlens_k, "[batch + 1]", _INT32)
        c.cu_seqlens_q, c.cu_seqlens_k = cq.ptr, ck.ptr
        c.max_seqlen_q, c.max_seqlen_k = int(max_seqlen_q), int(max_seqlen_k)
        return self._finish(c, qa, [ka, va, cq, ck], out, lse, stream, softmax_scale, extra)

    def prefill_paged(self, q, k_cache, v_cache, cu_seqlens_q, block_table, seqused_k, max_seqlen_q, max_seqlen_k,
                      out=None, lse=None, stream=None, softmax_scale=None, **extra):
        """Prefill over a paged cache: q [total_q, Hq, D], caches [num_blocks, page_size, Hkv, D]
        (vLLM; other layouts as strided views), block_table int32 [batch, max_blocks], seqused_k
        int32 [batch]."""
        c, qa = self._start("prefill_paged", q, extra)
        parts = self._paged(c, k_cache, v_cache, block_table, seqused_k, extra)
        cq = self._seqlens(c, "cu_seqlens_q", cu_seqlens_q, extra)
        c.cu_seqlens_q = cq.ptr
        c.max_seqlen_q, c.max_seqlen_k = int(max_seqlen_q), int(max_seqlen_k)
        return self._finish(c, qa, parts + [cq], out, lse, stream, softmax_scale, extra)

    def decode(self, q, k_cache, v_cache, block_table, seqused_k, max_seqlen_k, out=None, num_splits=None,
               stream=None, softmax_scale=None, cu_seqlens_q=None, max_seqlen_q=None, **extra):
        """Decode over a paged cache: q [batch, Hq, D] (one token per request; or [total_q, Hq, D]
        with cu_seqlens_q and max_seqlen_q), caches [num_blocks, page_size, Hkv, D], block_table int32
        [batch, max_blocks], seqused_k int32 [batch] (context lengths). num_splits None: the
        dispatcher's choice; seqlen_k_sum= (host int, the context lengths summed) lets it balance a
        ragged batch. fp8 caches (spec kv_cache.dtype fp8_*; float8 or uint8 tensors) take
        k_scale/v_scale [1] and/or k_descale/v_descale [batch, Hkv] (also for prefill_paged)."""
        c, qa = self._start("decode", q, extra)
        parts = self._paged(c, k_cache, v_cache, block_table, seqused_k, extra)
        self._decode_lengths(c, parts, cu_seqlens_q, max_seqlen_q, max_seqlen_k, num_splits, extra)
        return self._finish(c, qa, parts, out, lse=extra.pop("lse", None), stream=stream,
                            softmax_scale=softmax_scale, extra=extra)

    def mla_decode(self, q, kv_cache, block_table, seqused_k, max_seqlen_k, softmax_scale, q_pe=None, out=None,
                   lse=None, num_splits=None, stream=None, cu_seqlens_q=None, max_seqlen_q=None, **extra):
        """MLA absorbed decode, the decode of an `mla:` spec (attention-semantics.md §7.3): q
        [total_q, Hq, 576], or q_nope [total_q, Hq, 512] with q_pe [total_q, Hq, 64]; kv_cache
        [num_blocks, page_size, 576] latent rows (V is the first 512 columns of each; page_size a
        multiple of 64); block_table int32 [batch, max_blocks], seqused_k int32 [batch]. softmax_scale
        is the layer's (required: 1/sqrt(576) is not MLA's). An fp8 cache (spec kv_cache.dtype fp8_*;
        float8 or uint8 tensor) takes k_scale [1] and/or k_descale [batch, 1]: one latent cache, one
        scale for K and V (vLLM's layer._k_scale). Returns out [total_q, Hq, 512] (and lse)."""
        c, qa = self._start("decode", q, extra, head_dim=512 if q_pe is not None else 576)
        parts = []
        if q_pe is not None:
            pa = arg("q_pe", q_pe, "[total_q, Hq, 64]", self._dtypes())
            expect_dim("q_pe", pa, 2, 64, "rope dim")
            c.q_pe = pa.ptr
            if pa.strides:
                c.q_pe_row_stride, c.q_pe_head_stride = pa.strides[0], pa.strides[1]
            parts.append(pa)
        ka = arg("kv_cache", kv_cache, "[num_blocks, page_size, 576]",
                 _FP8_CACHE.get(self.spec["kv_cache_dtype"], self._dtypes()))
        expect_dim("kv_cache", ka, 2, 576, "latent row")
        c.k = ka.ptr
        strides = ka.strides or need("kv_strides", extra.pop("kv_strides", None), "(block, row) when kv_cache is a pointer")
        c.k_block_stride, c.k_row_stride, c.k_head_stride = strides[0], strides[1], 576
        c.num_blocks = ka.shape[0] if ka.shape else int(need("num_blocks", extra.pop("num_blocks", None),
                                                             "when kv_cache is a pointer"))
        c.page_size = ka.shape[1] if ka.shape else int(extra.pop("page_size", self.spec["page_size"]))
        parts += [ka] + self._page_table(c, block_table, seqused_k, extra)
        parts += self._fp8_scales(c, extra, kv_heads=1)  # after the page table: k_descale is [batch, 1]
        self._decode_lengths(c, parts, cu_seqlens_q, max_seqlen_q, max_seqlen_k, num_splits, extra)
        return self._finish(c, qa, parts, out, lse, stream, softmax_scale, extra, head_dim_v=512)

    # --- pieces

    def _dtypes(self):
        return (TORCH_DTYPES[self.spec["dtype"]],)

    def _start(self, kind, q, extra, head_dim=None):
        c = new_struct(Call, lib().attnc_call_init)
        c.kind = _capi.KINDS[kind]
        qa = arg("q", q, "[total_q, Hq, D]", self._dtypes())
        expect_dim("q", qa, 1, self.spec["num_q_heads"], "q heads")
        expect_dim("q", qa, 2, head_dim or self.spec["head_dim"], "head dim")
        c.q = qa.ptr
        if qa.strides:
            c.q_row_stride, c.q_head_stride = qa.strides[0], qa.strides[1]
            c.dtype = _capi.DTYPES[self.spec["dtype"]]
        c.total_q = qa.shape[0] if qa.shape else int(need("total_q", extra.pop("total_q", None), "when q is a pointer"))
        extra.pop("total_q", None)
        return c, qa

    def _decode_lengths(self, c, parts, cu_seqlens_q, max_seqlen_q, max_seqlen_k, num_splits, extra):
        """Decode's query lengths (one token per request without cu_seqlens_q), KV bound and splits."""
        if cu_seqlens_q is not None:
            cq = self._seqlens(c, "cu_seqlens_q", cu_seqlens_q, extra)
            c.cu_seqlens_q = cq.ptr
            c.max_seqlen_q = int(need("max_seqlen_q", max_seqlen_q, "with cu_seqlens_q"))
            parts.append(cq)
        else:
            c.max_seqlen_q = 1
        c.max_seqlen_k = int(max_seqlen_k)
        # seqlen_k_sum: the KV lengths summed, when the host knows them (a ragged batch's split count).
        c.seqlen_k_sum = int(extra.pop("seqlen_k_sum", 0) or 0)
        if num_splits is not None:
            c.num_splits = int(num_splits)

    def _seqlens(self, c, name, x, extra):
        a = arg(name, x, "[batch + 1]", _INT32)
        c.batch = a.shape[0] - 1 if a.shape else int(need("batch", extra.pop("batch", None), f"when {name} is a pointer"))
        return a

    def _paged(self, c, k_cache, v_cache, block_table, seqused_k, extra):
        layout = "[num_blocks, page_size, Hkv, D]"
        cache_dt = _FP8_CACHE.get(self.spec["kv_cache_dtype"], self._dtypes())
        ka = arg("k_cache", k_cache, layout, cache_dt)
        va = arg("v_cache", v_cache, layout, cache_dt)
        for name, a, d in (("k_cache", ka, "head_dim"), ("v_cache", va, "head_dim_v")):
            expect_dim(name, a, 2, self.spec["num_kv_heads"], "kv heads")
            expect_dim(name, a, 3, self.spec[d], d.replace("_", " "))
        if ka.shape and va.shape and ka.shape[:2] != va.shape[:2]:
            raise ValueError(f"k_cache and v_cache differ in pages: {ka.shape} vs {va.shape}")
        c.k, c.v = ka.ptr, va.ptr
        for prefix, a in (("k", ka), ("v", va)):
            strides = a.strides or extra.pop(prefix + "_strides", None)  # (block, row, head) for pointers
            need(prefix + "_strides", strides, f"(block, row, head) when {prefix}_cache is a pointer")
            setattr(c, prefix + "_block_stride", strides[0])
            setattr(c, prefix + "_row_stride", strides[1])
            setattr(c, prefix + "_head_stride", strides[2])
        c.num_blocks = ka.shape[0] if ka.shape else int(need("num_blocks", extra.pop("num_blocks", None),
                                                             "when k_cache is a pointer"))
        c.page_size = ka.shape[1] if ka.shape else int(extra.pop("page_size", self.spec["page_size"]))
        parts = [ka, va] + self._page_table(c, block_table, seqused_k, extra)
        return parts + self._fp8_scales(c, extra)  # after the page table: descales are [batch, Hkv]

    def _page_table(self, c, block_table, seqused_k, extra):
        bt = arg("block_table", block_table, "[batch, max_blocks]", _INT32)
        su = arg("seqused_k", seqused_k, "[batch]", _INT32)
        c.block_table, c.seqused_k = bt.ptr, su.ptr
        if bt.shape:
            c.batch, c.max_blocks_per_seq, c.block_table_stride = bt.shape[0], bt.shape[1], bt.strides[0]
            if su.shape and su.shape[0] != bt.shape[0]:
                raise ValueError(f"seqused_k has {su.shape[0]} entries, block_table {bt.shape[0]} rows")
        else:
            c.batch = int(need("batch", extra.pop("batch", None), "when block_table is a pointer"))
            c.max_blocks_per_seq = int(need("max_blocks_per_seq", extra.pop("max_blocks_per_seq", None),
                                            "when block_table is a pointer"))
            c.block_table_stride = int(extra.pop("block_table_stride", c.max_blocks_per_seq))
        extra.pop("batch", None)
        return [bt, su]

    def _fp8_scales(self, c, extra, kv_heads=None):
        """fp8 caches: k_scale/v_scale fp32 [1] (per tensor) and FlashAttention-3's k_descale/v_descale
        fp32 [batch, Hkv] (any strides, e.g. an .expand()), each optional (absent: 1). kv_heads: Hkv
        when it is not the spec's (MLA's one latent head)."""
        names = ("k_scale", "v_scale", "k_descale", "v_descale")
        given = {n: extra.pop(n) for n in names if extra.get(n) is not None}
        for n in names:
            extra.pop(n, None)
        if given and self.spec["kv_cache_dtype"] not in _FP8_CACHE:
            raise ValueError(f"{', '.join(given)} given but the cache holds {self.spec['dtype']} (spec kv_cache.dtype "
                             f"{self.spec['kv_cache_dtype']}); scales dequantise fp8 caches")
        parts = []
        for n, x in given.items():
            descale = n.endswith("descale")
            a = arg(n, x, "[batch, Hkv]" if descale else "[1]", _F32, any_strides=descale)
            if a.shape and not descale and tuple(a.shape) != (1,):
                raise ValueError(f"{n} must be [1] (one per-tensor scale), got {tuple(a.shape)}")
            if a.shape and descale:
                expect_dim(n, a, 0, c.batch, "requests")
                expect_dim(n, a, 1, kv_heads or self.spec["num_kv_heads"], "kv heads")
                setattr(c, n + "_batch_stride", a.strides[0])
                setattr(c, n + "_head_stride", a.strides[1])
            setattr(c, n, a.ptr)
            parts.append(a)
        return parts

    def _finish(self, c, qa, parts, out, lse, stream, softmax_scale, extra, head_dim_v=None):
        torch = _torch() if qa.tensor is not None else None
        hq, dv = self.spec["num_q_heads"], head_dim_v or self.spec["head_dim_v"]
        if out is None:
            if torch is None:
                raise ValueError("out is required when q is a device pointer")
            out = torch.empty((c.total_q, hq, dv), dtype=qa.tensor.dtype, device=qa.tensor.device)
        oa = arg("out", out, "[total_q, Hq, Dv]", self._dtypes())
        expect_dim("out", oa, 0, c.total_q, "tokens")
        expect_dim("out", oa, 1, hq, "q heads")
        expect_dim("out", oa, 2, dv, "head dim v")
        c.o = oa.ptr
        if oa.strides:
            c.o_row_stride, c.o_head_stride = oa.strides[0], oa.strides[1]
        wants_lse = self.spec["lse_layout"] != "none"
        if wants_lse and lse is None:
            if torch is None:
                raise ValueError("lse is required (the spec returns LSE) when q is a device pointer")
            shape = (hq, c.total_q) if self.spec["lse_layout"] == "head_major" else (c.total_q, hq)
            lse = torch.empty(shape, dtype=torch.float32, device=qa.tensor.device)
        la = arg("lse", lse, "[Hq, total_q] or [total_q, Hq]", _F32, required=False)
        if la is not None:
            if la.tensor is not None and not la.tensor.is_contiguous():
                raise ValueError("lse must be contiguous")
            c.lse = la.ptr
        for name in ("alibi_slopes", "sinks"):
            a = arg(name, extra.pop(name, None), "[Hq]" if name == "sinks" else "[Hq] or [batch, Hq]", _F32,
                    required=False)
            if a is not None:
                setattr(c, name, a.ptr)
                parts.append(a)
                if name == "alibi_slopes" and a.shape and len(a.shape) == 2:
                    c.alibi_batch_stride = a.strides[0]
        if "softcap" in extra:
            c.softcap = float(extra.pop("softcap"))
        if "window_left" in extra:
            c.window_left = int(extra.pop("window_left"))
        if "window_right" in extra:
            c.window_right = int(extra.pop("window_right"))
        ws = extra.pop("workspace", None)
        if ws is not None:
            wa = arg("workspace", ws, "[bytes]", None)
            c.workspace = wa.ptr
            c.workspace_bytes = int(extra.pop("workspace_bytes", 0)) or (
                wa.tensor.numel() * wa.tensor.element_size() if wa.tensor is not None else 0)
        if extra:
            raise TypeError(f"unexpected arguments: {', '.join(sorted(extra))}")
        if softmax_scale is not None:
            c.softmax_scale = float(softmax_scale)
        same_device(qa, oa, la, *parts)
        check(lib().attnc_attention_run(self._h, ctypes.byref(c), ctypes.c_void_p(self._stream(stream, qa))))
        kind = [k for k, v in _capi.KINDS.items() if v == c.kind][0]
        self._last = (kind, c.batch, c.max_seqlen_q if c.cu_seqlens_q else 1, c.max_seqlen_k)
        return (out, lse) if wants_lse else out

    @staticmethod
    def _stream(stream, qa):
        if stream is None:
            if qa.tensor is None:
                return 0
            import torch
            return torch.cuda.current_stream(qa.tensor.device).cuda_stream
        if hasattr(stream, "cuda_stream"):
            return stream.cuda_stream
        return int(stream)
