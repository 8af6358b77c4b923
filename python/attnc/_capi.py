"""ctypes bindings of libattnc.so (include/attnc.h): structs, prototypes, and the library search.

The library is found via $ATTNC_LIB (the .so, or a folder holding it), else inside this package
(lib/libattnc.so, where the wheel puts it), else in build/runtime/ and build-portable/runtime/ of the
repository this package sits in. NVRTC, which it links, is loaded first where the build says which
one (_build_config.py, written by the wheel's CMake install; _nvrtc.py says where it looks).
"""
import ctypes
import os

from . import _nvrtc

try:
    from . import _build_config
except ImportError:  # a source checkout: the build tree's libattnc.so finds NVRTC through its RPATH
    _build_config = None

c_int, c_ll, c_float, c_size_t, c_char_p, c_void_p = (ctypes.c_int, ctypes.c_longlong, ctypes.c_float,
                                                      ctypes.c_size_t, ctypes.c_char_p, ctypes.c_void_p)
c_int_p = ctypes.POINTER(c_int)

OK, ERR_INVALID_ARGUMENT, ERR_SPEC, ERR_NOT_SUPPORTED, ERR_BAD_CALL, ERR_NO_JIT, ERR_COMPILE, ERR_NO_GPU, \
    ERR_CUDA, ERR_BUFFER_TOO_SMALL, ERR_DISPATCH, ERR_INTERNAL = range(12)

KINDS = {"prefill": 0, "prefill_paged": 1, "decode": 2}
DTYPES = {None: -1, "bf16": 0, "fp16": 1}
ORIGINS = ["memory", "tuned", "heuristic", "fallback"]


class Options(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("db", c_char_p), ("device", c_int), ("use_tuning", c_int),
                ("no_jit", c_int), ("background_compile", c_int), ("device_name", c_char_p),
                ("device_arch", c_char_p), ("device_sm_count", c_int), ("device_driver_version", c_int)]


class Call(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("kind", c_int), ("dtype", c_int),
                ("num_q_heads", c_int), ("num_kv_heads", c_int), ("head_dim", c_int), ("head_dim_v", c_int),
                ("q", c_void_p), ("k", c_void_p), ("v", c_void_p), ("o", c_void_p), ("lse", c_void_p),
                ("cu_seqlens_q", c_void_p), ("cu_seqlens_k", c_void_p),
                ("batch", c_int), ("max_seqlen_q", c_int), ("total_q", c_int), ("max_seqlen_k", c_int),
                ("q_row_stride", c_ll), ("q_head_stride", c_ll),
                ("k_row_stride", c_ll), ("k_head_stride", c_ll), ("k_block_stride", c_ll),
                ("v_row_stride", c_ll), ("v_head_stride", c_ll), ("v_block_stride", c_ll),
                ("o_row_stride", c_ll), ("o_head_stride", c_ll),
                ("page_size", c_int), ("num_blocks", c_int), ("block_table", c_void_p),
                ("block_table_stride", c_ll), ("max_blocks_per_seq", c_int), ("seqused_k", c_void_p),
                ("kv_indptr", c_void_p), ("kv_indices", c_void_p), ("kv_last_page_len", c_void_p),
                ("softmax_scale", c_float), ("softcap", c_float), ("window_left", c_int), ("window_right", c_int),
                ("alibi_slopes", c_void_p), ("alibi_batch_stride", c_ll), ("sinks", c_void_p),
                ("num_splits", c_int), ("workspace", c_void_p), ("workspace_bytes", c_size_t),
                ("total_k", c_int),
                ("q_pe", c_void_p), ("q_pe_row_stride", c_ll), ("q_pe_head_stride", c_ll),
                ("k_scale", c_void_p), ("v_scale", c_void_p), ("k_descale", c_void_p), ("v_descale", c_void_p),
                ("k_descale_batch_stride", c_ll), ("k_descale_head_stride", c_ll),
                ("v_descale_batch_stride", c_ll), ("v_descale_head_stride", c_ll),
                ("q_scale", c_void_p), ("q_scale_row_stride", c_ll), ("q_scale_head_stride", c_ll),
                ("k_token_scale", c_void_p), ("v_channel_scale", c_void_p),
                ("seqlen_k_sum", c_ll)]


class Selection(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("num_splits", c_int), ("origin", c_int), ("cached", c_int),
                ("kernel_loaded", c_int), ("block_m", c_int), ("block_n", c_int), ("warps", c_int),
                ("stages", c_int)]


