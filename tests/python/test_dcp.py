"""Decode context parallelism from Python: the shard arithmetic of attnc.dcp against dealing tokens
one by one and against the library's (attnc_dcp_local_seq_lens), the context layer's spec, the
refusals, lse_correct's argument checks (no GPU needed); and, with two GPUs and torch, the
two-process NCCL test (dcp_two_gpu.py)."""
import ctypes
import os
import subprocess
import sys
import tempfile
import unittest

if os.environ.get("ATTNC_TEST_INSTALLED") != "1":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import attnc  # noqa: E402
from attnc import dcp  # noqa: E402
from attnc._capi import lib  # noqa: E402
from test_cpu import DEVICE, FakeCuda  # noqa: E402

LAYER = """version: 1
name: dcp-layer
head_dim: 64
num_q_heads: 4
num_kv_heads: 1
dtype: bf16
mask: causal
lse: {layout: token_major, base: 2}
kernels: [decode, merge]
"""


class ShardArithmetic(unittest.TestCase):
    def test_dealing_tokens_one_by_one(self):
        for n in (1, 2, 3, 8):
            for inter in (1, 4, 16):
                held = [0] * n
                for t in range(500):
                    r = (t // inter) % n
                    self.assertEqual(dcp.rank_of(t, n, inter), r)
                    self.assertEqual(dcp.local_index(t, n, inter), held[r])
                    self.assertEqual(dcp.global_position(held[r], r, n, inter), t)
                    held[r] += 1
                    for rr in range(n):
                        self.assertEqual(dcp.local_seq_lens(t + 1, n, rr, inter), held[rr], (n, inter, rr, t))
                    self.assertGreaterEqual(dcp.max_local_seq_len(t + 1, n, inter), max(held))

    def test_matches_the_library(self):
        lens = list(range(0, 300, 7)) + [4095, 4096, 4097]
        arr = (ctypes.c_int * len(lens))(*lens)
        for n, inter in ((2, 1), (2, 16), (4, 8), (3, 64)):
            for r in range(n):
                out = (ctypes.c_int * len(lens))()
                self.assertEqual(lib().attnc_dcp_local_seq_lens(n, r, inter, arr, len(lens), out), 0)
                self.assertEqual(list(out), [dcp.local_seq_lens(x, n, r, inter) for x in lens])

    def test_bad_shards_are_named(self):
        with self.assertRaisesRegex(ValueError, "world_size must be >= 1, got 0"):
            dcp.local_seq_lens(5, 0, 0)
        with self.assertRaisesRegex(ValueError, r"rank must be in \[0, world_size = 2\), got 2"):
            dcp.local_seq_lens(5, 2, 2)
        with self.assertRaisesRegex(ValueError, "interleave_size must be >= 1, got 0"):
            dcp.rank_of(5, 2, 0)


class ContextLayer(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.db = os.path.join(self.tmp.name, "attnc.db")

    def tearDown(self):
        self.tmp.cleanup()

    def test_gathered_heads_no_mask_lse_kept(self):
        with attnc.Attention(LAYER, db=self.db, device_info=DEVICE) as layer:
            text = layer.dcp_context_yaml(2)
            with attnc.Attention(text, db=self.db, device_info=DEVICE) as ctx:
                self.assertEqual(ctx.spec["num_q_heads"], 8)
                self.assertEqual(ctx.spec["num_kv_heads"], 1)
                self.assertEqual(ctx.spec["lse_layout"], "token_major")
                self.assertEqual(ctx.spec["lse_base"], "2")
                self.assertEqual(ctx.spec["kernels"], ["decode"])
                self.assertIn("mask: none", text)
                # The context pass is planned like any decode (no GPU needed to plan).
                self.assertIn("config", ctx.select("decode", 8, 1, 4096))

    def test_mla_context_is_the_absorbed_decode(self):
        mla = ("version: 1\nname: ds\nnum_q_heads: 16\nkv_cache: {dtype: same, layout: NHD, page_size: 64}\n"
               "lse: {layout: head_major, base: e}\nmla: {kv_lora_rank: 512, qk_rope_head_dim: 64, "
               "qk_nope_head_dim: 128, v_head_dim: 128}\nkernels: [decode]\n")
        with attnc.Attention(mla, db=self.db, device_info=DEVICE) as layer:
            with attnc.Attention(layer.dcp_context_yaml(2), db=self.db, device_info=DEVICE) as ctx:
                self.assertEqual(ctx.spec["num_q_heads"], 32)
                self.assertEqual(ctx.spec["lse_layout"], "head_major")
                self.assertEqual(ctx.select("decode", 8, 2, 4096)["config"]["family"], "mla_decode")
                # The correction and the merge take the latent V rows (512) on an MLA layer.
                part = FakeCuda(3, 32, 512, dtype="bfloat16")
                with self.assertRaisesRegex(attnc.AttncError, r"rank must be in \[0, world_size = 2\), got 2"):
                    ctx.lse_correct(FakeCuda(2, 3, 16, 512, dtype="bfloat16"), part, FakeCuda(2, 32, 3), 2, stream=0)
                with self.assertRaisesRegex(attnc.AttncError, "head_size 576 is neither"):
                    ctx.lse_correct(FakeCuda(3, 32, 576, dtype="bfloat16"), FakeCuda(3, 32, 576, dtype="bfloat16"),
                                    FakeCuda(2, 32, 3), 0, stream=0)

    def test_collectives_give_the_group(self):
        class Two:  # what DcpAttention asks of its collectives before any step
            world_size, rank = 2, 1
        d = dcp.DcpAttention(LAYER, collectives=Two(), interleave_size=16, db=self.db, device_info=DEVICE)
        self.assertEqual((d.world_size, d.rank), (2, 1))
        self.assertEqual(d.context.spec["num_q_heads"], 8)
        self.assertEqual(d.max_local_seq_len(33), 32)  # ceil(33 / 32) * 16
        d.close()
        Two.rank = 2
        with self.assertRaisesRegex(ValueError, r"rank must be in \[0, world_size = 2\), got 2"):
            dcp.DcpAttention(LAYER, collectives=Two(), db=self.db, device_info=DEVICE)

    def test_refused_features(self):
        for extra, says in (("alibi: linear\n", "ALiBi"), ("sinks: true\n", "attention sinks")):
            with attnc.Attention(LAYER + extra, db=self.db, device_info=DEVICE) as layer:
                with self.assertRaisesRegex(attnc.AttncError, "not supported yet: " + says) as e:
                    layer.dcp_context_yaml(2)
                self.assertEqual(e.exception.code, 3)  # ATTNC_ERR_NOT_SUPPORTED

    def test_lse_correct_checks_shapes_first(self):
        with attnc.Attention(LAYER, db=self.db, device_info=DEVICE) as layer:
            ctx = attnc.Attention(layer.dcp_context_yaml(2), db=self.db, device_info=DEVICE)
            part = FakeCuda(3, 8, 64, dtype="bfloat16")
            out = FakeCuda(2, 3, 4, 64, dtype="bfloat16")
            want = r"lses must be \[world_size, num_tokens, num_heads\] = \(2, 3, 8\)"
            with self.assertRaisesRegex(ValueError, want):
                ctx.lse_correct(out, part, FakeCuda(2, 8, 3), 0)
            with self.assertRaisesRegex(ValueError, "chunks \\* heads_per_chunk = 8"):
                ctx.lse_correct(FakeCuda(2, 3, 3, 64, dtype="bfloat16"), part, FakeCuda(2, 3, 8), 0)
            with self.assertRaisesRegex(attnc.AttncError, r"rank must be in \[0, world_size = 2\), got 2"):
                ctx.lse_correct(out, part, FakeCuda(2, 3, 8), 2, stream=0)  # no torch here: a raw stream
            ctx.close()


def gpu_count():
    try:
        import torch
        return torch.cuda.device_count()
    except ImportError:
        return 0


def run_ranks(test, world, simulate=False):
    """dcp_two_gpu.py with `world` ranks (on as many GPUs, or simulated as threads on one): per
    rank, 2 FlashAttention layers (+ MLA bf16 and fp8 on sm_90) x 2 interleave sizes, and (not
    simulated) 2 CUDA-graph cases; every one PASS."""
    import torch
    kinds = 4 if torch.cuda.get_device_capability(0) >= (9, 0) else 2  # + MLA bf16 and fp8 on sm_90
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dcp_two_gpu.py")
    how = ["--simulate", str(world)] if simulate else ["--world", str(world), "--no-bench"]
    r = subprocess.run([sys.executable, script] + how, capture_output=True, text=True, timeout=900)
    print(r.stdout[-6000:], r.stderr[-4000:])
    test.assertEqual(r.returncode, 0)
    test.assertEqual(r.stdout.count(" PASS "), (kinds * 2 + (0 if simulate else 2)) * world)


@unittest.skipUnless(gpu_count() >= 1, "needs torch and a GPU")
class OneGpu(unittest.TestCase):
    def test_one_rank_group_against_float64_and_graph_replay(self):
        run_ranks(self, 1)

    def test_two_ranks_as_threads_against_float64(self):
        run_ranks(self, 2, simulate=True)


@unittest.skipUnless(gpu_count() >= 2, "needs torch and 2 GPUs")
class TwoGpus(unittest.TestCase):
    def test_dcp_against_single_gpu_and_float64(self):
        run_ranks(self, 2)


if __name__ == "__main__":
    unittest.main()
