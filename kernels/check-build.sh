#!/usr/bin/env bash
# kernels/check-build.sh: compiles every GPU program with nvcc the way kernels/meson.build
# does, into a temporary directory, so a machine without a GPU can confirm they build.
set -eu
cd "$(dirname "${BASH_SOURCE[0]}")"
NVCC=${NVCC:-nvcc}
CUDA_ROOT=${CUDA_ROOT:-/usr/local/cuda}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
flags=(-arch=sm_90 -O2 -std=c++17 -Xcompiler "-Wall,-Wextra" -Xlinker "-rpath=$CUDA_ROOT/lib64")
build() { # name source extra...
    local name=$1 src=$2
    shift 2
    "$NVCC" "${flags[@]}" "$@" "$src" -o "$out/$name" &
}
build chain chain.cu -cudart shared
build chain_static chain.cu -cudart static
build forkjoin forkjoin.cu -cudart shared
build stencil stencil.cu -cudart shared
build solver solver.cu -cudart shared -lcublas
build large large.cu -cudart shared
build passthrough passthrough.cu -cudart shared
build scenarios scenarios.cu -cudart shared -lcublas
build scenarios_ptds scenarios_ptds.cu -cudart shared --default-stream per-thread
fail=0
for job in $(jobs -p); do wait "$job" || fail=1; done
[ $fail = 0 ] && echo "kernels: all programs build" || echo "kernels: a build failed" >&2
exit $fail
