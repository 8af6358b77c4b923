"""attnc._fast (python/csrc/fast.c), the drop-ins' warm path in C, without a GPU: the keys it packs
from scalars and tensor metadata (through a stand-in tensor type, read through its Python API or
through stand-in shim functions as torch's C shim would be called), and a remembered call replayed
through the library's own function (a null handle, so the library's error comes back as AttncError).
Where torch is installed, its real shim (attnc/_torch_shim.py) is checked against its Python API."""
import ctypes
import importlib.util
import math
import os
import sys
import unittest

if os.environ.get("ATTNC_TEST_INSTALLED") != "1":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from attnc import _capi, _memo  # noqa: E402

fast = _memo.fast_module()


class Tensor:
    """What the key reads of a tensor: data_ptr(), shape, stride(), dtype."""

    def __init__(self, ptr, shape, stride, dtype="bf16"):
        self.ptr, self.shape, self.strides, self.dtype = ptr, tuple(shape), tuple(stride), dtype

    def data_ptr(self):
        return self.ptr

    def stride(self):
        return self.strides

    def is_contiguous(self):
        return self.strides == tuple(int(math.prod(self.shape[i + 1:])) for i in range(len(self.shape)))


@unittest.skipIf(fast is None, "attnc._fast is not built (no Python headers)")
class Keys(unittest.TestCase):
    def key(self, *parts):
        return fast.key(Tensor, *parts)

    def test_scalars_keep_their_type(self):
        keys = [self.key(x) for x in (1, 1.0, True, "1", None, (1,), [1], (1, 1), 2, -1)]
        self.assertTrue(all(isinstance(k, bytes) for k in keys))
        self.assertEqual(len(set(keys)), len(keys))
        self.assertEqual(self.key("varlen", 3, 0.5, (4, -1)), self.key("varlen", 3, 0.5, (4, -1)))

    def test_tensor_metadata(self):
        at = 0x7f0000001000
        t, same = Tensor(at, (8, 32, 128), (4096, 128, 1)), Tensor(at, (8, 32, 128), (4096, 128, 1))
        self.assertEqual(self.key(t), self.key(same))
        others = [Tensor(at + 64, (8, 32, 128), (4096, 128, 1)), Tensor(at, (8, 32, 64), (2048, 64, 1)),
                  Tensor(at, (8, 32, 128), (8192, 128, 1)), Tensor(at, (8, 32, 128), (8192, 256, 1)),
                  Tensor(at, (8, 32, 128), (4096, 128, 1), "fp16")]
        self.assertEqual(len({self.key(t)} | {self.key(o) for o in others}), 6)
        self.assertEqual(self.key((t, same)), self.key((same, t)))  # a (k, v) cache tuple

    def test_what_cannot_key_a_call(self):
        class Sub(Tensor):
            pass
        for x in (object(), Sub(1, (1,), (1,)), 1 << 70, {"a": 1}, (object(),)):
            self.assertIsNone(self.key("op", x), x)
        self.assertIsNone(fast.key(None, Tensor(1, (1,), (1,))))  # no tensor type: tensors are not keyed


@unittest.skipIf(fast is None, "attnc._fast is not built (no Python headers)")
class Replay(unittest.TestCase):
    def setUp(self):
        self.table, self.allocated, self.streams = {}, [], []

        def alloc(shape, dtype, device):
            self.allocated.append((shape, dtype, device))
            return Tensor(0x1000 * len(self.allocated), shape, (1,))

        def stream(device):
            self.streams.append(device)
            return 0

        fast.init(Tensor, self.table, stream, _capi.check, alloc)

    def tearDown(self):
        if _memo._fast is not None:  # give the drop-ins their own setup back
            _memo._fast_path()

    def test_miss_then_replay_through_the_library(self):
        q = Tensor(0x7f0000001000, (8, 32, 128), (4096, 128, 1))
        key = fast.run("varlen", q, 1, None)
        self.assertIsInstance(key, bytes)
        run = ctypes.cast(_capi.lib().attnc_attention_run, ctypes.c_void_p).value
        call = _capi.new_struct(_capi.Call, _capi.lib().attnc_call_init)
        o, lse = _capi.Call.o.offset, _capi.Call.lse.offset
        fast.remember(fast.Entry(key, run, 0, bytes(call), 3, None, o, lse, -1, -1, (8, 32, 128), "bf16", (32, 8)))
        self.assertEqual(len(self.table), 1)
        with self.assertRaises(_capi.AttncError) as e:  # the null handle, as the library reports it
            fast.run("varlen", q, 1, None)
        self.assertEqual(e.exception.code, _capi.ERR_INVALID_ARGUMENT)
        self.assertEqual(self.allocated, [((8, 32, 128), "bf16", 3), ((32, 8), None, 3)])
        self.assertEqual(self.streams, [3])
        self.assertIsInstance(fast.run("varlen", q, 2, None), bytes)  # another scalar: a miss

    def test_a_colliding_hash_is_a_miss(self):
        """The table is keyed by a 64-bit hash of the key; an entry under the same hash with
        another key (a collision) is never replayed."""
        run = ctypes.cast(_capi.lib().attnc_attention_run, ctypes.c_void_p).value
        key = fast.run("merge", 1)
        fast.remember(fast.Entry(key, run, 0, b"\0" * 16, 0, None, -1, -1, -1, -1, None, None, None))
        (h,) = self.table
        self.table[h] = fast.Entry(key + b"!", run, 0, b"\0" * 16, 0, None, -1, -1, -1, -1, None, None, None)
        self.assertEqual(fast.run("merge", 1), key)  # a miss: the key again, nothing run
        self.assertEqual(self.streams, [])

    def test_entry_checks_its_offsets(self):
        with self.assertRaises(ValueError):
            fast.Entry(b"k", 1, 0, b"\0" * 16, 0, None, 12, -1, -1, -1, None, None, None)
        with self.assertRaises(ValueError):  # an allocated out needs its field
            fast.Entry(b"k", 1, 0, b"\0" * 16, 0, None, -1, -1, -1, -1, (1,), None, None)
        with self.assertRaises(ValueError):
            fast.Entry(b"k", 0, 0, b"", 0, None, -1, -1, -1, -1, None, None, None)


