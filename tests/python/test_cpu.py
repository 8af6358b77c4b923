"""The Python package without a GPU: version, spec errors, select() with a described device and
without one, ATTNC_NO_JIT, argument checks before anything reaches the library."""
import math
import os
import sys
import tempfile
import types
import unittest

if os.environ.get("ATTNC_TEST_INSTALLED") != "1":  # else the installed package (tests/python/wheel_test.sh)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import attnc  # noqa: E402
from attnc import _nvrtc  # noqa: E402

SPEC = """version: 1
name: py-test
head_dim: 64
num_q_heads: 8
num_kv_heads: 2
dtype: bf16
mask: causal
lse: {layout: head_major, base: e}
kernels: [prefill, decode]
"""
DEVICE = {"name": "Test GPU", "arch": "sm_90a", "sm_count": 132, "driver_version": 13000}


def has_gpu():
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


class FakeCuda:
    """What the package reads of a torch tensor (shape, dtype, strides, pointer), without torch."""

    def __init__(self, *shape, dtype="float32", ptr=0x1000):
        self.shape, self.dtype, self.is_cuda, self.ptr = shape, "torch." + dtype, True, ptr
        self.device = types.SimpleNamespace(type="cuda", index=0)

    def dim(self):
        return len(self.shape)

    def stride(self, i=None):
        st = tuple(int(math.prod(self.shape[j + 1:])) for j in range(len(self.shape)))
        return st if i is None else st[i]

    def data_ptr(self):
        return self.ptr


