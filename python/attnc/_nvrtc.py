"""Finding NVRTC for libattnc.so (and the CLI), which link it by soname (libnvrtc.so.<CUDA major>).

The loader's own search (LD_LIBRARY_PATH, ld.so.cache) comes first; then where the CUDA toolkit
installs it ($CUDA_HOME, $CUDA_PATH, /usr/local/cuda*), then where pip's NVIDIA wheels put it (torch
depends on them: nvidia/cu13/lib for CUDA 13, nvidia/cuda_nvrtc/lib for CUDA 12). Loading it with
RTLD_GLOBAL first makes the dynamic loader reuse it when libattnc.so names the same soname.
"""
import ctypes
import glob
import os
import sys


class NvrtcNotFound(OSError):
    """No NVRTC of the CUDA major version this build needs; the message says where it looked."""


def candidate_dirs(paths=None, environ=None):
    """Folders that may hold NVRTC, in search order (each listed once)."""
    environ = os.environ if environ is None else environ
    paths = sys.path if paths is None else paths
    dirs = []
    for var in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"):
        root = environ.get(var)
        if root:
            dirs += [os.path.join(root, "lib64"), os.path.join(root, "lib")]
    dirs += ["/usr/local/cuda/lib64", "/usr/local/cuda/lib"]
    dirs += sorted(glob.glob("/usr/local/cuda-*/lib64"), reverse=True)
    for p in paths:
        if p and os.path.isdir(os.path.join(p, "nvidia")):
            dirs += sorted(glob.glob(os.path.join(p, "nvidia", "*", "lib")))
    seen, out = set(), []
    for d in dirs:
        if d not in seen:
            seen.add(d)
            out.append(d)
    return out


def load(soname, paths=None, environ=None, use_loader=True):
    """Loads `soname` (e.g. 'libnvrtc.so.13') globally; returns the folder it came from ('' when
    the loader found it by itself). Raises NvrtcNotFound naming every place it looked."""
    if use_loader:
        try:
            ctypes.CDLL(soname, mode=ctypes.RTLD_GLOBAL)
            return ""
        except OSError:
            pass
    dirs = candidate_dirs(paths, environ)
    errors = []
    for d in dirs:
        path = os.path.join(d, soname)
        if os.path.exists(path):
            try:
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
                return d
            except OSError as e:
                errors.append(f"{path}: {e}")
    major = soname.rsplit(".", 1)[-1]
    wheel = "nvidia-cuda-nvrtc" if major not in ("11", "12") else f"nvidia-cuda-nvrtc-cu{major}"
    raise NvrtcNotFound(
        f"attnc: {soname} (NVRTC of CUDA {major}) not found: the dynamic loader does not know it "
        f"(LD_LIBRARY_PATH, ldconfig) and it is in none of: {', '.join(dirs) or '(no folders)'}"
        + (f"; could not load: {'; '.join(errors)}" if errors else "")
        + f". Install the CUDA {major} toolkit (set CUDA_HOME if it is not under /usr/local/cuda) or "
        f"`pip install {wheel}`.")
