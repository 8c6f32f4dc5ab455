#!/usr/bin/env python3
"""A CuPy loop of small elementwise kernels and reductions read back now and
then: CuPy compiles its kernels with NVRTC and launches them through the
driver, with its own memory pool. Prints values to compare bare and under
cgraft (bit for bit: hex floats and a digest of the final arrays).

    python3 scripts/cupy_loop.py [--iters N] [--n ELEMENTS] [--async-pool]
--async-pool: CuPy's MemoryAsyncPool (allocations and frees in stream order)
instead of its own pool. Exits 77 where CuPy or a GPU is missing."""
import argparse
import hashlib
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=400)
    ap.add_argument("--n", type=int, default=1 << 14)
    ap.add_argument("--async-pool", action="store_true")
    a = ap.parse_args()
    try:
        import cupy as cp
        cp.cuda.runtime.getDeviceCount()
        if a.async_pool:
            cp.cuda.set_allocator(cp.cuda.MemoryAsyncPool().malloc)
    except Exception as e:  # no CuPy, no driver, no device
        print(f"cupy_loop: {e}", file=sys.stderr)
        return 77
    x = cp.arange(a.n, dtype=cp.float32) / 1000
    y = cp.zeros_like(x)
    w = cp.linspace(-1, 1, 64, dtype=cp.float32).reshape(8, 8)
    for it in range(a.iters):
        y = y * 0.9 + cp.sin(x + it) * 0.1
        x = x + y[::-1] * 0.01
        m = (x[: 64 * 8].reshape(64, 8) @ w).astype(cp.float32)
        x[:64] += m[:, 0] * 1e-3
        if it % 50 == 0:
            print(it, float(y.sum()).hex(), float(cp.abs(m).max()).hex())
    digest = hashlib.sha256(cp.asnumpy(x).tobytes() + cp.asnumpy(y).tobytes()).hexdigest()
    print("digest", digest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
