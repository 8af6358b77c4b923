"""A serving engine's decode loop over a paged KV cache, with attnc's vLLM drop-ins.

Allocate the cache (get_kv_cache_shape), write each request's prompt K/V into its blocks
(reshape_and_cache_flash), then run decode steps the way a serving engine does: each step writes
the new token's K/V at its slot and decodes the ragged batch (flash_attn_varlen_func with
max_seqlen_q = 1 and per-request seqused_k). The step is captured once in a CUDA graph for the
batch and replayed with fresh inputs copied into its static buffers; the last step is checked
against an eager call. A model would compute q, k and v; here they are random.

    python3 examples/decode_loop.py [--steps 32]
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from attnc.vllm import flash_attn_varlen_func, get_kv_cache_shape, reshape_and_cache_flash  # noqa: E402

NUM_HEADS, NUM_KV_HEADS, HEAD_SIZE, BLOCK_SIZE = 8, 2, 128, 16
MAX_MODEL_LEN = 4096


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=32)
    args = ap.parse_args()
    dev, dt = torch.device("cuda"), torch.bfloat16
    prompts = [37, 1000, 2500, 5]
    batch = len(prompts)
    blocks_per_seq = MAX_MODEL_LEN // BLOCK_SIZE
    kv_cache = torch.zeros(get_kv_cache_shape(batch * blocks_per_seq, BLOCK_SIZE, NUM_KV_HEADS, HEAD_SIZE),
                           dtype=dt, device=dev)
    key_cache, value_cache = kv_cache.unbind(0)
    # Each request owns a run of blocks, handed out in a shuffled order as a block allocator would.
    block_table = torch.randperm(batch * blocks_per_seq, device=dev).to(torch.int32).view(batch, blocks_per_seq)

    def slots_of(positions):
        """slot_mapping (int64) of token `positions[r]` of each request r."""
        blk = block_table.gather(1, (positions // BLOCK_SIZE)[:, None].long())[:, 0].long()
        return blk * BLOCK_SIZE + positions % BLOCK_SIZE

    for r, n in enumerate(prompts):  # prefill's cache write: the prompt's K/V
        pos = torch.arange(n, device=dev)
        blk = block_table[r, pos // BLOCK_SIZE].long()
        k, v = (torch.randn(n, NUM_KV_HEADS, HEAD_SIZE, dtype=dt, device=dev) for _ in range(2))
        reshape_and_cache_flash(k, v, key_cache, value_cache, blk * BLOCK_SIZE + pos % BLOCK_SIZE, "auto", None, None)

    # The step's static buffers: what the graph reads and writes.
    seq_lens = torch.tensor(prompts, dtype=torch.int32, device=dev)
    q = torch.zeros(batch, NUM_HEADS, HEAD_SIZE, dtype=dt, device=dev)
    k_new, v_new = (torch.zeros(batch, NUM_KV_HEADS, HEAD_SIZE, dtype=dt, device=dev) for _ in range(2))
    slot_mapping = torch.zeros(batch, dtype=torch.int64, device=dev)
    query_start_loc = torch.arange(batch + 1, dtype=torch.int32, device=dev)
    out = torch.empty(batch, NUM_HEADS, HEAD_SIZE, dtype=dt, device=dev)

    def step(o):
        reshape_and_cache_flash(k_new, v_new, key_cache, value_cache, slot_mapping, "auto", None, None)
        flash_attn_varlen_func(q, key_cache, value_cache, 1, query_start_loc, MAX_MODEL_LEN, seqused_k=seq_lens,
                               block_table=block_table, causal=True, out=o)

    def next_inputs():
        seq_lens.add_(1)
        slot_mapping.copy_(slots_of(seq_lens.long() - 1))
        for t in (q, k_new, v_new):
            t.copy_(torch.randn_like(t))

    next_inputs()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step(out)  # warm-up outside capture: kernels loaded, workspace sized for the batch
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step(out)
    for _ in range(args.steps):
        next_inputs()
        graph.replay()
    eager = torch.empty_like(out)
    flash_attn_varlen_func(q, key_cache, value_cache, 1, query_start_loc, MAX_MODEL_LEN, seqused_k=seq_lens,
                           block_table=block_table, causal=True, out=eager)
    torch.cuda.synchronize()
    diff = (out.float() - eager.float()).abs().max().item()
    print(f"decode_loop: {args.steps} graph replays over {batch} requests, lengths now {seq_lens.tolist()}; "
          f"last step vs eager: max |diff| {diff:.3g}")
    assert diff == 0.0, "the replayed step differs from the eager call"


if __name__ == "__main__":
    main()
