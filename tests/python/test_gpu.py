"""The Python package on a GPU with torch: prefill and paged decode against a float64 torch
reference, outputs poisoned first; last_choice(); stream argument. Skips without torch + CUDA."""
import itertools
import math
import os
import sys
import tempfile
import unittest

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


if __name__ == "__main__":
    unittest.main()
