"""attnc.vllm without a GPU: every kind of bad argument raises a Python exception naming it before
anything reaches the GPU (tensors are stand-ins that only describe themselves), the specs the
drop-ins write for vLLM's head sizes and features are valid and plan on a described sm_90a."""
import os
import sys
import tempfile
import unittest

if os.environ.get("ATTNC_TEST_INSTALLED") != "1":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import attnc  # noqa: E402
from attnc import _variants, vllm  # noqa: E402
from test_cpu import DEVICE  # noqa: E402
from test_cpu import FakeCuda as _Fake  # noqa: E402

BF16, I32, I64, F32 = "bfloat16", "int32", "int64", "float32"


def FakeCuda(*shape, dtype=BF16):
    """A CUDA tensor stand-in, bf16 unless told."""
    return _Fake(*shape, dtype=dtype)


def paged(hq=8, hkv=2, d=128, batch=3, page=16, blocks=64, total_q=3, dtype=BF16):
    """Arguments of a paged flash_attn_varlen_func call, as stand-ins."""
    return dict(q=FakeCuda(total_q, hq, d, dtype=dtype), k=FakeCuda(blocks, page, hkv, d, dtype=dtype),
                v=FakeCuda(blocks, page, hkv, d, dtype=dtype), max_seqlen_q=1, cu_seqlens_q=FakeCuda(batch + 1, dtype=I32),
                max_seqlen_k=100, seqused_k=FakeCuda(batch, dtype=I32),
                block_table=FakeCuda(batch, 8, dtype=I32), causal=True)


class CpuTensor(_Fake):
    def __init__(self, *shape, dtype=BF16):
        super().__init__(*shape, dtype=dtype)
        self.is_cuda = False
        self.device = "cpu"


