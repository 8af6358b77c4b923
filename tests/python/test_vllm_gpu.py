"""attnc.vllm on a GPU against float64 torch references, through the drop-in functions only.

vLLM's kernel-test grid re-derived from its semantics: paged varlen with head sizes 40, 72, 80,
128, 256, heads (4, 4) and (8, 2), block size 16 in a 32768-block cache (its top block in use),
softcap 0 / 50, window none / 256; decode through flash_attn_varlen_func (max_seqlen_q 1) and
flash_attn_with_kvcache with split-KV forced and managed; ALiBi and sinks; merge_attn_states with
+inf / -inf LSE rows; reshape_and_cache_flash with slot -1 and fp8, and fp8 caches read back through
the attention drop-ins. Then torch.compile
(fullgraph) over the drop-ins, and a decode step captured in a CUDA graph and replayed on fresh
inputs. Outputs are poisoned with NaN first. Skips without torch + CUDA.
"""
import math
import os
import sys
import unittest

if os.environ.get("ATTNC_TEST_INSTALLED") != "1":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from attnc import _memo, _variants, flashinfer, vllm  # noqa: E402

try:
    import torch
    HAVE_GPU = torch.cuda.is_available()
except ImportError:
    torch, HAVE_GPU = None, False

BLOCK, NUM_BLOCKS = 16, 32768
# (query length, KV length) per request: a decode row, chunked-prefill rows, one past the window.
REQUESTS = [(1, 1), (7, 300), (64, 700), (33, 90)]
HEAD_SIZES = (40, 72, 80, 128, 256)
HEADS = ((4, 4), (8, 2))


