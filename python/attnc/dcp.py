"""Decode context parallelism (DCP) over torch.distributed (docs/dcp.md; attention-semantics.md §9).

N ranks (one per GPU, a NCCL process group) each hold an interleaved shard of every request's KV
cache: token t lives on rank (t // I) % N (I = interleave_size). A decode step is vLLM's:

  1. all-gather the ranks' query heads (each rank has H_local; the context pass runs N * H_local),
  2. decode over the local shard with the LSE out (the context layer: no mask, as every context
     token precedes the new tokens),
  3. all-gather the LSEs, then attnc's lse_correct: the LSE over all ranks and each partial
     rescaled by exp(lse_rank - lse), written in the reduce-scatter's layout (no transposing copy),
  4. reduce-scatter over heads: rank r gets its H_local heads summed over the N shards,
  5. optionally merge with the new tokens' pass (merge_attn_states) on the rank's own layer.

    dcp = attnc.dcp.DcpAttention("specs/llama-3-8b.yaml", interleave_size=16)  # inside each rank
    out, lse = dcp.decode(q, k_cache, v_cache, block_table, context_lens, max_context_len,
                          new_out=new_out, new_lse=new_lse)

An MLA layer (an `mla:` spec) steps with dcp.mla_decode(q, kv_cache, block_table, context_lens,
max_context_len, softmax_scale): the absorbed decode over the rank's latent shard (V = 512 wide),
then the same correction and merge. A step never synchronises with the host: after one eager step
of the shape (kernels loaded) and dcp.reserve(...), it can be captured in a CUDA graph and replayed
on fresh inputs (torch's NCCL collectives are capturable).

The shard arithmetic below works on ints and on torch integer tensors alike.
"""
from .attention import Attention


def _check(world_size, interleave_size, rank=None):
    if int(world_size) < 1:
        raise ValueError(f"world_size must be >= 1, got {world_size}")
    if int(interleave_size) < 1:
        raise ValueError(f"interleave_size must be >= 1, got {interleave_size}")
    if rank is not None and not 0 <= int(rank) < int(world_size):
        raise ValueError(f"rank must be in [0, world_size = {world_size}), got {rank}")


