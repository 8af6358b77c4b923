#!/usr/bin/env bash
# On the GPU machine, issue 14's check of the package as a user gets it: a wheel built elsewhere
# (`tools/pack-device --wheel` puts a portable one in .device-build/wheel/) installed into a fresh
# venv, then the Python GPU tests and the examples run from a copy outside the source tree against
# the installed package, with no ATTNC_LIB. Nothing can be installed from a registry there, so the
# venv sees the machine's torch through a .pth file naming the site-packages torch comes from.
#   Usage: wheel_gpu_test.sh WHEEL SOURCE_DIR WORK_DIR [PYTHON]   (PYTHON: one that imports torch)
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
whl=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); src=$(cd "$2" && pwd); work=$3; python=${4:-python3}
[ -f "$whl" ] || { echo "wheel_gpu_test: no wheel at $1" >&2; exit 2; }
mkdir -p "$work"; work=$(cd "$work" && pwd)
rm -rf "$work/venv" "$work/run" "$work/cache"
unset ATTNC_LIB
torch_site=$("$python" -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
"$python" -m venv "$work/venv"
venv_site=$("$work/venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
echo "$torch_site" >"$venv_site/machine-torch.pth"  # after the venv's own packages on sys.path
"$work/venv/bin/python" -m pip install -q --no-index --no-deps "$whl"
echo "wheel_gpu_test: installed $(basename "$whl"); torch from $torch_site"

mkdir -p "$work/run"
tests="test_cpu test_vllm_cpu test_gpu test_vllm_gpu test_fast test_dcp"
for t in $tests dcp_two_gpu; do cp "$src/tests/python/$t.py" "$work/run/"; done
cp "$src"/examples/*.py "$work/run/"
cd "$work/run"
"$work/venv/bin/python" "$src/tests/python/check_installed.py"
"$work/venv/bin/python" -m attnc --version
export ATTNC_TEST_INSTALLED=1 ATTNC_CACHE_DIR="$work/cache"
"$work/venv/bin/python" -m unittest -v $tests
# The examples insert ../python into sys.path for a source tree; from this copy that folder does
# not exist, so they too import the installed package.
"$work/venv/bin/python" decode_loop.py --steps 16
"$work/venv/bin/python" swap_vllm_flash_attn.py
echo "wheel_gpu_test: PASS"
