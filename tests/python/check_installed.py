"""Asserts that attnc, its library and its warm-path extension are imported from an installed
package (a venv's site-packages), not from a source tree or through ATTNC_LIB; prints where from.
Run by the venv's python: wheel_test.sh (CPU, CI) and wheel_gpu_test.sh (the GPU machine)."""
import os

import attnc
import attnc._capi as c

here = os.path.dirname(attnc.__file__)
assert "site-packages" in here, f"attnc imported from {here}, not the venv"
lib = c.lib()._name
assert lib == os.path.join(here, "lib", "libattnc.so"), lib
from attnc import _fast  # noqa: E402  the drop-ins' warm path (python/csrc/fast.c), inside the package

assert os.path.dirname(_fast.__file__) == here, _fast.__file__
print("import attnc", attnc.version(), "from", here, "| NVRTC", c._build_config.NVRTC_SONAME,
      "from", c.nvrtc_dir() or "the loader's path")
