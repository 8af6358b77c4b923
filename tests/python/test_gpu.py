"""The Python package on a GPU with torch: prefill and paged decode against a float64 torch
reference, outputs poisoned first; last_choice(); stream argument. Skips without torch + CUDA."""
import itertools
import math
import os
import sys
import tempfile
import unittest

if os.environ.get("ATTNC_TEST_INSTALLED") != "1":  # else the installed package
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import attnc  # noqa: E402

try:
    import torch
    HAVE_GPU = torch.cuda.is_available()
except ImportError:
    torch, HAVE_GPU = None, False

SPEC = """version: 1
name: py-gpu
head_dim: 128
num_q_heads: 8
num_kv_heads: 2
dtype: bf16
kv_cache: {dtype: same, layout: NHD, page_size: 16}
mask: causal
lse: {layout: head_major, base: e}
kernels: [prefill, decode]
"""


def reference(q, k, v, lq, lk, scale):
    """Causal (bottom-right), GQA, float64: q [sum lq, Hq, D], k/v [sum lk, Hkv, D] -> out, lse [Hq, total_q]."""
    hq, hkv = q.shape[1], k.shape[1]
    outs, lses = [], []
    oq = ok = 0
    for a, b in zip(lq, lk):
        qi = q[oq:oq + a].double()
        ki = k[ok:ok + b].double().repeat_interleave(hq // hkv, dim=1)
        vi = v[ok:ok + b].double().repeat_interleave(hq // hkv, dim=1)
        s = torch.einsum("qhd,khd->hqk", qi, ki) * scale
        rows = torch.arange(a, device=q.device)[:, None]
        cols = torch.arange(b, device=q.device)[None, :]
        s = s.masked_fill(cols > rows + (b - a), float("-inf"))
        lses.append(torch.logsumexp(s, dim=-1))
        outs.append(torch.einsum("hqk,khd->qhd", torch.softmax(s, dim=-1), vi))
        oq, ok = oq + a, ok + b
    return torch.cat(outs), torch.cat(lses, dim=1)


@unittest.skipUnless(HAVE_GPU, "needs torch with CUDA")
class Gpu(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.att = attnc.Attention(SPEC, db=os.path.join(cls.tmp.name, "attnc.db"))
        cls.att.reserve(batch=8, max_seqlen_k=4096)

    @classmethod
    def tearDownClass(cls):
        cls.att.close()
        cls.tmp.cleanup()

    def test_prefill(self):
        lq, lk = [1, 37, 200], [5, 37, 300]
        dev = torch.device("cuda")
        q = torch.randn(sum(lq), 8, 128, device=dev, dtype=torch.bfloat16)
        k = torch.randn(sum(lk), 2, 128, device=dev, dtype=torch.bfloat16)
        v = torch.randn(sum(lk), 2, 128, device=dev, dtype=torch.bfloat16)
        cu_q = torch.tensor([0] + list(itertools.accumulate(lq)), dtype=torch.int32, device=dev)
        cu_k = torch.tensor([0] + list(itertools.accumulate(lk)), dtype=torch.int32, device=dev)
        out = torch.full((sum(lq), 8, 128), float("nan"), device=dev, dtype=torch.bfloat16)
        out, lse = self.att.prefill(q, k, v, cu_q, cu_k, max(lq), max(lk), out=out)
        torch.cuda.synchronize()
        ref, ref_lse = reference(q, k, v, lq, lk, 1 / math.sqrt(128))
        self.assertFalse(torch.isnan(out).any())
        torch.testing.assert_close(out.double(), ref, atol=2e-2, rtol=2e-2)
        torch.testing.assert_close(lse.double(), ref_lse, atol=2e-3, rtol=1e-3)
        self.assertEqual(self.att.last_choice()["bucket"], "b4.q256.k512")

    def test_decode_paged(self):
        dev = torch.device("cuda")
        batch, page, num_blocks = 5, 16, 1400
        lens = [1, 17, 300, 1000, 4000]
        kc = torch.randn(num_blocks, page, 2, 128, device=dev, dtype=torch.bfloat16)
        vc = torch.randn(num_blocks, page, 2, 128, device=dev, dtype=torch.bfloat16)
        max_blocks = (max(lens) + page - 1) // page
        perm = torch.randperm(num_blocks, device=dev).to(torch.int32)
        block_table = perm[:batch * max_blocks].reshape(batch, max_blocks).contiguous()
        seqused = torch.tensor(lens, dtype=torch.int32, device=dev)
        q = torch.randn(batch, 8, 128, device=dev, dtype=torch.bfloat16)
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())  # the inputs were written on the current stream
        with torch.cuda.stream(stream):
            out, lse = self.att.decode(q, kc, vc, block_table, seqused, max(lens))
        stream.synchronize()
        ks = [kc[block_table[i].long()].reshape(-1, 2, 128)[:lens[i]] for i in range(batch)]
        vs = [vc[block_table[i].long()].reshape(-1, 2, 128)[:lens[i]] for i in range(batch)]
        ref, ref_lse = reference(q, torch.cat(ks), torch.cat(vs), [1] * batch, lens, 1 / math.sqrt(128))
        torch.testing.assert_close(out.double(), ref, atol=2e-2, rtol=2e-2)
        torch.testing.assert_close(lse.double(), ref_lse, atol=2e-3, rtol=1e-3)
        choice = self.att.last_choice()
        self.assertEqual(choice["bucket"], "b8.q1.k4096")
        self.assertIn(choice["origin"], ("heuristic", "tuned"))

    def test_dtype_and_shape_errors(self):
        dev = torch.device("cuda")
        q = torch.randn(4, 8, 128, device=dev, dtype=torch.float16)
        kc = torch.randn(10, 16, 2, 128, device=dev, dtype=torch.bfloat16)
        bt = torch.zeros(4, 2, dtype=torch.int32, device=dev)
        su = torch.ones(4, dtype=torch.int32, device=dev)
        with self.assertRaises(TypeError) as cm:
            self.att.decode(q, kc, kc, bt, su, 16)
        self.assertIn("q must be bfloat16, got float16", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            self.att.decode(q.to(torch.bfloat16)[:, :4], kc, kc, bt, su, 16)
        self.assertIn("q: dim 1 (q heads) is 4, the spec needs 8", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            self.att.decode(q.to(torch.bfloat16).cpu(), kc, kc, bt, su, 16)
        self.assertIn("q must be a CUDA tensor", str(cm.exception))
        with self.assertRaises(TypeError) as cm:
            self.att.decode(q.to(torch.bfloat16), kc, kc, bt.long(), su, 16)
        self.assertIn("block_table must be int32, got int64", str(cm.exception))

    def test_forced_splits_fit_after_reserve(self):
        """reserve(32, 8192) then num_splits=8 once failed: 'needs a workspace of 865280 bytes, got 648960'."""
        dev = torch.device("cuda")
        with attnc.Attention(SPEC, db=os.path.join(self.tmp.name, "attnc.db")) as att:
            att.reserve(batch=32, max_seqlen_k=8192)
            batch, page, lens = 32, 16, [8192] * 2 + [100] * 30
            max_blocks = 8192 // page
            kc = torch.randn(batch * max_blocks, page, 2, 128, device=dev, dtype=torch.bfloat16)
            vc = torch.randn_like(kc)
            bt = torch.arange(batch * max_blocks, dtype=torch.int32, device=dev).reshape(batch, max_blocks)
            su = torch.tensor(lens, dtype=torch.int32, device=dev)
            q = torch.randn(batch, 8, 128, device=dev, dtype=torch.bfloat16)
            base, _ = att.decode(q, kc, vc, bt, su, 8192, num_splits=1)
            for n in (8, 64, 128):
                out, _ = att.decode(q, kc, vc, bt, su, 8192, num_splits=n)
                torch.testing.assert_close(out, base, atol=2e-2, rtol=2e-2, msg=f"num_splits {n}")

    def test_merge_with_infinite_lse_rows(self):
        dev = torch.device("cuda")
        T, H, D = 37, 8, 128
        po, so = (torch.randn(T, H, D, device=dev, dtype=torch.bfloat16) for _ in range(2))
        pl, sl = (torch.randn(H, T, device=dev) * 3 for _ in range(2))
        pl[:, 0] = float("inf")    # FlashAttention-2's empty row counts as -inf: the suffix alone
        pl[:, 1] = float("-inf")
        sl[:, 1] = float("-inf")   # both empty: 0, and -inf
        sl[:, 2] = float("-inf")
        out = torch.full_like(po, float("nan"))
        out_lse = torch.full_like(pl, float("nan"))
        self.att.merge(out, po, pl, so, sl, output_lse=out_lse)
        torch.cuda.synchronize()
        p = torch.where(torch.isposinf(pl), torch.full_like(pl, float("-inf")), pl).double()
        s = sl.double()
        m = torch.maximum(p, s)
        m = torch.where(torch.isneginf(m), torch.zeros_like(m), m)
        wp, ws = torch.exp(p - m), torch.exp(s - m)
        tot = wp + ws
        ref = (po.double() * (wp / tot).T[..., None] + so.double() * (ws / tot).T[..., None])
        ref = torch.nan_to_num(ref, nan=0.0)
        torch.testing.assert_close(out.double(), ref, atol=2e-2, rtol=2e-2)
        ref_lse = torch.log(tot) + m
        torch.testing.assert_close(out_lse[:, 2:].double(), ref_lse[:, 2:], atol=1e-4, rtol=1e-4)
        self.assertTrue(torch.isneginf(out_lse[:, 1]).all())

    def test_cache_write_skips_negative_slots(self):
        dev = torch.device("cuda")
        nb, bs, T = 64, 16, 40
        kc = torch.zeros(nb, bs, 2, 128, device=dev, dtype=torch.bfloat16)
        vc = torch.zeros_like(kc)
        key = torch.randn(T + 3, 2, 128, device=dev, dtype=torch.bfloat16)  # padded rows past slot_mapping
        value = torch.randn_like(key)
        slots = torch.randperm(nb * bs, device=dev)[:T]
        slots[5] = -1
        self.att.cache_write(key, value, kc, vc, slots, check_slots=True)
        torch.cuda.synchronize()
        flat_k, flat_v = kc.reshape(-1, 2, 128), vc.reshape(-1, 2, 128)
        keep = slots >= 0
        self.assertTrue(torch.equal(flat_k[slots[keep]], key[:T][keep]))
        self.assertTrue(torch.equal(flat_v[slots[keep]], value[:T][keep]))
        self.assertEqual(int((flat_k != 0).any(-1).any(-1).sum()), int(keep.sum()))

    def test_cache_write_fp8(self):
        dev = torch.device("cuda")
        spec = SPEC.replace("dtype: same", "dtype: fp8_e4m3")
        with attnc.Attention(spec, db=os.path.join(self.tmp.name, "attnc.db")) as att:
            nb, bs, T = 16, 16, 20
            kc = torch.zeros(nb, bs, 2, 128, device=dev, dtype=torch.float8_e4m3fn)
            vc = torch.zeros_like(kc)
            key = torch.randn(T, 2, 128, device=dev, dtype=torch.bfloat16)
            value = torch.randn_like(key)
            k_scale = torch.tensor([0.5], device=dev)
            v_scale = torch.tensor([2.0], device=dev)
            slots = torch.randperm(nb * bs, device=dev)[:T]
            att.cache_write(key, value, kc, vc, slots, k_scale=k_scale, v_scale=v_scale)
            torch.cuda.synchronize()
            got_k = kc.reshape(-1, 2, 128)[slots].float()
            got_v = vc.reshape(-1, 2, 128)[slots].float()
            # within one e4m3 step of round-to-nearest (x / scale vs x * (1 / scale))
            torch.testing.assert_close(got_k, (key.float() / 0.5).to(torch.float8_e4m3fn).float(), rtol=0.07, atol=2e-3)
            torch.testing.assert_close(got_v, (value.float() / 2.0).to(torch.float8_e4m3fn).float(), rtol=0.07, atol=2e-3)

    def test_fp8_cache_write_then_decode_and_prefill(self):
        """reshape_and_cache_flash stores fp8(x / scale); decode and paged prefill read it back with the
        per-tensor scales, then with FlashAttention-3 descales [batch, Hkv] (an .expand() and a strided
        view), against float64 attention over the dequantised cache."""
        dev = torch.device("cuda")
        for kv_dtype, tdt in (("fp8_e4m3", torch.float8_e4m3fn), ("fp8_e5m2", torch.float8_e5m2)):
            spec = SPEC.replace("dtype: same", f"dtype: {kv_dtype}").replace("[prefill, decode]",
                                                                            "[prefill, decode, cache_write]")
            with attnc.Attention(spec, db=os.path.join(self.tmp.name, "attnc.db")) as att:
                att.reserve(batch=4, max_seqlen_k=2048)
                page, lens = 16, [1, 33, 700, 2000]
                batch, max_blocks = len(lens), (max(lens) + page - 1) // page
                nb = batch * max_blocks + 7
                kc = torch.full((nb, page, 2, 128), float("nan"), device=dev).to(tdt)  # poisoned
                vc = kc.clone()
                bt = torch.randperm(nb, device=dev)[:batch * max_blocks].to(torch.int32).reshape(batch, max_blocks)
                slots = torch.cat([bt[i].long().repeat_interleave(page)[:n] * page + torch.arange(n, device=dev) % page
                                   for i, n in enumerate(lens)])
                key = torch.randn(sum(lens), 2, 128, device=dev, dtype=torch.bfloat16)
                value = torch.randn_like(key)
                k_scale, v_scale = torch.tensor([0.02], device=dev), torch.tensor([0.05], device=dev)
                att.cache_write(key, value, kc, vc, slots, k_scale=k_scale, v_scale=v_scale)
                su = torch.tensor(lens, dtype=torch.int32, device=dev)
                k_desc = (torch.rand(batch, 2, device=dev) + 0.5) * 0.02
                v_desc_full = (torch.rand(batch, 5, device=dev) + 0.5) * 0.05
                v_desc = v_desc_full[:, 1:5:2]  # [batch, 2] with strides (5, 2)

                def dequant(cache, factor):  # factor [batch, Hkv] -> the requests' K or V rows
                    return torch.cat([cache[bt[i].long()].reshape(-1, 2, 128)[:n].double() * factor[i][None, :, None]
                                      for i, n in enumerate(lens)])

                q = torch.randn(batch, 8, 128, device=dev, dtype=torch.bfloat16)
                runs = (("scale", dict(k_scale=k_scale, v_scale=v_scale), k_scale.expand(batch, 2), v_scale.expand(batch, 2)),
                        ("descale", dict(k_descale=k_scale.expand(batch, 2), v_descale=v_desc), k_scale.expand(batch, 2), v_desc),
                        ("both", dict(k_scale=k_scale, v_scale=v_scale, k_descale=k_desc / 0.02, v_descale=v_desc / 0.05),
                         k_desc, v_desc))
                for name, kw, kf, vf in runs:
                    k_ref, v_ref = dequant(kc, kf.double()), dequant(vc, vf.double())
                    out, lse = att.decode(q, kc, vc, bt, su, max(lens), **kw)
                    ref, ref_lse = reference(q, k_ref, v_ref, [1] * batch, lens, 1 / math.sqrt(128))
                    msg = f"{kv_dtype} decode {name}"
                    torch.testing.assert_close(out.double(), ref, atol=2e-2, rtol=2e-2, msg=msg)
                    torch.testing.assert_close(lse.double(), ref_lse, atol=2e-3, rtol=1e-3, msg=msg)
                    lq = [1, 20, 64, 3]
                    qp = torch.randn(sum(lq), 8, 128, device=dev, dtype=torch.bfloat16)
                    cu_q = torch.tensor([0] + list(itertools.accumulate(lq)), dtype=torch.int32, device=dev)
                    out, lse = att.prefill_paged(qp, kc, vc, cu_q, bt, su, max(lq), max(lens), **kw)
                    ref, ref_lse = reference(qp, k_ref, v_ref, lq, lens, 1 / math.sqrt(128))
                    msg = f"{kv_dtype} prefill_paged {name}"
                    torch.testing.assert_close(out.double(), ref, atol=2e-2, rtol=2e-2, msg=msg)
                    torch.testing.assert_close(lse.double(), ref_lse, atol=2e-3, rtol=1e-3, msg=msg)
                # the dequantised cache is what cache_write stored: x / scale, rounded, times scale
                k_rows = dequant(kc, k_scale.expand(batch, 2).double())
                torch.testing.assert_close(k_rows, key.double(), atol=0.02 * 0.07 * 8, rtol=0.13)


if __name__ == "__main__":
    unittest.main()