class Merge(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("output", c_void_p), ("prefix_output", c_void_p),
                ("prefix_lse", c_void_p), ("suffix_output", c_void_p), ("suffix_lse", c_void_p),
                ("output_lse", c_void_p), ("num_tokens", c_int), ("num_heads", c_int), ("head_size", c_int)] + [
        (n, c_ll) for n in ("output_row_stride", "output_head_stride", "prefix_row_stride", "prefix_head_stride",
                            "suffix_row_stride", "suffix_head_stride", "prefix_lse_token_stride",
                            "prefix_lse_head_stride", "suffix_lse_token_stride", "suffix_lse_head_stride",
                            "output_lse_token_stride", "output_lse_head_stride")] + [("lse_base", c_int)]


class LseCorrect(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("output", c_void_p), ("partial", c_void_p), ("lses", c_void_p),
                ("output_lse", c_void_p)] + [
        (n, c_int) for n in ("num_tokens", "num_heads", "head_size", "world_size", "rank", "heads_per_chunk")] + [
        (n, c_ll) for n in ("output_row_stride", "output_head_stride", "output_chunk_stride", "partial_row_stride",
                            "partial_head_stride", "lses_rank_stride", "lses_token_stride", "lses_head_stride",
                            "output_lse_token_stride", "output_lse_head_stride")] + [("lse_base", c_int)]


class CacheWrite(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("key", c_void_p), ("value", c_void_p), ("key_cache", c_void_p),
                ("value_cache", c_void_p), ("slot_mapping", c_void_p), ("k_scale", c_void_p), ("v_scale", c_void_p),
                ("per_head_scale", c_int), ("num_tokens", c_int), ("num_kv_heads", c_int), ("head_size", c_int),
                ("key_row_stride", c_ll), ("key_head_stride", c_ll), ("value_row_stride", c_ll),
                ("value_head_stride", c_ll), ("block_size", c_int), ("num_blocks", c_int)] + [
        (n, c_ll) for n in ("key_cache_block_stride", "key_cache_page_stride", "key_cache_head_stride",
                            "value_cache_block_stride", "value_cache_page_stride", "value_cache_head_stride")] + [
        ("host_slot_mapping", c_void_p), ("key_scale_cache", c_void_p)]


class Cascade(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("query", c_void_p), ("key_cache", c_void_p), ("value_cache", c_void_p),
                ("output", c_void_p)] + [
        (n, c_ll) for n in ("q_row_stride", "q_head_stride", "o_row_stride", "o_head_stride", "k_row_stride",
                            "k_head_stride", "k_block_stride", "v_row_stride", "v_head_stride", "v_block_stride")] + [
        ("page_size", c_int), ("num_blocks", c_int), ("num_tokens", c_int), ("num_reqs", c_int),
        ("cu_query_lens", c_void_p), ("max_query_len", c_int), ("cu_prefix_query_lens", c_void_p),
        ("prefix_kv_lens", c_void_p), ("suffix_kv_lens", c_void_p), ("common_prefix_len", c_int),
        ("max_kv_len", c_int), ("block_table", c_void_p), ("block_table_stride", c_ll),
        ("max_blocks_per_seq", c_int), ("softmax_scale", c_float), ("softcap", c_float), ("sinks", c_void_p),
        ("workspace", c_void_p), ("workspace_bytes", c_size_t), ("host_cu_query_lens", c_void_p),
        ("host_suffix_kv_lens", c_void_p), ("host_block_table", c_void_p)]


LSE_BASES = {None: 0, "e": 1, "2": 2}


