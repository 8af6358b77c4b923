#!/usr/bin/env bash
# The wheel as a user gets it: `pip wheel` of the source tree (scikit-build-core + CMake, the build
# folder kept in WORK so a rerun rebuilds only what changed; ccache serves other folders), installed
# into a fresh venv, then imported (the extension attnc._fast from it too), the CLI run through
# `python -m attnc` and the `attnc` script, and the CPU tests run from a copy outside the source
# tree against the installed package, with no ATTNC_LIB. Usage: wheel_test.sh SOURCE_DIR WORK_DIR [PYTHON]
set -euo pipefail
src=$(cd "$1" && pwd); work=$2; python=${3:-python3}
mkdir -p "$work"; work=$(cd "$work" && pwd)
rm -rf "$work/dist" "$work/venv" "$work/tests"
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(cd "$src/.." && pwd)}" PATH="/usr/local/cuda/bin:$PATH"
unset ATTNC_LIB
t0=$(date +%s)
"$python" -m pip wheel -q --no-build-isolation --no-deps -w "$work/dist" -Cbuild-dir="$work/cmake" "$src"
echo "wheel_test: built $(basename "$work"/dist/attnc-*.whl) in $(($(date +%s) - t0)) s"
"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q --no-index --no-deps "$work"/dist/attnc-*.whl
cpu_tests="test_cpu test_vllm_cpu test_fast"
mkdir -p "$work/tests" && for t in $cpu_tests; do cp "$src/tests/python/$t.py" "$work/tests/"; done && cd "$work/tests"
"$work/venv/bin/python" "$src/tests/python/check_installed.py"
"$work/venv/bin/python" -m attnc --version
"$work/venv/bin/attnc" validate "$src/specs/llama-3-8b.yaml"
ATTNC_TEST_INSTALLED=1 ATTNC_CACHE_DIR="$work/cache" "$work/venv/bin/python" -m unittest $cpu_tests
