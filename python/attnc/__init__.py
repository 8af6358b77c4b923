"""attnc: attention kernels compiled from a YAML spec, tuned per GPU, dispatched per shape.

    import attnc
    att = attnc.Attention("specs/llama-3-8b.yaml")
    out = att.decode(q, k_cache, v_cache, block_table, seqused_k, max_seqlen_k=4096)
    att.last_choice()   # {'config': {...}, 'num_splits': 4, 'origin': 'tuned', ...}

Pure Python over libattnc.so (ctypes); torch is optional (tensors or raw device pointers).
"""
from ._capi import AttncError, lib
from .attention import Attention


def version():
    """The library's version string."""
    return lib().attnc_version().decode()


__all__ = ["Attention", "AttncError", "version"]