_I32P, _I64P = ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(ctypes.c_int64)
_GET_I32 = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, _I32P)
_GET_I64 = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, _I64P)
_GET_PTR = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p))
_GET_I64S = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.POINTER(_I64P))
STRIDED, SPARSE, OFFSET = 0, 1, 16


class ShimTensor(Tensor):
    """A tensor that the stand-in shim reads (its Python API reads the same values)."""
    __slots__ = ("ptr", "shape", "strides", "dtype", "layout", "fail", "c_sizes", "c_strides")

    def __init__(self, ptr, shape, stride, dtype=15, layout=STRIDED, fail=False):
        super().__init__(ptr, shape, stride, dtype)
        self.layout, self.fail = layout, fail
        self.c_sizes = (ctypes.c_int64 * max(1, len(shape)))(*shape)
        self.c_strides = (ctypes.c_int64 * max(1, len(stride)))(*stride)


class StandInShim:
    """aoti_torch_get_{layout,dtype,data_ptr,dim,sizes,strides} over ShimTensors: the handle C
    passes is the object's address + OFFSET, as torch's is its at::Tensor field."""

    def __init__(self):
        self.objects, self.reads = {}, 0

        def getter(kind, read):
            def get(handle, ret):
                t = self.objects[handle - OFFSET]
                self.reads += 1
                if t.fail:
                    return 1
                ret[0] = read(t)
                return 0
            return kind(get)

        self.fns = [getter(_GET_I32, lambda t: t.layout), getter(_GET_I32, lambda t: t.dtype),
                    getter(_GET_PTR, lambda t: t.ptr), getter(_GET_I64, lambda t: len(t.shape)),
                    getter(_GET_I64S, lambda t: ctypes.cast(t.c_sizes, _I64P)),
                    getter(_GET_I64S, lambda t: ctypes.cast(t.c_strides, _I64P))]

    def tensor(self, *args, **kw):
        t = ShimTensor(*args, **kw)
        self.objects[id(t)] = t
        return t

    def addresses(self):
        return [ctypes.cast(f, ctypes.c_void_p).value for f in self.fns]