class BadArguments(unittest.TestCase):
    def raises(self, exc, text, fn=vllm.flash_attn_varlen_func, **kw):
        with self.assertRaises(exc) as cm:
            fn(**kw)
        self.assertIn(text, str(cm.exception))

    def test_refused_features_are_named(self):
        self.raises(NotImplementedError, "dropout_p=0.1", **paged(), dropout_p=0.1)
        self.raises(NotImplementedError, "return_attn_probs", **paged(), return_attn_probs=True)
        self.raises(TypeError, "q must be bfloat16 or float16, got float8_e4m3fn",  # fp8 q needs q_descale
                    **{**paged(), "q": FakeCuda(3, 8, 128, dtype="float8_e4m3fn")})
        self.raises(NotImplementedError, "q_v", **paged(), q_v=FakeCuda(3, 8, 128))
        self.raises(NotImplementedError, "context parallelism", **paged(), cp_world_size=2)
        with self.assertRaises(NotImplementedError) as cm:  # all at once
            vllm.flash_attn_varlen_func(**paged(), dropout_p=0.5, return_attn_probs=True)
        self.assertIn("dropout_p=0.5 (inference only: 0); return_attn_probs", str(cm.exception))
        kw = dict(q=FakeCuda(2, 1, 8, 128), k_cache=FakeCuda(4, 16, 2, 128), v_cache=FakeCuda(4, 16, 2, 128),
                  cache_seqlens=FakeCuda(2, dtype=I32), block_table=FakeCuda(2, 4, dtype=I32))
        self.raises(NotImplementedError, "appending k/v", vllm.flash_attn_with_kvcache, **kw, k=FakeCuda(2, 1, 2, 128))
        self.raises(NotImplementedError, "rotary_cos", vllm.flash_attn_with_kvcache, **kw, rotary_cos=FakeCuda(4, 64))
        self.raises(NotImplementedError, "cache_batch_idx", vllm.flash_attn_with_kvcache, **kw,
                    cache_batch_idx=FakeCuda(2, dtype=I32))
        self.raises(NotImplementedError, "without block_table", vllm.flash_attn_with_kvcache,
                    **{**kw, "block_table": None})
        self.raises(ValueError, "cache_seqlens", vllm.flash_attn_with_kvcache, **{**kw, "cache_seqlens": None})
        self.raises(ValueError, "q must be a tensor [batch, seqlen_q", vllm.flash_attn_with_kvcache,
                    **{**kw, "q": FakeCuda(2, 8, 128)})

    def test_fp8_caches(self):
        """Paged caches may be fp8 (read with k/v_descale [batch, Hkv]); contiguous K/V may not."""
        fp8 = dict(k=FakeCuda(64, 16, 2, 128, dtype="float8_e4m3fn"), v=FakeCuda(64, 16, 2, 128, dtype="float8_e4m3fn"))
        self.raises(TypeError, "v must be float8_e4m3fn, got bfloat16", **{**paged(), "k": fp8["k"]})
        self.raises(ValueError, "k_descale has shape (1, 2), expected (batch, num_kv_heads) = (3, 2)",
                    **{**paged(), **fp8}, k_descale=FakeCuda(1, 2, dtype=F32))
        self.raises(TypeError, "v_descale must be float32, got bfloat16", **{**paged(), **fp8},
                    v_descale=FakeCuda(3, 2, dtype=BF16))
        contiguous = dict(q=FakeCuda(5, 8, 128), k=FakeCuda(9, 2, 128, dtype="float8_e4m3fn"),
                          v=FakeCuda(9, 2, 128, dtype="float8_e4m3fn"), max_seqlen_q=5, max_seqlen_k=9,
                          cu_seqlens_q=FakeCuda(2, dtype=I32), cu_seqlens_k=FakeCuda(2, dtype=I32))
        self.raises(TypeError, "k must be bfloat16, got float8_e4m3fn", **contiguous)
        self.assertTrue(vllm.flash_attn_supports_fp8())

    def test_dtypes(self):
        self.raises(TypeError, "q must be bfloat16 or float16, got float32", **paged(dtype=F32))
        kw = paged()
        kw["k"] = FakeCuda(64, 16, 2, 128, dtype="float16")
        self.raises(TypeError, "k must be bfloat16 or float8_e4m3fn or float8_e5m2, got float16",  # paged: fp8 too
                    **kw)
        self.raises(TypeError, "cu_seqlens_q must be int32, got int64", **{**paged(), "cu_seqlens_q": FakeCuda(4, dtype=I64)})
        self.raises(TypeError, "block_table must be int32", **{**paged(), "block_table": FakeCuda(3, 8, dtype=I64)})
        self.raises(TypeError, "alibi_slopes must be float32", **paged(), alibi_slopes=FakeCuda(8, dtype=BF16))
        self.raises(TypeError, "max_seqlen_k must be a number", **{**paged(), "max_seqlen_k": "100"})

    def test_shapes_and_sizes(self):
        self.raises(ValueError, "head_size is 36: attnc kernels take head sizes that are multiples of 8 in 8..256",
                    **paged(d=36))
        self.raises(ValueError, "head_size is 264", **paged(d=264))
        self.raises(ValueError, "q has 8 heads, k 3: num_heads must be a multiple of num_kv_heads", **paged(hkv=3))
        self.raises(ValueError, "block_size (k.shape[1]) is 8: attnc reads pages of a multiple of 16 tokens",
                    **paged(page=8))
        self.raises(ValueError, "block_table has 3 rows, cu_seqlens_q says batch 4",
                    **{**paged(), "cu_seqlens_q": FakeCuda(5, dtype=I32)})
        self.raises(ValueError, "q must be [total_q, num_heads, head_size] (3 dims)",
                    **{**paged(), "q": FakeCuda(3, 8, 128, 1)})
        self.raises(ValueError, "alibi_slopes has shape (4,): its last dim must be num_heads = 8",
                    **paged(), alibi_slopes=FakeCuda(4, dtype=F32))
        self.raises(ValueError, "s_aux must be [num_heads] (1 dims)", **paged(), s_aux=FakeCuda(2, 8, dtype=F32))
        self.raises(ValueError, "out has shape (2, 8, 128), expected (3, 8, 128)", **paged(), out=FakeCuda(2, 8, 128))
        kw = paged()
        kw["v"] = FakeCuda(64, 16, 4, 128)
        self.raises(ValueError, "v has shape (64, 16, 4, 128), k (64, 16, 2, 128)", **kw)

    def test_page_tables_and_lengths(self):
        self.raises(ValueError, "needs seqused_k (or cu_seqlens_k)", **{**paged(), "seqused_k": None})
        self.raises(ValueError, "seqused_k has 2 entries, cu_seqlens_q says batch 3",
                    **{**paged(), "seqused_k": FakeCuda(2, dtype=I32)})
        contiguous = dict(q=FakeCuda(10, 8, 64), k=FakeCuda(12, 2, 64), v=FakeCuda(12, 2, 64), max_seqlen_q=5,
                          cu_seqlens_q=FakeCuda(3, dtype=I32), max_seqlen_k=6)
        self.raises(ValueError, "cu_seqlens_k is required", **contiguous)
        self.raises(NotImplementedError, "seqused_k without block_table", **contiguous,
                    cu_seqlens_k=FakeCuda(3, dtype=I32), seqused_k=FakeCuda(2, dtype=I32))
        self.raises(ValueError, "cu_seqlens_k has 4 entries, cu_seqlens_q 3", **contiguous,
                    cu_seqlens_k=FakeCuda(4, dtype=I32))
        self.raises(ValueError, "num_splits=4 on a contiguous prefill", **contiguous,
                    cu_seqlens_k=FakeCuda(3, dtype=I32), num_splits=4)
        self.raises(ValueError, "max_seqlen_q must be >= 0", **{**paged(), "max_seqlen_q": -1})

    def test_windows(self):
        self.raises(TypeError, "window_size must be a pair (left, right) of ints", **paged(), window_size=5)
        self.raises(ValueError, "each side must be >= -1", **paged(), window_size=(-3, 0))
        self.assertEqual(vllm._mask(True, None), "causal")
        self.assertEqual(vllm._mask(False, (-1, -1)), "none")
        self.assertEqual(vllm._mask(False, (-1, 0)), "causal")
        self.assertEqual(vllm._mask(True, (255, 10)), (255, 0))  # causal fixes right to 0, as FlashAttention
        self.assertEqual(vllm._mask(False, (127, 127)), (127, 127))

    def test_devices(self):
        self.raises(ValueError, "q must be a CUDA tensor", **{**paged(), "q": CpuTensor(3, 8, 128)})
        kw = paged()
        kw["block_table"].device = type(kw["q"].device)(type="cuda", index=1)
        self.raises(ValueError, "tensors are on different devices", **kw, out=FakeCuda(3, 8, 128))
        self.raises(TypeError, "q: expected a tensor [total_q, num_heads, head_size] (torch, or any with __dlpack__",
                    **{**paged(), "q": [1, 2, 3]})

    def test_ops(self):
        kw = dict(key=FakeCuda(5, 2, 128), value=FakeCuda(5, 2, 128), key_cache=FakeCuda(8, 16, 2, 128),
                  value_cache=FakeCuda(8, 16, 2, 128), slot_mapping=FakeCuda(5, dtype=I64))
        self.raises(ValueError, "kv_cache_dtype 'int8': allowed: auto", vllm.reshape_and_cache_flash, **kw,
                    kv_cache_dtype="int8")
        self.raises(ValueError, "k_scale (fp32 [1] or [num_kv_heads]) is required for an fp8 cache",
                    vllm.reshape_and_cache_flash, **{**kw, "key_cache": FakeCuda(8, 16, 2, 128, dtype="uint8"),
                                                     "value_cache": FakeCuda(8, 16, 2, 128, dtype="uint8")},
                    kv_cache_dtype="fp8")
        self.raises(ValueError, "key_cache is float8_e4m3fn but kv_cache_dtype is 'auto'", vllm.reshape_and_cache_flash,
                    **{**kw, "key_cache": FakeCuda(8, 16, 2, 128, dtype="float8_e4m3fn")})
        self.raises(TypeError, "slot_mapping must be int64, got int32", vllm.reshape_and_cache_flash,
                    **{**kw, "slot_mapping": FakeCuda(5, dtype=I32)})
        self.raises(ValueError, "key has 5 rows, fewer than slot_mapping's 6 tokens", vllm.reshape_and_cache_flash,
                    **{**kw, "slot_mapping": FakeCuda(6, dtype=I64)})
        m = dict(output=FakeCuda(4, 8, 128), prefix_output=FakeCuda(4, 8, 128), prefix_lse=FakeCuda(8, 4, dtype=F32),
                 suffix_output=FakeCuda(4, 8, 128), suffix_lse=FakeCuda(8, 4, dtype=F32))
        self.raises(ValueError, "output's head_size is 4", vllm.merge_attn_states,
                    **{**m, "output": FakeCuda(4, 8, 4)})
        self.raises(TypeError, "output must be bfloat16 or float16, got float32", vllm.merge_attn_states,
                    **{**m, "output": FakeCuda(4, 8, 128, dtype=F32)})
        self.raises(ValueError, "prefix_lse must be [num_heads, num_tokens] = (8, 4), got (4, 8)",
                    vllm.merge_attn_states, **{**m, "prefix_lse": FakeCuda(4, 8, dtype=F32)})
        self.raises(ValueError, "block_size must be a positive multiple of 16, got 8", vllm.get_kv_cache_shape,
                    num_blocks=10, block_size=8, num_kv_heads=2, head_size=128)
        self.assertEqual(vllm.get_kv_cache_shape(32768, 16, 2, 80), (2, 32768, 16, 2, 80))


