"""attnc._fast (python/csrc/fast.c), the drop-ins' warm path in C, without a GPU: the keys it packs
from scalars and tensor metadata (through a stand-in tensor type), and a remembered call replayed
through the library's own function (a null handle, so the library's error comes back as AttncError)."""
import ctypes
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


if __name__ == "__main__":
    unittest.main()