def rank_of(t, world_size, interleave_size=1):
    """The rank holding token t."""
    _check(world_size, interleave_size)
    return (t // interleave_size) % world_size


def local_index(t, world_size, interleave_size=1):
    """Token t's index in its rank's cache."""
    _check(world_size, interleave_size)
    return t // (world_size * interleave_size) * interleave_size + t % interleave_size


def global_position(j, rank, world_size, interleave_size=1):
    """The token at local index j of `rank` (the inverse of rank_of and local_index)."""
    _check(world_size, interleave_size, rank)
    return j // interleave_size * world_size * interleave_size + rank * interleave_size + j % interleave_size


def local_seq_lens(seq_lens, world_size, rank, interleave_size=1):
    """How many of each request's seq_lens tokens `rank` holds (vLLM's get_dcp_local_seq_lens)."""
    _check(world_size, interleave_size, rank)
    base = seq_lens // interleave_size // world_size * interleave_size
    extra = seq_lens - base * world_size - rank * interleave_size
    if isinstance(extra, int):
        return base + min(max(extra, 0), interleave_size)
    return base + extra.clamp(0, interleave_size)


def max_local_seq_len(max_seq_len, world_size, interleave_size=1):
    """An upper bound of every rank's local length for requests up to max_seq_len tokens, without
    reading the lengths: ceil(max_seq_len / (N * I)) * I (vLLM's max_dcp_context_kv_len)."""
    _check(world_size, interleave_size)
    round_ = world_size * interleave_size
    return (int(max_seq_len) + round_ - 1) // round_ * interleave_size


class TorchCollectives:
    """The two collectives a step needs, over a torch.distributed process group (NCCL; None: the
    default group), on the current stream."""

    def __init__(self, group=None):
        import torch.distributed as dist
        self.group, self._dist = group, dist
        self.world_size, self.rank = dist.get_world_size(group), dist.get_rank(group)

    def all_gather_into_tensor(self, out, inp):
        self._dist.all_gather_into_tensor(out, inp, group=self.group)

    def reduce_scatter_tensor(self, out, inp):
        """Sums inp [N, ...] over the ranks; rank r gets chunk r."""
        self._dist.reduce_scatter_tensor(out, inp, op=self._dist.ReduceOp.SUM, group=self.group)


class DcpAttention:
    """One rank's decode context parallel layer: `spec` is the rank's own layer (H_local query
    heads; the KV heads every rank of the group holds), `group` a torch.distributed process group
    (None: the default group), interleave_size vLLM's cp_kv_cache_interleave_size. `collectives`
    replaces the group: any object with world_size, rank, all_gather_into_tensor(out, inp) and
    reduce_scatter_tensor(out, inp) as TorchCollectives has (a test runs N ranks as threads on one
    GPU this way). Other keywords go to both attnc.Attention handles (db, device, use_tuning, ...):
    `layer` (the spec itself: merge, and whatever the caller runs for the new tokens) and
    `context` (the shard pass)."""

    def __init__(self, spec, group=None, interleave_size=1, collectives=None, **options):
        self.comm = collectives if collectives is not None else TorchCollectives(group)
        self.group = group
        self.world_size, self.rank = int(self.comm.world_size), int(self.comm.rank)
        _check(self.world_size, interleave_size, self.rank)
        self.interleave_size = int(interleave_size)
        self.layer = Attention(spec, **options)
        self.context = Attention(self.layer.dcp_context_yaml(self.world_size), **options)

    def close(self):
        self.context.close()
        self.layer.close()

    def local_seq_lens(self, seq_lens):
        return local_seq_lens(seq_lens, self.world_size, self.rank, self.interleave_size)

    def max_local_seq_len(self, max_context_len):
        return max_local_seq_len(max_context_len, self.world_size, self.interleave_size)

    def reserve(self, batch, max_context_len, max_seqlen_q=1, max_num_splits=0):
        """Sizes the shard pass's split-KV workspace for every step up to batch requests of
        max_context_len tokens (over all ranks) and max_seqlen_q query tokens each. Call it before
        capturing a step in a CUDA graph: a step then allocates nothing outside torch's graph pool."""
        self.context.reserve(batch=batch, max_seqlen_k=self.max_local_seq_len(max_context_len),
                             max_seqlen_q=max_seqlen_q, max_num_splits=max_num_splits)

    def decode(self, q, k_cache, v_cache, block_table, context_lens, max_context_len, new_out=None, new_lse=None,
               out=None, out_lse=None, **extra):
        """q [num_tokens, H_local, D] (one token per request, or with cu_seqlens_q / max_seqlen_q in
        extra); k_cache / v_cache this rank's shard; context_lens int32 [batch]: each request's
        context length over all ranks (this rank's share is computed here); max_context_len: a
        bound of them (host int). Returns (out [num_tokens, H_local, Dv], lse [H_local, num_tokens]
        fp32): the attention over the whole context, merged with the new tokens' pass when new_out
        ([num_tokens, H_local, Dv]) and new_lse ([H_local, num_tokens]) are given. Other keywords go
        to the context layer's decode (softmax_scale, num_splits, ...). Every rank must call it.
        No host synchronisation: once a step of this shape has run (kernels loaded) and reserve()
        sized the workspace, a step can be captured in a CUDA graph (docs/dcp.md)."""
        self._check_step(q, new_out, new_lse)
        part, lse = self.context.decode(self._gather_heads(q), k_cache, v_cache, block_table,
                                        self.local_seq_lens(context_lens), self.max_local_seq_len(max_context_len),
                                        **extra)
        return self._combine(part, lse, q.shape[1], new_out, new_lse, out, out_lse)

    def mla_decode(self, q, kv_cache, block_table, context_lens, max_context_len, softmax_scale, q_pe=None,
                   new_out=None, new_lse=None, out=None, out_lse=None, **extra):
        """DCP over an MLA layer (attention-semantics.md §7.3, §9): the absorbed decode over this
        rank's shard of the latent cache, then the same correction and merge as decode(). q
        [num_tokens, H_local, 576], or q_nope [num_tokens, H_local, 512] with q_pe [.., 64] (joined
        here so one all-gather carries both); kv_cache this rank's latent shard [num_blocks,
        page_size, 576]; context_lens, max_context_len as decode(); softmax_scale the layer's.
        new_out [num_tokens, H_local, 512] and new_lse [H_local, num_tokens]: the new tokens' pass
        (e.g. self.layer.mla_decode over their latent rows). 1-2 query tokens per request go as
        cu_seqlens_q / max_seqlen_q in extra; other keywords (k_scale, k_descale, num_splits) go
        to the context layer's mla_decode. Returns (out [num_tokens, H_local, 512], lse)."""
        self._check_step(q, new_out, new_lse)
        if q_pe is not None:
            import torch
            q = torch.cat((q, q_pe), dim=-1)
        part, lse = self.context.mla_decode(self._gather_heads(q), kv_cache, block_table,
                                            self.local_seq_lens(context_lens),
                                            self.max_local_seq_len(max_context_len), softmax_scale, **extra)
        return self._combine(part, lse, q.shape[1], new_out, new_lse, out, out_lse)

    # --- the steps every rank runs

    def _check_step(self, q, new_out, new_lse):
        if q.shape[1] * self.world_size != self.context.spec["num_q_heads"]:
            raise ValueError(f"q has {q.shape[1]} heads; the layer has {self.layer.spec['num_q_heads']}")
        if (new_out is None) != (new_lse is None):
            raise ValueError("new_out and new_lse come together (the new tokens' pass and its LSE)")

    def _gather_heads(self, q):
        """The N ranks' query heads, rank-major: head r * H_local + j is rank r's head j."""
        import torch
        n, tokens, h_local = self.world_size, q.shape[0], q.shape[1]
        gathered = torch.empty((n,) + tuple(q.shape), dtype=q.dtype, device=q.device)
        self.comm.all_gather_into_tensor(gathered, q.contiguous())
        return gathered.permute(1, 0, 2, 3).reshape(tokens, n * h_local, q.shape[2])

    def _combine(self, part, lse, h_local, new_out, new_lse, out, out_lse):
        """Every rank's LSEs gathered, lse_correct into the reduce-scatter's chunks, the sum over
        the shards of this rank's heads, then the new tokens' pass merged in (when given)."""
        import torch
        n, r, tokens, dv = self.world_size, self.rank, part.shape[0], part.shape[2]
        lses = torch.empty((n,) + tuple(lse.shape), dtype=lse.dtype, device=lse.device)
        self.comm.all_gather_into_tensor(lses, lse.contiguous())
        chunks = torch.empty((n, tokens, h_local, dv), dtype=part.dtype, device=part.device)
        total_lse = torch.empty((n * h_local, tokens), dtype=torch.float32, device=part.device)
        self.context.lse_correct(chunks, part, lses, r, output_lse=total_lse)
        mine = torch.empty((tokens, h_local, dv), dtype=part.dtype, device=part.device)
        self.comm.reduce_scatter_tensor(mine, chunks)
        mine_lse = total_lse[r * h_local:(r + 1) * h_local]
        if new_out is None:
            if out is not None:
                out.copy_(mine)
                mine = out
            if out_lse is not None:
                out_lse.copy_(mine_lse)
                mine_lse = out_lse
            return mine, mine_lse
        if out is None:
            out = torch.empty_like(mine)
        if out_lse is None:
            out_lse = torch.empty_like(mine_lse)
        self.layer.merge(out, mine, mine_lse, new_out, new_lse, output_lse=out_lse)
        return out, out_lse
