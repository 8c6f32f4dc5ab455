#!/usr/bin/env python3
"""A JAX loop of one small jitted step, results read back now and then: XLA
runs its own executables (and may use CUDA graphs of its own). Prints values
to compare bare and under cgraft (bit for bit: hex floats and a digest of the
final arrays).

    python3 scripts/jax_loop.py [--iters N] [--n ELEMENTS] [--ab ROUNDS]
--ab (under cgraft): after the loop, ROUNDS pairs of blocks of the same step
with cgraft switched off and on (cgraft_set_enabled) in one process; the
median ratio goes to stderr. Exits 77 where JAX or a GPU is missing."""
import argparse
import hashlib
import os
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=400)
    ap.add_argument("--n", type=int, default=1 << 14)
    ap.add_argument("--ab", type=int, default=0, metavar="ROUNDS")
    a = ap.parse_args()
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    try:
        import jax
        import jax.numpy as jnp
        import numpy as np
        if not any(d.platform == "gpu" for d in jax.devices()):
            raise RuntimeError("no GPU device")
    except Exception as e:
        print(f"jax_loop: {e}", file=sys.stderr)
        return 77

    @jax.jit
    def step(x, y, w, it):
        y = y * 0.9 + jnp.sin(x + it) * 0.1
        x = x + y[::-1] * 0.01
        m = x[: 64 * 8].reshape(64, 8) @ w
        x = x.at[:64].add(m[:, 0] * 1e-3)
        return x, y, jnp.abs(m).max()

    x = jnp.arange(a.n, dtype=jnp.float32) / 1000
    y = jnp.zeros_like(x)
    w = jnp.linspace(-1, 1, 64, dtype=jnp.float32).reshape(8, 8)
    for it in range(a.iters):
        x, y, mm = step(x, y, w, jnp.float32(it))
        if it % 50 == 0:
            print(it, float(y.sum()).hex(), float(mm).hex())
    digest = hashlib.sha256(np.asarray(x).tobytes() + np.asarray(y).tobytes()).hexdigest()
    print("digest", digest)
    if a.ab:
        ab(a.ab, step, x, y, w)
    return 0


def ab(rounds, step, x, y, w, block=100):
    """Blocks of the step with cgraft off and on, alternated in one process."""
    import ctypes
    import statistics
    import time
    import jax.numpy as jnp
    try:
        set_enabled = ctypes.CDLL(None).cgraft_set_enabled
    except AttributeError:
        print("jax_loop: --ab needs cgraft preloaded", file=sys.stderr)
        return
    set_enabled.argtypes = [ctypes.c_int]
    times = {0: [], 1: []}
    for r in range(rounds + 1):
        for on in (0, 1):
            set_enabled(on)
            t0 = time.perf_counter()
            for it in range(block):
                x, y, mm = step(x, y, w, jnp.float32(it))
            mm.block_until_ready()
            if r:  # the first pair warms both up
                times[on].append(time.perf_counter() - t0)
    # The host time in CUDA calls per step: the eager calls' own (cgraft
    # off, cgraft_call_time_ns(1)), and the same calls under cgraft timed
    # whole (cgraft_call_time_ns(2)).
    call_ns = ctypes.CDLL(None).cgraft_call_time_ns
    call_ns.argtypes = [ctypes.c_int]
    call_ns.restype = ctypes.c_ulonglong
    calls = {}
    for on, timing in ((0, 1), (1, 2)):
        set_enabled(on)
        t0 = call_ns(timing)
        for it in range(block):
            x, y, mm = step(x, y, w, jnp.float32(it))
        mm.block_until_ready()
        calls[on] = (call_ns(0) - t0) / block / 1e3
    set_enabled(1)
    off, on = statistics.median(times[0]), statistics.median(times[1])
    print(f"jax_loop: AB median per step off {off / block * 1e6:.1f} us, on {on / block * 1e6:.1f} us, "
          f"speed-up {off / on:.3f} over {rounds} rounds; calls per step {calls[0]:.1f} us eager, "
          f"{calls[1]:.1f} us under cgraft", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