def reference(q, k, v, lq, lk, scale, causal=True, window=(-1, -1), softcap=0.0, alibi=None, sinks=None):
    """float64 attention of one request: q [lq, Hq, D], k/v [lk, Hkv, D] -> out [lq, Hq, Dv], lse [Hq, lq]."""
    hq, hkv = q.shape[1], k.shape[1]
    qd = q.double()
    kd = k.double().repeat_interleave(hq // hkv, dim=1)
    vd = v.double().repeat_interleave(hq // hkv, dim=1)
    s = torch.einsum("qhd,khd->hqk", qd, kd) * scale
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    i = torch.arange(lq, device=q.device)[:, None] + (lk - lq)  # bottom-right aligned position
    j = torch.arange(lk, device=q.device)[None, :]
    if alibi is not None:
        s = s - alibi.double()[:, None, None] * (i - j).abs()
    left, right = window
    if causal:
        right = 0
    allowed = torch.ones(lq, lk, dtype=torch.bool, device=q.device)
    if right >= 0:
        allowed &= j <= i + right
    if left >= 0:
        allowed &= j >= i - left
    s = s.masked_fill(~allowed, float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    if sinks is not None:
        lse = torch.logaddexp(lse, sinks.double()[:, None].expand_as(lse))
    p = torch.exp(s - lse[..., None]).nan_to_num(0.0)
    return torch.einsum("hqk,khd->qhd", p, vd), lse


class PagedBatch:
    """A paged KV cache of NUM_BLOCKS blocks and a batch of requests laid out in it at random
    blocks, the cache's top block among them."""

    def __init__(self, hq, hkv, d, requests, dtype=torch.bfloat16 if torch else None, num_blocks=NUM_BLOCKS):
        dev = torch.device("cuda")
        self.hq, self.hkv, self.d, self.requests = hq, hkv, d, requests
        self.k_cache = torch.randn(num_blocks, BLOCK, hkv, d, device=dev, dtype=dtype)
        self.v_cache = torch.randn(num_blocks, BLOCK, hkv, d, device=dev, dtype=dtype)
        pages = [(lk + BLOCK - 1) // BLOCK for _, lk in requests]
        width = max(pages) + 1  # a spare column: rows are longer than any request needs
        chosen = torch.randperm(num_blocks - 1, device=dev)[:sum(pages)].to(torch.int32)
        chosen[-1] = num_blocks - 1
        self.block_table = torch.zeros(len(requests), width, dtype=torch.int32, device=dev)
        at = 0
        for r, n in enumerate(pages):
            self.block_table[r, :n] = chosen[at:at + n]
            at += n
        self.seqused_k = torch.tensor([lk for _, lk in requests], dtype=torch.int32, device=dev)
        starts = [0]
        for lq, _ in requests:
            starts.append(starts[-1] + lq)
        self.cu_seqlens_q = torch.tensor(starts, dtype=torch.int32, device=dev)
        self.q = torch.randn(starts[-1], hq, d, device=dev, dtype=dtype)
        self.max_seqlen_q = max(lq for lq, _ in requests)
        self.max_seqlen_k = max(lk for _, lk in requests)

    def kv(self, r):
        lk = int(self.seqused_k[r])
        rows = self.block_table[r].long()
        return (self.k_cache[rows].reshape(-1, self.hkv, self.d)[:lk],
                self.v_cache[rows].reshape(-1, self.hkv, self.d)[:lk])

    def reference(self, **kw):
        outs, lses = [], []
        for r, (lq, _) in enumerate(self.requests):
            k, v = self.kv(r)
            lk = k.shape[0]
            q = self.q[self.cu_seqlens_q[r]:self.cu_seqlens_q[r] + lq]
            o, lse = reference(q, k, v, lq, lk, **kw)
            outs.append(o)
            lses.append(lse)
        return torch.cat(outs), torch.cat(lses, dim=1)

    def varlen(self, out=..., **kw):
        if out is ...:
            out = torch.full((self.q.shape[0], self.hq, self.d), float("nan"), device="cuda", dtype=self.q.dtype)
        return vllm.flash_attn_varlen_func(self.q, self.k_cache, self.v_cache, self.max_seqlen_q, self.cu_seqlens_q,
                                           self.max_seqlen_k, seqused_k=self.seqused_k, block_table=self.block_table,
                                           out=out, **kw)


def close(test, got, want, what, atol=2e-2):
    test.assertFalse(torch.isnan(got).any(), f"{what}: NaN left in the output")
    torch.testing.assert_close(got.double(), want, atol=atol, rtol=2e-2, msg=lambda m: f"{what}: {m}")


@unittest.skipUnless(HAVE_GPU, "needs torch with CUDA")
class VllmGrid(unittest.TestCase):
    def test_varlen_paged_grid(self):
        """40 variants: head size x heads x softcap x window, with LSE."""
        for d in HEAD_SIZES:
            for hq, hkv in HEADS:
                batch = PagedBatch(hq, hkv, d, REQUESTS)
                scale = d ** -0.5
                for cap in (0.0, 50.0):
                    for window in (None, (255, 0)):
                        what = f"d{d} h{hq}/{hkv} softcap {cap} window {window}"
                        out, lse = batch.varlen(softmax_scale=scale, causal=True, window_size=window, softcap=cap,
                                                return_softmax_lse=True)
                        ref, ref_lse = batch.reference(scale=scale, window=window or (-1, -1), softcap=cap)
                        close(self, out, ref, what)
                        torch.testing.assert_close(lse.double(), ref_lse, atol=2e-3, rtol=1e-3,
                                                   msg=lambda m: f"{what} lse: {m}")
                del batch

    def test_decode_split_kv_managed_and_forced(self):
        reqs = [(1, n) for n in (1, 17, 300, 1000, 4000, 5000)]
        batch = PagedBatch(8, 2, 128, reqs)
        ref, ref_lse = batch.reference(scale=128 ** -0.5)
        for splits in (0, 1, 8, 64):
            out, lse = batch.varlen(causal=True, return_softmax_lse=True, num_splits=splits)
            close(self, out, ref, f"decode num_splits {splits}")
            torch.testing.assert_close(lse.double(), ref_lse, atol=2e-3, rtol=1e-3)
        key = [k for k in _variants._variants if k[0] == "attn" and k[2] == 128 and k[11] == ("head_major", "e")
               and k[7] == "causal" and k[4] == 8]
        var = _variants._variants[key[0]]
        self.assertGreater(var.workspace_bytes, 0)
        b, q, k, s = var.covered["decode"]
        self.assertEqual((b, q, k, s), (8, 1, 8192, 64))  # powers of two over the largest call

    def test_repeated_calls_replay_the_checked_call(self):
        """The second call with the same tensors skips the checks (attnc._memo) and reads the new
        contents; after a larger call grows the workspace, the replay takes the new one. Through
        the Python warm path, the C one (attnc._fast) reading torch through its Python API, and
        the C one reading tensors and the stream through torch's C shim (attnc/_torch_shim.py)."""
        try:
            for fast, shim in ((False, False), (True, False), (True, True)):
                with self.subTest(fast=fast, shim=shim):
                    os.environ["ATTNC_NO_TORCH_SHIM"] = "0" if shim else "1"
                    self.assertEqual(_memo.set_fast(fast), fast)
                    self.assertEqual(_memo.shim, (shim, shim))
                    _variants.clear()
                    self.replay_checks()
        finally:
            del os.environ["ATTNC_NO_TORCH_SHIM"]
            _memo.set_fast(True)

    def replay_checks(self):
        small = PagedBatch(8, 2, 64, [(1, n) for n in (40, 900)], num_blocks=512)
        out = torch.empty(2, 8, 64, device="cuda", dtype=torch.bfloat16)
        small.varlen(out=None)  # warm: checked and remembered (out allocated per call)
        before = len(_memo._entries)
        small.q.copy_(torch.randn_like(small.q))
        got = vllm.flash_attn_varlen_func(small.q, small.k_cache, small.v_cache, 1, small.cu_seqlens_q, 900,
                                          seqused_k=small.seqused_k, block_table=small.block_table, causal=True,
                                          out=out)
        got2 = small.varlen(out=None)
        ref, _ = small.reference(scale=0.125)
        close(self, got, ref, "second call")
        close(self, got2, ref, "replayed call, out allocated")
        self.assertEqual(len(_memo._entries), before + 1)  # only the out=out call was new
        big = PagedBatch(8, 2, 64, [(1, 7000)] * 16, num_blocks=8192)
        big.varlen()
        small.q.copy_(torch.randn_like(small.q))
        got3 = small.varlen(out=None)
        close(self, got3, small.reference(scale=0.125)[0], "replay after the workspace grew")

    def test_decode_alibi_sinks_window(self):
        reqs = [(1, n) for n in (5, 260, 1500)]
        batch = PagedBatch(4, 4, 80, reqs)
        slopes = torch.rand(4, device="cuda") * 0.1
        sinks = torch.randn(4, device="cuda")
        out = batch.varlen(causal=True, window_size=(255, 0), alibi_slopes=slopes, s_aux=sinks, softcap=30.0)
        ref, _ = batch.reference(scale=80 ** -0.5, window=(255, 0), softcap=30.0, alibi=slopes, sinks=sinks)
        close(self, out, ref, "decode alibi + sinks + window + softcap")

    def test_with_kvcache(self):
        for sq in (1, 2):
            reqs = [(sq, n) for n in (3, 400, 2000)]
            batch = PagedBatch(8, 2, 128, reqs)
            q = batch.q.view(len(reqs), sq, 8, 128)
            out, lse = vllm.flash_attn_with_kvcache(q, batch.k_cache, batch.v_cache, cache_seqlens=batch.seqused_k,
                                                    block_table=batch.block_table, causal=True,
                                                    return_softmax_lse=True)
            ref, ref_lse = batch.reference(scale=128 ** -0.5)
            self.assertEqual(tuple(out.shape), (3, sq, 8, 128))
            self.assertEqual(tuple(lse.shape), (3, 8, sq))  # FlashAttention's [batch, heads, seqlen_q]
            close(self, out.view(-1, 8, 128), ref, f"with_kvcache seqlen_q {sq}")
            torch.testing.assert_close(lse.double(), ref_lse.view(8, 3, sq).permute(1, 0, 2), atol=2e-3, rtol=1e-3)

    def test_contiguous_prefill(self):
        lq, lk = [5, 64, 1], [5, 80, 9]
        dev = torch.device("cuda")
        q = torch.randn(sum(lq), 8, 64, device=dev, dtype=torch.float16)
        k = torch.randn(sum(lk), 2, 64, device=dev, dtype=torch.float16)
        v = torch.randn(sum(lk), 2, 64, device=dev, dtype=torch.float16)
        cq = torch.tensor([0, 5, 69, 70], dtype=torch.int32, device=dev)
        ck = torch.tensor([0, 5, 85, 94], dtype=torch.int32, device=dev)
        out = vllm.flash_attn_varlen_func(q, k, v, 64, cq, 80, ck, causal=True)
        refs = [reference(q[cq[i]:cq[i + 1]], k[ck[i]:ck[i + 1]], v[ck[i]:ck[i + 1]], lq[i], lk[i], 0.125)[0]
                for i in range(3)]
        close(self, out, torch.cat(refs), "contiguous prefill")

    def test_cascade_attention(self):
        """Requests sharing their first 4 pages: the cascade equals attention over each whole KV.
        As in vLLM, the shared prefix lies before every query token (common_prefix_len <= each
        request's context): the prefix pass is unmasked."""
        reqs = [(1, 300), (7, 300), (64, 700), (33, 120)]
        batch = PagedBatch(8, 2, 128, reqs, num_blocks=2048)
        prefix_pages = 4
        batch.block_table[:, :prefix_pages] = batch.block_table[0, :prefix_pages]
        prefix = prefix_pages * BLOCK
        tokens = batch.q.shape[0]
        out = torch.full_like(batch.q, float("nan"))
        sinks = torch.randn(8, device="cuda")
        vllm.cascade_attention(out, batch.q, batch.k_cache, batch.v_cache, batch.cu_seqlens_q, batch.max_seqlen_q,
                               torch.tensor([0, tokens], dtype=torch.int32, device="cuda"),
                               torch.tensor([prefix], dtype=torch.int32, device="cuda"),
                               batch.seqused_k - prefix, batch.max_seqlen_k, 128 ** -0.5, None, (-1, -1), 30.0,
                               batch.block_table, prefix, s_aux=sinks)
        ref, _ = batch.reference(scale=128 ** -0.5, softcap=30.0, sinks=sinks)
        close(self, out, ref, "cascade")
        with self.assertRaises(NotImplementedError) as cm:
            vllm.cascade_attention(out, batch.q, batch.k_cache, batch.v_cache, batch.cu_seqlens_q, 64, None, None,
                                   None, 700, 0.1, None, (255, 0), 0, batch.block_table, prefix)
        self.assertIn("a sliding window in cascade attention", str(cm.exception))

    def test_foreign_tensors(self):
        """CuPy arrays (DLPack / __cuda_array_interface__) in, torch out; the same checks."""
        try:
            import cupy
        except ImportError:
            self.skipTest("needs cupy")
        q = cupy.random.standard_normal((43, 4, 64)).astype(cupy.float16)
        k = cupy.random.standard_normal((50, 4, 64)).astype(cupy.float16)
        v = cupy.random.standard_normal((50, 4, 64)).astype(cupy.float16)
        cq, ck = cupy.asarray([0, 3, 43], dtype=cupy.int32), cupy.asarray([0, 10, 50], dtype=cupy.int32)
        out = vllm.flash_attn_varlen_func(q, k, v, 40, cq, 40, ck, causal=True)
        tq, tk, tv = (torch.from_dlpack(x) for x in (q, k, v))
        refs = [reference(tq[a:b], tk[c:e], tv[c:e], b - a, e - c, 0.125)[0]
                for a, b, c, e in ((0, 3, 0, 10), (3, 43, 10, 50))]
        close(self, out, torch.cat(refs), "cupy inputs")
        with self.assertRaises(TypeError) as cm:
            vllm.flash_attn_varlen_func(q.astype(cupy.float32), k, v, 40, cq, 40, ck, causal=True)
        self.assertIn("q must be bfloat16 or float16, got float32", str(cm.exception))

    def test_merge_with_infinite_lse_rows(self):
        dev = torch.device("cuda")
        T, H, D = 37, 8, 128
        po, so = (torch.randn(T, H, D, device=dev, dtype=torch.bfloat16) for _ in range(2))
        pl, sl = (torch.randn(H, T, device=dev) * 3 for _ in range(2))
        pl[:, 0] = float("inf")  # FlashAttention-2's empty row: counts as -inf
        pl[:, 1] = sl[:, 1] = float("-inf")
        sl[:, 2] = float("-inf")
        out = torch.full_like(po, float("nan"))
        out_lse = torch.full_like(pl, float("nan"))
        vllm.merge_attn_states(output=out, prefix_output=po, prefix_lse=pl, suffix_output=so, suffix_lse=sl,
                               output_lse=out_lse)
        p = torch.where(torch.isposinf(pl), torch.full_like(pl, float("-inf")), pl).double()
        s = sl.double()
        m = torch.maximum(p, s)
        m = torch.where(torch.isneginf(m), torch.zeros_like(m), m)
        wp, ws = torch.exp(p - m), torch.exp(s - m)
        tot = wp + ws
        ref = (po.double() * (wp / tot).T[..., None] + so.double() * (ws / tot).T[..., None]).nan_to_num(0.0)
        close(self, out, ref, "merge")
        torch.testing.assert_close(out_lse[:, 2:].double(), (torch.log(tot) + m)[:, 2:], atol=1e-4, rtol=1e-4)
        self.assertTrue(torch.isneginf(out_lse[:, 1]).all())
        self.assertTrue((out[1] == 0).all())

    def test_reshape_and_cache_flash(self):
        dev = torch.device("cuda")
        nb, T = 64, 40
        for kv_dtype, cache_dtype in (("auto", torch.bfloat16), ("fp8", torch.float8_e4m3fn)):
            kc = torch.zeros(nb, BLOCK, 2, 128, device=dev, dtype=cache_dtype)
            vc = torch.zeros_like(kc)
            key = torch.randn(T + 3, 2, 128, device=dev, dtype=torch.bfloat16)  # padded past slot_mapping
            value = torch.randn_like(key)
            slots = torch.randperm(nb * BLOCK, device=dev)[:T]
            slots[5] = -1
            k_scale, v_scale = torch.tensor(0.5, device=dev), torch.tensor(2.0, device=dev)  # vLLM's 0-dim scales
            vllm.reshape_and_cache_flash(key, value, kc, vc, slots, kv_dtype, k_scale, v_scale)
            keep = slots >= 0
            got_k = kc.reshape(-1, 2, 128)[slots[keep]]
            got_v = vc.reshape(-1, 2, 128)[slots[keep]]
            if kv_dtype == "auto":  # scales ignored, as vLLM does
                self.assertTrue(torch.equal(got_k, key[:T][keep]))
                self.assertTrue(torch.equal(got_v, value[:T][keep]))
            else:
                want_k = (key[:T][keep].float() / 0.5).to(torch.float8_e4m3fn).float()
                want_v = (value[:T][keep].float() / 2.0).to(torch.float8_e4m3fn).float()
                torch.testing.assert_close(got_k.float(), want_k, rtol=0.07, atol=2e-3)
                torch.testing.assert_close(got_v.float(), want_v, rtol=0.07, atol=2e-3)
            written = (kc.reshape(-1, 2 * 128).float() != 0).any(-1)
            self.assertEqual(int(written.sum()), int(keep.sum()))

    def test_fp8_cache_written_then_read(self):
        """vLLM's fp8 KV path: reshape_and_cache_flash writes fp8 (x / k_scale), then decode, paged
        prefill and with_kvcache read it with k_descale/v_descale = the scales expanded to [batch,
        Hkv], 16-bit queries or fp8 ones with q_descale; the reference reads the dequantised cache."""
        dev = torch.device("cuda")
        for kv_dtype, fp8 in (("fp8", torch.float8_e4m3fn), ("fp8_e5m2", torch.float8_e5m2)):
            for requests in ([(1, n) for n in (1, 300, 2000)], REQUESTS):
                batch = PagedBatch(8, 2, 128, requests, num_blocks=512)
                b = len(requests)
                ks, vs = torch.tensor([0.5], device=dev), torch.tensor([2.0], device=dev)
                kc8 = torch.zeros(batch.k_cache.shape, dtype=fp8, device=dev)
                vc8 = torch.zeros_like(kc8)
                slots = torch.arange(kc8.shape[0] * BLOCK, device=dev)
                vllm.reshape_and_cache_flash(batch.k_cache.view(-1, 2, 128), batch.v_cache.view(-1, 2, 128), kc8, vc8,
                                             slots, kv_dtype, ks, vs)
                batch.k_cache, batch.v_cache = kc8, vc8  # what the drop-ins read
                kd, vd = ks.expand(b, 2), vs.expand(b, 2)  # vLLM's descale views (strides 0)
                out = torch.full(batch.q.shape, float("nan"), device=dev, dtype=torch.bfloat16)
                got = vllm.flash_attn_varlen_func(batch.q, kc8, vc8, batch.max_seqlen_q, batch.cu_seqlens_q,
                                                  batch.max_seqlen_k, seqused_k=batch.seqused_k,
                                                  block_table=batch.block_table, causal=True, out=out,
                                                  q_descale=kd, k_descale=kd, v_descale=vd)
                dequant = PagedBatch.__new__(PagedBatch)
                dequant.__dict__.update(batch.__dict__, k_cache=kc8.float() * 0.5, v_cache=vc8.float() * 2.0)
                ref, _ = dequant.reference(scale=128 ** -0.5)
                what = f"{kv_dtype} cache, max_seqlen_q {batch.max_seqlen_q}"
                close(self, got, ref, what)
                # an fp8 query with q_descale, as vLLM quantises it (exactly a 16-bit value times 0.25)
                qs = torch.tensor([0.25], device=dev)
                q8 = (batch.q.float() / 0.25).to(fp8)
                dequant.q = (q8.float() * 0.25).to(torch.bfloat16)
                got = vllm.flash_attn_varlen_func(q8, kc8, vc8, batch.max_seqlen_q, batch.cu_seqlens_q,
                                                  batch.max_seqlen_k, seqused_k=batch.seqused_k,
                                                  block_table=batch.block_table, causal=True, out=out,
                                                  q_descale=qs.expand(b, 2), k_descale=kd, v_descale=vd)
                close(self, got, dequant.reference(scale=128 ** -0.5)[0], what + ", fp8 q")
                if batch.max_seqlen_q == 1:
                    o = vllm.flash_attn_with_kvcache(batch.q.view(b, 1, 8, 128), kc8, vc8,
                                                     cache_seqlens=batch.seqused_k, block_table=batch.block_table,
                                                     causal=True, k_descale=kd, v_descale=vd)
                    close(self, o.view(b, 8, 128), ref, what + ", with_kvcache")
                with self.assertRaises(ValueError) as cm:
                    vllm.flash_attn_varlen_func(batch.q, kc8, vc8, batch.max_seqlen_q, batch.cu_seqlens_q,
                                                batch.max_seqlen_k, seqused_k=batch.seqused_k,
                                                block_table=batch.block_table, k_descale=kd[:1])
                self.assertIn("k_descale has shape (1, 2), expected (batch, num_kv_heads)", str(cm.exception))


def flashinfer_table(batch, offset=3):
    """FlashInfer's page table for a PagedBatch: indptr starting at `offset` into indices."""
    pages = [(int(n) + BLOCK - 1) // BLOCK for n in batch.seqused_k.tolist()]
    indices = torch.cat([torch.zeros(offset, dtype=torch.int32, device="cuda")]
                        + [batch.block_table[r, :n] for r, n in enumerate(pages)])
    indptr = torch.tensor([offset + sum(pages[:i]) for i in range(len(pages) + 1)], dtype=torch.int32)
    last = torch.tensor([int(n) - (p - 1) * BLOCK for n, p in zip(batch.seqused_k.tolist(), pages)],
                        dtype=torch.int32)
    return indptr, indices, last


@unittest.skipUnless(HAVE_GPU, "needs torch with CUDA")
class FlashInfer(unittest.TestCase):
    def test_decode_wrapper_5d_nhd_cache(self):
        batch = PagedBatch(8, 2, 128, [(1, n) for n in (16, 33, 900, 2000)], num_blocks=1024)
        indptr, indices, last = flashinfer_table(batch)
        w = flashinfer.BatchDecodeWithPagedKVCacheWrapper(torch.empty(64 << 20, dtype=torch.uint8, device="cuda"))
        w.plan(indptr, indices, last, 8, 2, 128, BLOCK, q_data_type=torch.bfloat16, sm_scale=0.1)
        kv = torch.stack([batch.k_cache, batch.v_cache], dim=1)  # [pages, 2, page, Hkv, D]
        out, lse = w.run(batch.q, kv, return_lse=True)
        ref, ref_lse = batch.reference(scale=0.1)
        close(self, out, ref, "flashinfer decode")
        torch.testing.assert_close(lse.double(), ref_lse.T / math.log(2), atol=3e-3, rtol=1e-3)  # [T, H], base 2
        out2 = w.run(batch.q, kv)  # a second call replays the checked one
        close(self, out2, ref, "flashinfer decode, replayed")
        with self.assertRaises(ValueError) as cm:
            w.run(batch.q[:3], kv)
        self.assertIn("q has shape (3, 8, 128), the plan says (4, 8, 128)", str(cm.exception))
        with self.assertRaises(NotImplementedError) as cm:
            w.plan(indptr, indices, last, 8, 2, 128, BLOCK, pos_encoding_mode="ROPE_LLAMA")
        self.assertIn("pos_encoding_mode='ROPE_LLAMA'", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            w.plan(indptr, indices, last + 100, 8, 2, 128, BLOCK)
        self.assertIn("last_page_len[0] = 116; allowed: 1..16", str(cm.exception))

    def test_decode_wrapper_fp8_cache(self):
        """kv_data_type fp8: the cache read with FlashInfer's k_scale (folded into the softmax scale)
        and v_scale (on V), both floats."""
        batch = PagedBatch(8, 2, 128, [(1, n) for n in (16, 900, 2000)], num_blocks=512)
        indptr, indices, last = flashinfer_table(batch)
        kc8, vc8 = batch.k_cache.to(torch.float8_e5m2), batch.v_cache.to(torch.float8_e5m2)
        w = flashinfer.BatchDecodeWithPagedKVCacheWrapper(torch.empty(64 << 20, dtype=torch.uint8, device="cuda"))
        w.plan(indptr, indices, last, 8, 2, 128, BLOCK, q_data_type=torch.bfloat16, kv_data_type=torch.float8_e5m2)
        out = w.run(batch.q, (kc8, vc8), k_scale=0.5, v_scale=2.0)
        batch.k_cache, batch.v_cache = kc8.float() * 0.5, vc8.float() * 2.0
        close(self, out, batch.reference(scale=128 ** -0.5)[0], "flashinfer decode, fp8 e5m2 cache")
        close(self, w.run(batch.q, (kc8, vc8), k_scale=0.5, v_scale=2.0), batch.reference(scale=128 ** -0.5)[0],
              "flashinfer decode, fp8 e5m2 cache, replayed")

    def test_prefill_wrapper_hnd_views(self):
        batch = PagedBatch(8, 2, 128, REQUESTS, num_blocks=2048)
        indptr, indices, last = flashinfer_table(batch, offset=0)
        w = flashinfer.BatchPrefillWithPagedKVCacheWrapper(torch.empty(64 << 20, dtype=torch.uint8, device="cuda"),
                                                           "HND")
        w.plan(batch.cu_seqlens_q.cpu(), indptr, indices, last, 8, 2, 128, BLOCK, causal=True, window_left=255,
               logits_soft_cap=50.0, q_data_type="bfloat16")
        hnd = (batch.k_cache.permute(0, 2, 1, 3), batch.v_cache.permute(0, 2, 1, 3))  # [pages, Hkv, page, D] views
        out = w.run(batch.q, hnd)
        ref, _ = batch.reference(scale=128 ** -0.5, window=(255, 0), softcap=50.0)
        close(self, out, ref, "flashinfer prefill, HND")

    def test_decode_wrapper_cuda_graph_replayed_after_new_plans(self):
        """use_cuda_graph=True: plan() fills the buffers given at construction, run() is captured
        once and replayed after each new plan (other lengths, other pages) on fresh queries."""
        batch = PagedBatch(8, 2, 128, [(1, 4096)] * 4, num_blocks=2048)
        i32 = dict(dtype=torch.int32, device="cuda")
        bufs = torch.empty(5, **i32), torch.empty(1100, **i32), torch.empty(4, **i32)
        w = flashinfer.BatchDecodeWithPagedKVCacheWrapper(torch.empty(64 << 20, dtype=torch.uint8, device="cuda"),
                                                          use_cuda_graph=True, paged_kv_indptr_buffer=bufs[0],
                                                          paged_kv_indices_buffer=bufs[1],
                                                          paged_kv_last_page_len_buffer=bufs[2])
        self.assertTrue(w.is_cuda_graph_enabled)

        def plan(lens):
            batch.seqused_k.copy_(torch.tensor(lens, dtype=torch.int32))
            indptr, indices, last = flashinfer_table(batch, offset=0)
            w.plan(indptr, indices, last, 8, 2, 128, BLOCK, q_data_type=torch.bfloat16)

        plan([20, 700, 3000, 64])
        out = torch.empty(4, 8, 128, device="cuda", dtype=torch.bfloat16)
        kv = (batch.k_cache, batch.v_cache)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            w.run(batch.q, kv, out=out)
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            w.run(batch.q, kv, out=out)
        for step, lens in enumerate(([1, 4096, 17, 2500], [300, 33, 4000, 4096])):
            batch.block_table.copy_(batch.block_table.roll(1, 0))  # other pages for each request
            plan(lens)
            batch.q.copy_(torch.randn_like(batch.q))
            out.fill_(float("nan"))
            graph.replay()
            torch.cuda.synchronize()
            close(self, out, batch.reference(scale=128 ** -0.5)[0], f"flashinfer graph replay {step}")
        with self.assertRaises(ValueError) as cm:
            flashinfer.BatchDecodeWithPagedKVCacheWrapper(torch.empty(1 << 20, dtype=torch.uint8, device="cuda"),
                                                          use_cuda_graph=True)
        self.assertIn("use_cuda_graph=True needs the page-table buffers", str(cm.exception))


def _decode_step(q, k_new, v_new, slots, batch, out):
    """One serving step: write the new tokens, then decode over the cache."""
    vllm.reshape_and_cache_flash(k_new, v_new, batch.k_cache, batch.v_cache, slots, "auto", None, None)
    return vllm.flash_attn_varlen_func(q, batch.k_cache, batch.v_cache, 1, batch.cu_seqlens_q, 4096,
                                       seqused_k=batch.seqused_k, block_table=batch.block_table, causal=True, out=out)


@unittest.skipUnless(HAVE_GPU, "needs torch with CUDA")
class Graphs(unittest.TestCase):
    def fresh_inputs(self, batch, lens):
        """New query, new K/V rows at the last position of each request's length, and the lengths."""
        b = len(lens)
        q = torch.randn(b, 8, 128, device="cuda", dtype=torch.bfloat16)
        k_new, v_new = (torch.randn(b, 2, 128, device="cuda", dtype=torch.bfloat16) for _ in range(2))
        pos = torch.tensor(lens, device="cuda") - 1
        slots = batch.block_table.gather(1, (pos // BLOCK)[:, None].long())[:, 0].long() * BLOCK + pos % BLOCK
        return q, k_new, v_new, slots, torch.tensor(lens, dtype=torch.int32, device="cuda")

    def test_cuda_graph_replays_a_decode_step_on_fresh_inputs(self):
        lens = [20, 700, 3000, 64]
        batch = PagedBatch(8, 2, 128, [(1, 4096)] * 4, num_blocks=4096)
        q, k_new, v_new, slots, su = self.fresh_inputs(batch, lens)
        batch.seqused_k.copy_(su)
        batch.q = q  # the graph's static query: the reference reads it
        out = torch.empty(4, 8, 128, device="cuda", dtype=torch.bfloat16)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):  # warm-up: kernels loaded, workspace sized
            _decode_step(q, k_new, v_new, slots, batch, out)
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            _decode_step(q, k_new, v_new, slots, batch, out)
        for step in range(3):
            lens = [n + 1 + step * 37 for n in lens]
            q2, k2, v2, slots2, su2 = self.fresh_inputs(batch, lens)
            for dst, src in ((q, q2), (k_new, k2), (v_new, v2), (slots, slots2), (batch.seqused_k, su2)):
                dst.copy_(src)
            out.fill_(float("nan"))
            graph.replay()
            torch.cuda.synchronize()
            ref, _ = batch.reference(scale=128 ** -0.5)
            close(self, out, ref, f"replay {step}")
            for r, p in enumerate(pos - 1 for pos in lens):  # the new token is in the cache
                blk = int(batch.block_table[r, p // BLOCK])
                self.assertTrue(torch.equal(batch.k_cache[blk, p % BLOCK], k_new[r]))

    def test_torch_compile_fullgraph(self):
        batch = PagedBatch(8, 2, 128, [(1, 4096)] * 3, num_blocks=2048)
        lens = [33, 1000, 4000]
        q, k_new, v_new, slots, su = self.fresh_inputs(batch, lens)
        batch.seqused_k.copy_(su)
        batch.q = q

        def step(q, k_new, v_new, slots, kc, vc, cu, su, bt):
            vllm.reshape_and_cache_flash(k_new, v_new, kc, vc, slots, "auto", None, None)
            o, lse = vllm.flash_attn_varlen_func(q, kc, vc, 1, cu, 4096, seqused_k=su, block_table=bt, causal=True,
                                                 return_softmax_lse=True)
            merged = torch.empty_like(o)
            vllm.merge_attn_states(merged, o, lse, o * 2, lse)
            return merged, lse.exp()

        compiled = torch.compile(step, fullgraph=True)
        args = (q, k_new, v_new, slots, batch.k_cache, batch.v_cache, batch.cu_seqlens_q, batch.seqused_k,
                batch.block_table)
        got, got_sum = compiled(*args)
        want, want_sum = step(*args)
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(got_sum, want_sum)
        ref, ref_lse = batch.reference(scale=128 ** -0.5)
        close(self, got, ref * 1.5, "compiled step")  # equal LSEs: the mean of o and 2o


if __name__ == "__main__":
    unittest.main()