class CudaArray:
    """A CuPy-like array: only __cuda_array_interface__ (strides in bytes, None when contiguous)."""

    def __init__(self, shape, typestr="<f2", strides=None, ptr=0x10000):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "strides": strides,
                                         "data": (ptr, False), "version": 3}


class DlpackOnly:
    def __init__(self, device_type=2):
        self.device_type = device_type

    def __dlpack__(self, stream=None):
        raise AssertionError("not read without torch")

    def __dlpack_device__(self):
        return (self.device_type, 0)


@unittest.skipIf(vllm._compiling is not vllm._no_torch, "torch is installed: foreign tensors become torch views")
class ForeignTensors(unittest.TestCase):
    """Tensors of other frameworks get the checks torch tensors get (read from their interface)."""

    def test_cuda_array_interface(self):
        from attnc._tensors import arg
        a = arg("q", CudaArray((5, 8, 64)), "[total_q, Hq, D]", ("float16",))
        self.assertEqual((a.ptr, a.shape, a.strides, a.dtype), (0x10000, (5, 8, 64), (512, 64, 1), "float16"))
        a = arg("k", CudaArray((4, 16, 2, 64), strides=(2 * 8192, 2 * 128, 2 * 64, 2)), "[b, p, h, d]", ("float16",))
        self.assertEqual(a.strides, (8192, 128, 64, 1))
        with self.assertRaises(TypeError) as cm:
            arg("q", CudaArray((5, 8, 64), "<f8"), "[total_q, Hq, D]", ("float16",))
        self.assertIn("typestr '<f8' is not one attnc reads; allowed: <f2, <f4, <i4, <i8, |u1", str(cm.exception))
        with self.assertRaises(TypeError) as cm:
            arg("q", CudaArray((5, 8, 64), "<f4"), "[total_q, Hq, D]", ("float16",))
        self.assertIn("q must be float16, got float32", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            arg("q", CudaArray((5, 8, 64), strides=(1024, 128, 4)), "[total_q, Hq, D]", ("float16",))
        self.assertIn("q: the last dim must be contiguous (stride 1), got strides (512, 64, 2)", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            arg("q", CudaArray((5, 8)), "[total_q, Hq, D]", ("float16",))
        self.assertIn("q must be [total_q, Hq, D] (3 dims), got shape (5, 8)", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            arg("q", CudaArray((5, 8, 64), strides=(1024, 128, 3)), "[total_q, Hq, D]", ("float16",))
        self.assertIn("strides (1024, 128, 3) bytes are not whole float16 elements", str(cm.exception))

    def test_dlpack_without_torch(self):
        from attnc._tensors import arg
        with self.assertRaises(TypeError) as cm:
            arg("q", DlpackOnly(), "[total_q, Hq, D]")
        self.assertIn("a DLPack tensor (DlpackOnly) needs torch installed", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            arg("q", DlpackOnly(device_type=1), "[total_q, Hq, D]")
        self.assertIn("q must be a CUDA tensor, got one on DLPack device type 1", str(cm.exception))

    def test_attention_checks_foreign_tensors_against_the_spec(self):
        from test_cpu import SPEC
        att = attnc.Attention(SPEC.replace("dtype: bf16", "dtype: fp16"), db="none", device_info=DEVICE)
        with self.assertRaises(ValueError) as cm:
            att.decode(CudaArray((4, 8, 128)), CudaArray((10, 16, 2, 64)), CudaArray((10, 16, 2, 64)),
                       CudaArray((4, 2), "<i4"), CudaArray((4,), "<i4"), 32)
        self.assertIn("q: dim 2 (head dim) is 128, the spec needs 64", str(cm.exception))
        with self.assertRaises(TypeError) as cm:
            vllm.flash_attn_varlen_func(**{**paged(), "q": CudaArray((3, 8, 128))})
        self.assertIn("attnc.vllm takes torch tensors", str(cm.exception))


class Specs(unittest.TestCase):
    """The specs the drop-ins write are valid and plan on sm_90a for vLLM's grid."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.db = os.path.join(self.tmp.name, "attnc.db")

    def tearDown(self):
        self.tmp.cleanup()

    def test_vllm_grid_variants_plan(self):
        for d in (40, 72, 80, 128, 256):
            for hq, hkv in ((4, 4), (8, 2)):
                for cap in (0.0, 50.0):
                    for mask in ("causal", (255, 0)):
                        text = _variants.spec_yaml("bf16", d, d, hq, hkv, 16, mask, cap, lse=("head_major", "e"))
                        att = attnc.Attention(text, db=self.db, device_info=DEVICE)
                        self.assertEqual(att.spec["softcap"], cap)
                        self.assertEqual(att.select("decode", 4, 1, 4096)["kind"], "decode")
                        self.assertEqual(att.select("prefill_paged", 4, 128, 4096)["kind"], "prefill_paged")

    def test_same_arguments_same_spec_id(self):
        a = attnc.Attention(_variants.spec_yaml("fp16", 64, 64, 8, 1, 32, "none", 0, True, True, ("token_major", "e")),
                            db=self.db, device_info=DEVICE)
        b = attnc.Attention(_variants.spec_yaml("fp16", 64, 64, 8, 1, 32, "none", 0, True, True, ("token_major", "e")),
                            db=self.db, device_info=DEVICE)
        self.assertEqual(a.spec["spec_id"], b.spec["spec_id"])
        self.assertEqual((a.spec["alibi"], a.spec["sinks"], a.spec["lse_layout"]), ("linear", True, "token_major"))
        ops = attnc.Attention(_variants.spec_yaml("bf16", 72, 72, 3, 3, 16, kv_cache_dtype="fp8_e5m2",
                                                  kernels=("cache_write",)), db=self.db, device_info=DEVICE)
        self.assertEqual(ops.spec["kv_cache_dtype"], "fp8_e5m2")

    def test_set_options(self):
        with self.assertRaises(TypeError) as cm:
            _variants.set_options(dbb="x")
        self.assertIn("unknown option(s) dbb; allowed: background_compile, db, no_jit, use_tuning", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