class Cpu(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.db = os.path.join(self.tmp.name, "attnc.db")

    def tearDown(self):
        self.tmp.cleanup()

    def test_version(self):
        self.assertRegex(attnc.version(), r"^\d+\.\d+\.\d+$")

    def test_bad_spec_names_the_field(self):
        with self.assertRaises(attnc.AttncError) as cm:
            attnc.Attention("version: 1\nhead_dim: 65\n", db="none")
        self.assertEqual(cm.exception.code, 2)
        self.assertIn("head_dim", str(cm.exception))
        with self.assertRaises(attnc.AttncError) as cm:
            attnc.Attention("/nonexistent/spec.yaml", db="none")
        self.assertIn("/nonexistent/spec.yaml", str(cm.exception))

    def test_spec_from_a_file(self):
        path = os.path.join(self.tmp.name, "s.yaml")
        with open(path, "w") as f:
            f.write(SPEC)
        att = attnc.Attention(path, db=self.db, device_info=DEVICE)
        self.assertEqual(att.spec["name"], "py-test")
        self.assertEqual(att.spec["num_kv_heads"], 2)
        self.assertEqual(att.spec["lse_layout"], "head_major")
        self.assertEqual(att.spec["kernels"], ["prefill", "prefill_paged", "decode"])

    def test_select_with_a_described_device(self):
        att = attnc.Attention(SPEC, db=self.db, device_info=DEVICE)
        s = att.select("decode", 1, 1, 8192)
        self.assertEqual(s["origin"], "heuristic")
        self.assertEqual(s["bucket"], "b1.q1.k8192")
        self.assertEqual(s["config"]["family"], "decode_bw")
        self.assertEqual(s["num_splits"], 1)  # no workspace reserved: lowered to 1
        self.assertFalse(s["cached"])
        self.assertTrue(att.select("decode", 1, 1, 5000)["cached"])
        self.assertGreater(att.workspace_needed(batch=1, max_seqlen_k=8192), 0)
        self.assertIsNone(att.last_choice())
        with self.assertRaises(ValueError) as cm:
            att.select("merge", 1, 1, 1)
        self.assertIn("expected one of prefill, prefill_paged, decode", str(cm.exception))

    @unittest.skipIf(has_gpu(), "a GPU is present")
    def test_select_without_a_gpu_says_so(self):
        att = attnc.Attention(SPEC, db=self.db)  # creating needs no GPU
        with self.assertRaises(attnc.AttncError) as cm:
            att.select("decode", 1, 1, 128)
        self.assertEqual(cm.exception.code, 7)  # ATTNC_ERR_NO_GPU
        self.assertTrue(str(cm.exception))

    def test_no_jit_from_the_environment(self):
        os.environ["ATTNC_NO_JIT"] = "1"
        try:
            att = attnc.Attention(SPEC, db=self.db, device_info=DEVICE)
        finally:
            del os.environ["ATTNC_NO_JIT"]
        with self.assertRaises(attnc.AttncError) as cm:
            att.prepare("decode", 1, 1, 128)
        msg = str(cm.exception)
        self.assertEqual(cm.exception.code, 5)
        self.assertIn("is not in the cache " + self.db, msg)
        self.assertIn("ATTNC_NO_JIT=1", msg)
        self.assertIn("attnc compile", msg)
        self.assertIn("--kernel decode", msg)

    def test_prepare_then_cached(self):
        att = attnc.Attention(SPEC, db=self.db, device_info=DEVICE, no_jit=False)
        self.assertEqual(att.prepare("decode", 2, 1, 300), "compiled")
        self.assertEqual(att.prepare("decode", 2, 1, 300), "memory")
        again = attnc.Attention(SPEC, db=self.db, device_info=DEVICE, no_jit=True)
        self.assertEqual(again.prepare("decode", 2, 1, 300), "cache")

    def test_argument_checks(self):
        att = attnc.Attention(SPEC, db=self.db, device_info=DEVICE)
        with self.assertRaises(ValueError) as cm:
            att.decode(None, 1, 2, 3, 4, max_seqlen_k=10)
        self.assertIn("q is required", str(cm.exception))
        with self.assertRaises(TypeError) as cm:
            att.decode("x", 1, 2, 3, 4, max_seqlen_k=10)
        self.assertIn("q: expected a tensor [total_q, Hq, D] (torch, or any with __dlpack__ or "
                      "__cuda_array_interface__) or a device pointer (int), got str", str(cm.exception))
        with self.assertRaises(ValueError) as cm:  # raw pointers need sizes
            att.decode(0x1000, 0x2000, 0x3000, 0x4000, 0x5000, max_seqlen_k=10)
        self.assertIn("total_q is required when q is a pointer", str(cm.exception))
        with self.assertRaises(TypeError) as cm:
            att.prefill(0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 4, 4, total_q=4, batch=1, out=0x6000,
                        lse=0x7000, bogus=1)
        self.assertIn("unexpected arguments: bogus", str(cm.exception))

    def test_tensor_rank_per_layout_alternative(self):
        """A layout with alternatives ("[Hq, total_q] or [total_q, Hq]", "[Hq] or [batch, Hq]")
        takes a tensor of any alternative's rank and names them all otherwise."""
        from attnc._tensors import arg

        self.assertEqual(arg("lse", FakeCuda(8, 5), "[Hq, total_q] or [total_q, Hq]", ("float32",)).shape, (8, 5))
        self.assertEqual(arg("alibi", FakeCuda(8), "[Hq] or [batch, Hq]", ("float32",)).shape, (8,))
        self.assertEqual(arg("alibi", FakeCuda(2, 8), "[Hq] or [batch, Hq]", ("float32",)).shape, (2, 8))
        with self.assertRaises(ValueError) as cm:
            arg("lse", FakeCuda(8, 5, 1), "[Hq, total_q] or [total_q, Hq]", ("float32",))
        self.assertIn("lse must be [Hq, total_q] or [total_q, Hq] (2 dims), got shape (8, 5, 1)", str(cm.exception))

    def test_nvrtc_missing_names_what_and_where(self):
        with self.assertRaises(_nvrtc.NvrtcNotFound) as cm:
            _nvrtc.load("libnvrtc.so.99", paths=[self.tmp.name], environ={"CUDA_HOME": self.tmp.name})
        msg = str(cm.exception)
        self.assertIn("libnvrtc.so.99 (NVRTC of CUDA 99) not found", msg)
        self.assertIn(os.path.join(self.tmp.name, "lib64"), msg)
        self.assertIn("pip install nvidia-cuda-nvrtc", msg)

    def test_nvrtc_search_covers_toolkit_and_nvidia_wheels(self):
        wheel_lib = os.path.join(self.tmp.name, "nvidia", "cu13", "lib")
        os.makedirs(wheel_lib)
        dirs = _nvrtc.candidate_dirs(paths=[self.tmp.name], environ={"CUDA_HOME": "/opt/cuda"})
        self.assertEqual(dirs[:2], ["/opt/cuda/lib64", "/opt/cuda/lib"])
        self.assertIn("/usr/local/cuda/lib64", dirs)
        self.assertEqual(dirs[-1], wheel_lib)

    def test_reserve_covers_forced_splits_and_a_cap_needs_less(self):
        att = attnc.Attention(SPEC, db=self.db, device_info=DEVICE)
        full = att.workspace_needed(32, 8192)
        capped = att.workspace_needed(32, 8192, max_num_splits=8)
        self.assertGreaterEqual(capped, 8 * 32 * 8 * (64 + 1) * 4)  # 8 parts of every (token, q head) row
        self.assertLess(capped, full)

    def test_merge_checks_before_the_library(self):
        att = attnc.Attention(SPEC, db=self.db, device_info=DEVICE)
        o = FakeCuda(4, 8, 64, dtype="bfloat16")
        lse = FakeCuda(8, 4)
        with self.assertRaises(TypeError) as cm:
            att.merge(o, FakeCuda(4, 8, 64, dtype="float16"), lse, o, lse)
        self.assertIn("prefix_output must be bfloat16, got float16", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            att.merge(o, o, FakeCuda(4, 8), o, lse)
        self.assertIn("prefix_lse must be [num_heads, num_tokens] = (8, 4), got (4, 8)", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            att.merge(o, o, lse, o, lse, lse_base="10")
        self.assertIn("lse_base '10'", str(cm.exception))
        with self.assertRaises(attnc.AttncError) as cm:  # the library: heads against the spec, before loading
            att.merge(FakeCuda(4, 6, 64, dtype="bfloat16"), FakeCuda(4, 6, 64, dtype="bfloat16"), FakeCuda(6, 4),
                      FakeCuda(4, 6, 64, dtype="bfloat16"), FakeCuda(6, 4), stream=0)
        self.assertIn("num_heads 6 does not match the spec's num_q_heads 8", str(cm.exception))

    def test_cache_write_checks_before_the_library(self):
        att = attnc.Attention(SPEC, db=self.db, device_info=DEVICE)
        k = FakeCuda(5, 2, 64, dtype="bfloat16")
        cache = FakeCuda(10, 16, 2, 64, dtype="bfloat16")
        slots = FakeCuda(5, dtype="int64")
        with self.assertRaises(TypeError) as cm:
            att.cache_write(k, k, cache, cache, FakeCuda(5, dtype="int32"))
        self.assertIn("slot_mapping must be int64, got int32", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            att.cache_write(k, k, FakeCuda(10, 16, 4, 64, dtype="bfloat16"), cache, slots)
        self.assertIn("key_cache: dim 2 (kv heads) is 4, the spec needs 2", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            att.cache_write(k, k, cache, cache, FakeCuda(6, dtype="int64"))
        self.assertIn("key has 5 rows, fewer than slot_mapping's 6 tokens", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            att.cache_write(k, k, cache, cache, slots, k_scale=FakeCuda(1), v_scale=FakeCuda(1))
        self.assertIn("scales are for fp8 caches", str(cm.exception))
        fp8 = attnc.Attention(SPEC.replace("kernels:", "kv_cache: {dtype: fp8_e4m3}\nkernels:"), db=self.db,
                              device_info=DEVICE)
        with self.assertRaises(ValueError) as cm:
            fp8.cache_write(k, k, FakeCuda(10, 16, 2, 64, dtype="uint8"), FakeCuda(10, 16, 2, 64, dtype="uint8"),
                            slots)
        self.assertIn("k_scale and v_scale (fp32 [1] or [num_kv_heads]) are required: the cache is fp8_e4m3",
                      str(cm.exception))

    def test_fp8_cache_reads_check_scales_before_the_library(self):
        q = FakeCuda(3, 8, 64, dtype="bfloat16")
        bt, su = FakeCuda(3, 4, dtype="int32"), FakeCuda(3, dtype="int32")
        att = attnc.Attention(SPEC, db=self.db, device_info=DEVICE)
        cache = FakeCuda(10, 16, 2, 64, dtype="bfloat16")
        with self.assertRaises(ValueError) as cm:
            att.decode(q, cache, cache, bt, su, 64, k_scale=FakeCuda(1))
        self.assertIn("k_scale given but the cache holds bf16 (spec kv_cache.dtype same); scales dequantise fp8",
                      str(cm.exception))
        fp8 = attnc.Attention(SPEC.replace("kernels:", "kv_cache: {dtype: fp8_e5m2}\nkernels:"), db=self.db,
                              device_info=DEVICE)
        with self.assertRaises(TypeError) as cm:
            fp8.decode(q, cache, cache, bt, su, 64)
        self.assertIn("k_cache must be float8_e5m2 or uint8, got bfloat16", str(cm.exception))
        c8 = FakeCuda(10, 16, 2, 64, dtype="float8_e5m2")
        with self.assertRaises(ValueError) as cm:
            fp8.decode(q, c8, c8, bt, su, 64, k_scale=FakeCuda(2))
        self.assertIn("k_scale must be [1] (one per-tensor scale), got (2,)", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            fp8.decode(q, c8, c8, bt, su, 64, v_descale=FakeCuda(4, 2))
        self.assertIn("v_descale: dim 0 (requests) is 4, the spec needs 3", str(cm.exception))

    def test_cli_through_python_m(self):
        import subprocess
        env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(attnc.__file__))))
        r = subprocess.run([sys.executable, "-m", "attnc", "--version"], capture_output=True, text=True, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(attnc.version(), r.stdout)


if __name__ == "__main__":
    unittest.main()
