"""torch custom ops over attnc.vllm (torch.library.custom_op), imported when torch.compile traces a
drop-in call. Each op writes into tensors the caller allocated (out, lse), so its fake
implementation has nothing to compute: the compiled graph allocates the outputs itself, the op
is one node that mutates them, and CUDA-graph trees capture its launch like any kernel's. The
eager path never goes through here (a custom op's dispatch costs more than the whole attnc call).
"""
from typing import Optional

import torch
from torch import Tensor

from . import vllm as _v


@torch.library.custom_op("attnc::varlen_fwd", mutates_args=("out", "lse"), device_types="cuda")
def _varlen_fwd(q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor, cu_seqlens_q: Tensor,
                cu_seqlens_k: Optional[Tensor], seqused_k: Optional[Tensor], block_table: Optional[Tensor],
                alibi_slopes: Optional[Tensor], s_aux: Optional[Tensor], max_seqlen_q: int, max_seqlen_k: int,
                softmax_scale: Optional[float], causal: bool, window_left: int, window_right: int, softcap: float,
                num_splits: int, return_lse: bool, k_descale: Optional[Tensor] = None,
                v_descale: Optional[Tensor] = None) -> None:
    _v.varlen(q, k, v, max_seqlen_q, cu_seqlens_q, max_seqlen_k, cu_seqlens_k, seqused_k, softmax_scale,
              _v._mask(causal, (window_left, window_right)), softcap, alibi_slopes, block_table, return_lse, out,
              num_splits, s_aux, lse=lse if return_lse else None, descales=(k_descale, v_descale))


@_varlen_fwd.register_fake
def _(*args, **kwargs):
    return None


@torch.library.custom_op("attnc::kvcache_fwd", mutates_args=("out", "lse"), device_types="cuda")
def _kvcache_fwd(q: Tensor, k_cache: Tensor, v_cache: Tensor, out: Tensor, lse: Tensor, cache_seqlens: Tensor,
                 block_table: Tensor, alibi_slopes: Optional[Tensor], s_aux: Optional[Tensor],
                 softmax_scale: Optional[float], causal: bool, window_left: int, window_right: int, softcap: float,
                 num_splits: int, return_lse: bool, max_seqlen_k: int, k_descale: Optional[Tensor] = None,
                 v_descale: Optional[Tensor] = None) -> None:
    _v.with_kvcache(q, k_cache, v_cache, cache_seqlens, block_table, softmax_scale,
                    _v._mask(causal, (window_left, window_right)), softcap, alibi_slopes, num_splits, return_lse, out,
                    s_aux, max_seqlen_k, lse=lse if return_lse else None, descales=(k_descale, v_descale))


@_kvcache_fwd.register_fake
def _(*args, **kwargs):
    return None


@torch.library.custom_op("attnc::merge_attn_states", mutates_args=("output", "output_lse"), device_types="cuda")
def _merge(output: Tensor, prefix_output: Tensor, prefix_lse: Tensor, suffix_output: Tensor, suffix_lse: Tensor,
           output_lse: Optional[Tensor]) -> None:
    _v.merge_attn_states(output, prefix_output, prefix_lse, suffix_output, suffix_lse, output_lse)


@_merge.register_fake
def _(*args, **kwargs):
    return None


@torch.library.custom_op("attnc::reshape_and_cache_flash", mutates_args=("key_cache", "value_cache"),
                         device_types="cuda")
def _cache_write(key: Tensor, value: Tensor, key_cache: Tensor, value_cache: Tensor, slot_mapping: Tensor,
                 kv_cache_dtype: str, k_scale: Optional[Tensor], v_scale: Optional[Tensor]) -> None:
    _v.reshape_and_cache_flash(key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype, k_scale, v_scale)


@_cache_write.register_fake
def _(*args, **kwargs):
    return None


def _window(window_size):
    return (-1, -1) if window_size is None else (int(window_size[0]), int(window_size[1]))


def varlen(q, k, v, max_seqlen_q, cu_seqlens_q, max_seqlen_k, cu_seqlens_k, seqused_k, softmax_scale, causal,
           window_size, softcap, alibi_slopes, block_table, return_lse, out, num_splits, s_aux, k_descale=None,
           v_descale=None):
    total_q, hq = q.shape[0], q.shape[1]
    if out is None:
        out = q.new_empty((total_q, hq, v.shape[-1]))  # q's dtype (16-bit)
    lse = q.new_empty((hq, total_q) if return_lse else (0,), dtype=torch.float32)
    wl, wr = _window(window_size)
    torch.ops.attnc.varlen_fwd(q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, seqused_k, block_table, alibi_slopes,
                               s_aux, int(max_seqlen_q), int(max_seqlen_k),
                               None if softmax_scale is None else float(softmax_scale), bool(causal), wl, wr,
                               float(softcap or 0.0), int(num_splits or 0), bool(return_lse), k_descale, v_descale)
    return (out, lse) if return_lse else out


def with_kvcache(q, k_cache, v_cache, cache_seqlens, block_table, softmax_scale, causal, window_size, softcap,
                 alibi_slopes, num_splits, return_lse, out, s_aux, max_seqlen_k, k_descale=None, v_descale=None):
    b, sq, hq = q.shape[0], q.shape[1], q.shape[2]
    if out is None:
        out = q.new_empty((b, sq, hq, v_cache.shape[-1]))
    lse = q.new_empty((b * sq, hq) if return_lse else (0,), dtype=torch.float32)
    wl, wr = _window(window_size)
    torch.ops.attnc.kvcache_fwd(q, k_cache, v_cache, out, lse, cache_seqlens, block_table, alibi_slopes, s_aux,
                                None if softmax_scale is None else float(softmax_scale), bool(causal), wl, wr,
                                float(softcap or 0.0), int(num_splits or 0), bool(return_lse), int(max_seqlen_k),
                                k_descale, v_descale)
    return (out, lse.view(b, sq, hq).transpose(1, 2)) if return_lse else out


def merge(output, prefix_output, prefix_lse, suffix_output, suffix_lse, output_lse):
    torch.ops.attnc.merge_attn_states(output, prefix_output, prefix_lse, suffix_output, suffix_lse, output_lse)


def cache_write(key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype, k_scale, v_scale):
    torch.ops.attnc.reshape_and_cache_flash(key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype,
                                            k_scale, v_scale)