@unittest.skipIf(fast is None, "attnc._fast is not built (no Python headers)")
class TensorsThroughTheShim(unittest.TestCase):
    """fast.c reading tensors of the type given to tensor_abi() through its shim functions."""

    def setUp(self):
        self.shim = StandInShim()
        fast.tensor_abi(ShimTensor, OFFSET, STRIDED, *self.shim.addresses())

    def tearDown(self):
        fast.tensor_abi(None)
        if _memo._fast is not None:  # give the drop-ins their own setup back
            _memo._fast_path()

    def test_metadata_and_keys(self):
        at = 0x7f0000001000
        t = self.shim.tensor(at, (8, 32, 128), (4096, 128, 1))
        self.assertEqual(fast.tensor_meta(t), (at, 15, (8, 32, 128), (4096, 128, 1)))
        self.assertEqual(self.shim.reads, 6)
        key = fast.key(ShimTensor, t)
        self.assertEqual(fast.key(ShimTensor, self.shim.tensor(at, (8, 32, 128), (4096, 128, 1))), key)
        others = [self.shim.tensor(at + 64, (8, 32, 128), (4096, 128, 1)),
                  self.shim.tensor(at, (8, 32, 64), (4096, 128, 1)),
                  self.shim.tensor(at, (8, 32, 128), (4096, 128, 2)),
                  self.shim.tensor(at, (8, 32, 128), (4096, 128, 1), dtype=5),
                  self.shim.tensor(at, (8, 4096), (4096, 1))]
        self.assertEqual(len({key} | {fast.key(ShimTensor, o) for o in others}), 6)
        scalar = self.shim.tensor(at, (), ())
        self.assertEqual(fast.tensor_meta(scalar), (at, 15, (), ()))

    def test_what_the_shim_does_not_read_takes_the_python_api(self):
        at = 0x7f0000001000
        python_api = fast.key(Tensor, Tensor(at, (4, 8), (8, 1), 15))
        for t in (self.shim.tensor(at, (4, 8), (8, 1), layout=SPARSE), self.shim.tensor(at, (4, 8), (8, 1), fail=True)):
            self.assertIsNone(fast.tensor_meta(t))
            self.assertEqual(fast.key(ShimTensor, t), python_api)
        class Sub(ShimTensor):
            __slots__ = ()
        sub = Sub(at, (4, 8), (8, 1))
        self.shim.objects[id(sub)] = sub
        reads = self.shim.reads
        self.assertIsNone(fast.tensor_meta(sub))  # only the exact type is read through the shim
        self.assertEqual(self.shim.reads, reads)
        fast.tensor_abi(None)
        self.assertIsNone(fast.tensor_meta(self.shim.tensor(at, (4, 8), (8, 1))))

    def test_tensor_abi_checks_its_arguments(self):
        fns = self.shim.addresses()
        with self.assertRaises(ValueError):  # past the object
            fast.tensor_abi(ShimTensor, ShimTensor.__basicsize__, STRIDED, *fns)
        with self.assertRaises(ValueError):  # inside the object header
            fast.tensor_abi(ShimTensor, 8, STRIDED, *fns)
        with self.assertRaises(ValueError):
            fast.tensor_abi(ShimTensor, OFFSET, STRIDED, *fns[:5], 0)
        with self.assertRaises(TypeError):
            fast.tensor_abi(ShimTensor, OFFSET)


try:
    _torch = importlib.import_module("torch") if importlib.util.find_spec("torch") else None
except ImportError:
    _torch = None


@unittest.skipIf(fast is None or _torch is None, "needs attnc._fast and torch")
class TorchShim(unittest.TestCase):
    """attnc/_torch_shim.py against the installed torch: its offset and shim checked, then tensors
    read through it equal their Python API's values (the GPU machine's torch takes this path)."""

    def setUp(self):
        from attnc import _torch_shim
        self.shim = _torch_shim
        self.raw_stream = _memo._raw_stream or (lambda device: 0)

    def tearDown(self):
        if _memo._fast is not None:
            _memo._fast_path()

    def test_tensors_read_through_the_shim(self):
        torch = _torch
        tensors, stream = self.shim.enable(fast, torch, self.raw_stream)
        self.assertTrue(tensors, "torch's shim or its tensor layout did not check out: the slower path reads")
        self.assertEqual(stream, torch.cuda.is_available())
        base = torch.randn(6, 4, 8, dtype=torch.bfloat16)
        for t in (base, base[1:], base.transpose(1, 2), base[:, :, ::2], base.view(6, 32), base[0, 0, 0],
                  torch.empty(3, 1, 8, dtype=torch.int32).expand(3, 5, 8)):
            ptr, _, shape, stride = fast.tensor_meta(t)
            self.assertEqual((ptr, shape, stride), (t.data_ptr(), tuple(t.shape), t.stride()))
        self.assertNotEqual(fast.tensor_meta(base)[1], fast.tensor_meta(base.half())[1])
        self.assertNotEqual(fast.key(torch.Tensor, base[:, :, :4]), fast.key(torch.Tensor, base[:, :, :4].contiguous()))
        self.assertIsNone(fast.tensor_meta(base.to_sparse()))  # not strided: the Python API reads it

        class Sub(torch.Tensor):
            pass
        self.assertIsNone(fast.tensor_meta(base.as_subclass(Sub)))

    def test_switched_off(self):
        os.environ["ATTNC_NO_TORCH_SHIM"] = "1"
        try:
            self.assertEqual(self.shim.enable(fast, _torch, self.raw_stream), (False, False))
            self.assertIsNone(fast.tensor_meta(_torch.zeros(2)))
        finally:
            del os.environ["ATTNC_NO_TORCH_SHIM"]

    @unittest.skipUnless(_torch is not None and _torch.cuda.is_available(), "needs a GPU")
    def test_stream_follows_torch(self):
        get = self.shim.stream_getter(_torch)
        self.assertIsNotNone(get)
        device = _torch.cuda.current_device()
        side = _torch.cuda.Stream()
        for s in (_torch.cuda.current_stream(), side):
            with _torch.cuda.stream(s):
                self.assertEqual(self.shim.current_stream(get, device), s.cuda_stream)


if __name__ == "__main__":
    unittest.main()
