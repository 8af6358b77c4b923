"""Code written for vllm_flash_attn, run on attnc by changing its imports.

`forward` below is the body of vLLM's FlashAttentionImpl.forward (V1, no cascade): write the new
tokens' K/V into the paged cache, then one flash_attn_varlen_func over the mixed batch of decode
and prefill requests, with vLLM's keywords. Only the import block differs from vLLM's code.

    python3 examples/swap_vllm_flash_attn.py
"""
import os
import sys
from dataclasses import dataclass

import torch

try:  # vLLM's own kernels where installed ...
    from vllm import _custom_ops as ops
    from vllm.vllm_flash_attn import flash_attn_varlen_func
    BACKEND = "vllm_flash_attn"
except ImportError:  # ... else attnc's drop-ins, with the same signatures
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import attnc.vllm as ops
    from attnc.vllm import flash_attn_varlen_func
    BACKEND = "attnc"


@dataclass
class Metadata:  # the fields of vLLM's FlashAttentionMetadata that forward reads
    num_actual_tokens: int
    max_query_len: int
    query_start_loc: torch.Tensor
    max_seq_len: int
    seq_lens: torch.Tensor
    block_table: torch.Tensor
    slot_mapping: torch.Tensor


def forward(query, key, value, kv_cache, attn_metadata, output, scale, sliding_window=None, logits_soft_cap=0.0):
    """As vLLM: kv_cache [2, num_blocks, block_size, num_kv_heads, head_size]."""
    key_cache, value_cache = kv_cache.unbind(0)
    ops.reshape_and_cache_flash(key, value, key_cache, value_cache, attn_metadata.slot_mapping, "auto",
                                torch.tensor(1.0, device=key.device), torch.tensor(1.0, device=key.device))
    n = attn_metadata.num_actual_tokens
    window = (-1, -1) if sliding_window is None else (sliding_window - 1, 0)
    descale_shape = (attn_metadata.query_start_loc.shape[0] - 1, key.shape[1])
    one = torch.ones(1, 1, device=key.device)  # layer._q_scale etc.: 1 unless the cache is fp8
    flash_attn_varlen_func(q=query[:n], k=key_cache, v=value_cache, out=output[:n],
                           cu_seqlens_q=attn_metadata.query_start_loc, max_seqlen_q=attn_metadata.max_query_len,
                           seqused_k=attn_metadata.seq_lens, max_seqlen_k=attn_metadata.max_seq_len,
                           softmax_scale=scale, causal=True, alibi_slopes=None, window_size=window,
                           block_table=attn_metadata.block_table, softcap=logits_soft_cap, scheduler_metadata=None,
                           fa_version=3, q_descale=one.expand(descale_shape), k_descale=one.expand(descale_shape),
                           v_descale=one.expand(descale_shape), num_splits=0, s_aux=None)
    return output


def main():
    dev, dt = torch.device("cuda"), torch.bfloat16
    heads, kv_heads, head_size, block_size, num_blocks = 8, 2, 128, 16, 1024
    # Two decode requests (1 new token) and one chunked prefill (64 new tokens), vLLM's order.
    context = [700, 20, 0]
    new = [1, 1, 64]
    seq_lens = [c + n for c, n in zip(context, new)]
    kv_cache = torch.randn(2, num_blocks, block_size, kv_heads, head_size, dtype=dt, device=dev)  # vLLM's layout
    width = max(seq_lens) // block_size + 1
    block_table = torch.randperm(num_blocks, device=dev)[:3 * width].to(torch.int32).view(3, width)
    positions = torch.cat([torch.arange(c, c + n) for c, n in zip(context, new)]).to(dev)
    req = torch.repeat_interleave(torch.arange(3, device=dev), torch.tensor(new, device=dev))
    slots = block_table[req, positions // block_size].long() * block_size + positions % block_size
    tokens = sum(new)
    md = Metadata(tokens, max(new), torch.tensor([0, 1, 2, tokens], dtype=torch.int32, device=dev), max(seq_lens),
                  torch.tensor(seq_lens, dtype=torch.int32, device=dev), block_table, slots)
    query = torch.randn(tokens + 6, heads, head_size, dtype=dt, device=dev)  # padded as under CUDA graphs
    key, value = (torch.randn(tokens + 6, kv_heads, head_size, dtype=dt, device=dev) for _ in range(2))
    output = torch.zeros(tokens + 6, heads, head_size, dtype=dt, device=dev)
    forward(query, key, value, kv_cache, md, output, head_size ** -0.5)
    # Check request 2 (the prefill) against torch's attention over its cache contents.
    kc, vc = kv_cache[0][block_table[2].long()].flatten(0, 1), kv_cache[1][block_table[2].long()].flatten(0, 1)
    k = kc[:seq_lens[2]].repeat_interleave(heads // kv_heads, 1).transpose(0, 1)
    v = vc[:seq_lens[2]].repeat_interleave(heads // kv_heads, 1).transpose(0, 1)
    q = query[2:tokens].transpose(0, 1)
    mask = torch.ones(64, seq_lens[2], dtype=torch.bool, device=dev).tril(seq_lens[2] - 64)
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=mask)
    diff = (output[2:tokens].float() - ref.transpose(0, 1)).abs().max().item()
    print(f"swap_vllm_flash_attn: {BACKEND}: {tokens} tokens of 3 requests; prefill vs torch max |diff| {diff:.3g}")
    assert diff < 3e-2


if __name__ == "__main__":
    main()