class AttncError(RuntimeError):
    """An attnc call failed; .code is the attnc_status, the message says what and why."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def _candidates():
    env = os.environ.get("ATTNC_LIB")
    if env:
        yield os.path.join(env, "libattnc.so") if os.path.isdir(env) else env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "lib", "libattnc.so")
    yield os.path.join(here, "libattnc.so")
    yield os.path.join(os.path.dirname(here), "libattnc.so")
    repo = os.path.dirname(os.path.dirname(here))
    for build in ("build", "build-portable"):
        yield os.path.join(repo, build, "runtime", "libattnc.so")


_lib = None
_nvrtc_dir = None


def nvrtc_dir():
    """Loads the NVRTC this build links (once); returns its folder ('' when the loader found it by
    itself or the build does not say which NVRTC it needs). Raises _nvrtc.NvrtcNotFound."""
    global _nvrtc_dir
    if _nvrtc_dir is None:
        _nvrtc_dir = _nvrtc.load(_build_config.NVRTC_SONAME) if _build_config else ""
    return _nvrtc_dir


def lib():
    """The loaded library with prototypes set (loaded once)."""
    global _lib
    if _lib is not None:
        return _lib
    tried = []
    for path in _candidates():
        tried.append(path)
        if os.path.exists(path):
            nvrtc_dir()
            _lib = ctypes.CDLL(path)
            break
    else:
        raise OSError("attnc: libattnc.so not found; set ATTNC_LIB to its path (tried: " + ", ".join(tried) + ")")
    L = _lib
    H = c_void_p
    proto = {
        "attnc_version": (c_char_p, []),
        "attnc_last_error": (c_char_p, []),
        "attnc_options_init": (c_int, [ctypes.POINTER(Options)]),
        "attnc_call_init": (c_int, [ctypes.POINTER(Call)]),
        "attnc_attention_create_from_file": (c_int, [c_char_p, ctypes.POINTER(Options), ctypes.POINTER(H)]),
        "attnc_attention_create_from_yaml": (c_int, [c_char_p, ctypes.POINTER(Options), ctypes.POINTER(H)]),
        "attnc_attention_destroy": (None, [H]),
        "attnc_attention_run": (c_int, [H, ctypes.POINTER(Call), c_void_p]),
        "attnc_attention_select": (c_int, [H, c_int, c_int, c_int, c_int, ctypes.POINTER(Selection),
                                           ctypes.c_char_p, c_size_t]),
        "attnc_attention_reserve": (c_int, [H, c_int, c_int, c_int, c_int]),
        "attnc_attention_reserve_bytes": (c_int, [H, c_size_t]),
        "attnc_attention_workspace_needed": (c_int, [H, c_int, c_int, c_int, c_int, ctypes.POINTER(c_size_t)]),
        "attnc_attention_prepare": (c_int, [H, c_int, c_int, c_int, c_int, c_int_p]),
        "attnc_attention_wait_background": (c_int, [H]),
        "attnc_attention_spec_json": (c_int, [H, ctypes.c_char_p, c_size_t]),
        "attnc_attention_warnings": (c_char_p, [H]),
        "attnc_attention_workspace_needed_splits": (c_int, [H, c_int, c_int, c_int, c_int, c_int,
                                                            ctypes.POINTER(c_size_t)]),
        "attnc_merge_init": (c_int, [ctypes.POINTER(Merge)]),
        "attnc_cache_write_init": (c_int, [ctypes.POINTER(CacheWrite)]),
        "attnc_lse_correct_init": (c_int, [ctypes.POINTER(LseCorrect)]),
        "attnc_attention_lse_correct": (c_int, [H, ctypes.POINTER(LseCorrect), c_void_p]),
        "attnc_attention_dcp_context_yaml": (c_int, [H, c_int, ctypes.c_char_p, c_size_t]),
        "attnc_dcp_local_seq_lens": (c_int, [c_int, c_int, c_int, c_int_p, c_int, c_int_p]),
        "attnc_cascade_init": (c_int, [ctypes.POINTER(Cascade)]),
        "attnc_attention_merge": (c_int, [H, ctypes.POINTER(Merge), c_void_p]),
        "attnc_attention_cache_write": (c_int, [H, ctypes.POINTER(CacheWrite), c_void_p]),
        "attnc_attention_cascade": (c_int, [H, ctypes.POINTER(Cascade), c_void_p]),
        "attnc_attention_cascade_workspace_needed": (c_int, [H, c_int, ctypes.POINTER(c_size_t)]),
    }
    for name, (res, args) in proto.items():
        f = getattr(L, name)
        f.restype, f.argtypes = res, args
    return L


def check(rc):
    """Raises AttncError with the library's message for a non-zero status."""
    if rc != OK:
        raise AttncError(rc, lib().attnc_last_error().decode("utf-8", "replace"))


def new_struct(cls, init):
    """A cls (Options or Call) with its defaults: struct_size first, then the library's init (attnc.h)."""
    s = cls()
    s.struct_size = ctypes.sizeof(cls)
    check(init(ctypes.byref(s)))
    return s
