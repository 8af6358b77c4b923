"""One attnc.Attention per layer variant for the drop-in functions (attnc.vllm, attnc.flashinfer).

A variant is everything a kernel is compiled for (dtype, head dims and counts, page size, mask and
window, softcap, ALiBi, sinks, LSE layout and base, KV cache dtype) plus the device. Its spec is
written from those values, so the same arguments give the same spec id, and the SQLite cache
serves it in the next process. The first call of a variant creates the Attention (JIT or cache
load happen on its first run); later calls find it in a dict.

The split-KV workspace is a torch byte tensor per variant, passed with every decode call: grown
(to the next power of two of batch and lengths) when a call needs more, never while the stream is
being captured into a CUDA graph. A replaced workspace is kept alive (at most as many bytes as the
current one, growth being geometric): a CUDA graph captured with it writes to it on every replay.
"""
import threading

from . import _memo
from .attention import Attention

_variants = {}
_lock = threading.Lock()
_options = {}


def set_options(**options):
    """Options for the Attentions the drop-in functions create from now on (attnc.Attention's
    keywords: db, use_tuning, no_jit, background_compile)."""
    allowed = {"db", "use_tuning", "no_jit", "background_compile"}
    bad = set(options) - allowed
    if bad:
        raise TypeError(f"set_options: unknown option(s) {', '.join(sorted(bad))}; "
                        f"allowed: {', '.join(sorted(allowed))}")
    _options.update(options)
    clear()


def clear():
    """Drops every cached variant and remembered call (the kernels stay in the SQLite cache)."""
    with _lock:
        _variants.clear()
        _memo.clear()


def check_head_dim(name, d):
    if d % 8 or not 8 <= d <= 256:
        raise ValueError(f"{name} is {d}: attnc kernels take head sizes that are multiples of 8 in 8..256")


def spec_yaml(dtype, head_dim, head_dim_v, num_q_heads, num_kv_heads, page_size=16, mask="causal", softcap=0.0,
              alibi=False, sinks=False, lse=None, kv_cache_dtype="same", kernels=("prefill", "decode")):
    """The spec of one variant. mask: 'causal', 'none' or (left, right) for a sliding window;
    lse: None or (layout, base)."""
    if isinstance(mask, tuple):
        mask_text = f"{{kind: sliding_window, left: {int(mask[0])}, right: {int(mask[1])}}}"
    else:
        mask_text = mask
    lines = ["version: 1", "name: drop-in", f"head_dim: {head_dim}", f"head_dim_v: {head_dim_v}",
             f"num_q_heads: {num_q_heads}", f"num_kv_heads: {num_kv_heads}", f"dtype: {dtype}",
             f"kv_cache: {{dtype: {kv_cache_dtype}, layout: NHD, page_size: {page_size}}}", f"mask: {mask_text}"]
    if softcap:
        lines.append(f"softcap: {float(softcap)!r}")
    if alibi:
        lines.append("alibi: linear")
    if sinks:
        lines.append("sinks: true")
    if lse is not None:
        lines.append(f"lse: {{layout: {lse[0]}, base: {lse[1]}}}")
    lines.append(f"kernels: [{', '.join(kernels)}]")
    return "\n".join(lines) + "\n"


class Variant:
    """An Attention and its managed workspace."""
    __slots__ = ("att", "handle", "workspace", "workspace_ptr", "workspace_bytes", "covered", "kept", "cascade_ws")

    def __init__(self, yaml_text, device):
        self.att = Attention(yaml_text, device=device, **_options)
        self.handle = self.att._h
        self.workspace, self.workspace_ptr, self.workspace_bytes = None, None, 0
        self.covered = {}  # kind -> (batch, max_seqlen_q, max_seqlen_k, forced splits) the workspace serves
        self.kept = []     # replaced workspaces: a captured CUDA graph may still write them
        self.cascade_ws = None

    def workspace_for(self, kind, batch, max_seqlen_q, max_seqlen_k, num_splits, device):
        """(pointer, bytes) of a workspace for this decode shape: the current one when it covers the
        shape, else a bigger one (outside graph capture; inside, the current one: the dispatcher
        lowers its split count to fit, and a forced count that does not fit is an error)."""
        cov = self.covered.get(kind)
        if cov is not None and batch <= cov[0] and max_seqlen_q <= cov[1] and max_seqlen_k <= cov[2] \
                and num_splits <= cov[3]:
            return self._ptr()
        import torch
        if torch.cuda.is_current_stream_capturing():
            return self._ptr()
        old = cov or (0, 0, 0, 0)
        want = (max(old[0], _pow2(batch)), max(old[1], _pow2(max_seqlen_q)), max(old[2], _pow2(max_seqlen_k)),
                max(old[3], num_splits, 1))
        need = self.att.workspace_needed(want[0], want[2], want[1], kind, want[3])
        if need > self.workspace_bytes:
            if self.workspace is not None:
                self.kept.append(self.workspace)
            self.workspace = torch.empty(need, dtype=torch.uint8, device=device)
            self.workspace_ptr, self.workspace_bytes = self.workspace.data_ptr(), need
        self.covered[kind] = want
        return self._ptr()

    def cascade_workspace(self, num_tokens, device):
        """A byte tensor for a cascade call of num_tokens (grown to the next power of two, never
        while capturing; replaced ones kept alive as the split-KV workspace's are)."""
        ws = self.cascade_ws
        import torch
        if ws is not None and (ws.shape[0] >= self.att.cascade_workspace_needed(num_tokens)
                               or torch.cuda.is_current_stream_capturing()):
            return ws
        if ws is not None:
            self.kept.append(ws)
        self.cascade_ws = torch.empty(max(1, self.att.cascade_workspace_needed(_pow2(num_tokens))), dtype=torch.uint8,
                                      device=device)
        return self.cascade_ws

    def _ptr(self):
        return self.workspace_ptr, self.workspace_bytes


def _pow2(n):
    n = max(1, int(n))
    return 1 << (n - 1).bit_length()


def variant(key, make_yaml, device):
    """The cached Variant for `key` (created from make_yaml() on the first call)."""
    v = _variants.get(key)
    if v is None:
        with _lock:
            v = _variants.get(key)
            if v is None:
                v = _variants[key] = Variant(make_yaml(), device)
    return v
