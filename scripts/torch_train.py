#!/usr/bin/env python3
# scripts/torch_train.py: launch-bound PyTorch training (MLP or transformer block, AdamW),
# deterministic, losses written as float.hex; eager, or hand-captured with torch.cuda.graphs.
"""Usage: torch_train.py --model mlp|transformer [--steps 50] [--out losses.txt] [--graph | --ab]

Losses stay on the device until the end (one host read), so the only blocking
points are the timing synchronisations. Prints "TIME us_per_step=..." on stderr
(median over blocks of steps after warm-up) and a digest line on stdout.

--ab (under cgraft) compares in one process: blocks of steps alternate between
cgraft switched off (cgraft_set_enabled(0): every call passes through, as eager)
and on, in the order off, on, on, off, ...; prints "TIME ab_eager_us=...
ab_cgraft_us=... ab_ratio=..." with the range of the ratios of neighbouring
blocks, and ab_tcalls_us, the host time the eager CUDA calls themselves take
per step (cgraft_call_time_ns() over two more eager blocks), with
ab_saved_share = (eager - cgraft) / tcalls, and ab_tcgraft_us, the same calls
under cgraft timed whole (cgraft_call_time_ns(2), two more blocks), with
ab_calls_saved_share = 1 - tcgraft / tcalls. The host's speed drifts between processes more than launches cost, and
a comparison within one process cancels most of that.
"""
import argparse
import os
import statistics
import sys
import time

# cuBLAS picks reproducible kernels only with a fixed workspace configuration,
# and it reads this once, when it is loaded.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


class Block(nn.Module):
    """Pre-norm transformer block: attention then MLP, both residual."""

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, 4 * width)
        self.fc2 = nn.Linear(4 * width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=-1)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, c))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class Transformer(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.block = Block(width, heads)
        self.ln = nn.LayerNorm(width)
        self.head = nn.Linear(width, width)

    def forward(self, x):
        return self.head(self.ln(self.block(x)))


def make_mlp(width, depth):
    layers = []
    for _ in range(depth - 1):
        layers += [nn.Linear(width, width), nn.GELU()]
    layers.append(nn.Linear(width, width))
    return nn.Sequential(*layers)


def sdpa_context(name):
    """The math backend is plain matmul and softmax: reproducible run to run.
    The fused backends may use atomics in the backward pass."""
    if name == "auto":
        import contextlib
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel
    return sdpa_kernel({"math": SDPBackend.MATH, "efficient": SDPBackend.EFFICIENT_ATTENTION,
                        "flash": SDPBackend.FLASH_ATTENTION}[name])


# Seconds of warm-up under --ab (see below).
WARM_S = 0.6


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=["mlp", "transformer"], required=True)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--out", default="losses.txt")
    ap.add_argument("--graph", action="store_true", help="hand-captured CUDA graph of the whole step")
    ap.add_argument("--ab", action="store_true", help="cgraft off and on in alternating blocks (under cgraft)")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--depth", type=int, default=4, help="MLP layers")
    ap.add_argument("--seq", type=int, default=32, help="transformer sequence length")
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=10, help="untimed steps first (graph: includes capture)")
    ap.add_argument("--block", type=int, default=5, help="steps per timed block")
    ap.add_argument("--sdpa", choices=["math", "efficient", "flash", "auto"], default="math")
    ap.add_argument("--seed", type=int, default=1234)
    a = ap.parse_args()

    if not torch.cuda.is_available():
        print("torch_train: no CUDA device", file=sys.stderr)
        return 77
    if a.graph and a.warmup < 3:
        a.warmup = 3  # the side-stream warm-up before capture needs its steps
    if a.steps < a.warmup + a.block:
        print(f"torch_train: --steps must be at least warmup+block ({a.warmup + a.block})", file=sys.stderr)
        return 64
    set_enabled = None
    if a.ab:
        import ctypes
        try:
            set_enabled = ctypes.CDLL(None).cgraft_set_enabled
        except AttributeError:
            print("torch_train: --ab needs cgraft preloaded (LD_PRELOAD=.../libcgraft.so)", file=sys.stderr)
            return 64
        set_enabled.argtypes = [ctypes.c_int]
        set_enabled.restype = ctypes.c_int
        call_ns = ctypes.CDLL(None).cgraft_call_time_ns
        call_ns.argtypes = [ctypes.c_int]
        call_ns.restype = ctypes.c_ulonglong
        if a.graph:
            print("torch_train: --ab and --graph exclude each other", file=sys.stderr)
            return 64

    torch.manual_seed(a.seed)
    torch.cuda.manual_seed_all(a.seed)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")

    if a.model == "mlp":
        model = make_mlp(a.width, a.depth).to(dev)
        shape = (a.batch, a.width)
    else:
        model = Transformer(a.width, a.heads).to(dev)
        shape = (a.batch, a.seq, a.width)
    # capturable keeps the optimizer's step count on the device: required for
    # the graph, used in eager too so both run the same arithmetic.
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, capturable=True, foreach=True)

    g = torch.Generator(device=dev)
    g.manual_seed(a.seed + 1)
    xs = torch.randn((a.steps,) + shape, device=dev, generator=g)
    ys = torch.randn((a.steps,) + shape, device=dev, generator=g)
    losses = torch.zeros(a.steps, device=dev)

    def train_step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    sdpa = sdpa_context(a.sdpa)
    step = 0
    with sdpa:
        if a.graph:
            static_x = torch.empty_like(xs[0])
            static_y = torch.empty_like(ys[0])
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):  # builds optimizer state and autograd caches before capture
                    static_x.copy_(xs[step])
                    static_y.copy_(ys[step])
                    losses[step].copy_(train_step(static_x, static_y).detach())
                    step += 1
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            opt.zero_grad(set_to_none=True)
            with torch.cuda.graph(graph):
                static_loss = train_step(static_x, static_y)

            def run_step(i):
                static_x.copy_(xs[i])
                static_y.copy_(ys[i])
                graph.replay()
                losses[i].copy_(static_loss.detach())
        else:
            def run_step(i):
                losses[i].copy_(train_step(xs[i], ys[i]).detach())

        # Under --ab the warm-up also lasts WARM_S: cgraft builds its graphs
        # and its governor makes its first check of replay against eager
        # (about 0.4 s, half of it eager) before the blocks compared.
        t_warm = time.perf_counter()
        while step < a.warmup or (set_enabled and time.perf_counter() - t_warm < WARM_S
                                  and step + a.block * 6 < a.steps):
            run_step(step)
            step += 1
        per_step = []
        by_mode = {0: [], 1: []}
        torch.cuda.synchronize()
        reserve = 4 * a.block if set_enabled else 0  # for the calls' own time, below
        while step + a.block <= a.steps - reserve:
            if set_enabled:
                on = (0, 1, 1, 0)[len(per_step) % 4]
                set_enabled(on)
            t0 = time.perf_counter()
            for _ in range(a.block):
                run_step(step)
                step += 1
            torch.cuda.synchronize()
            per_step.append((time.perf_counter() - t0) * 1e6 / a.block)
            if set_enabled:
                by_mode[on].append(per_step[-1])

        def timed_blocks(on, timing):
            """Two blocks' host time per step in CUDA calls, cgraft off or
            on, timed with cgraft_call_time_ns(timing)."""
            nonlocal step
            set_enabled(on)
            per = []
            for _ in range(2):
                if step + a.block > a.steps:
                    break
                t0 = call_ns(timing)
                for _ in range(a.block):
                    run_step(step)
                    step += 1
                torch.cuda.synchronize()
                per.append((call_ns(0) - t0) / 1e3 / a.block)
            set_enabled(1)
            return per

        tcalls, tcgraft = [], []
        if set_enabled:
            # The eager calls' own host time per step, in blocks of their
            # own (timing costs two clock reads a call); then the same
            # calls under cgraft, timed whole (its own work, graph launches
            # and the calls it lets through).
            tcalls = timed_blocks(0, 1)
            tcgraft = timed_blocks(1, 2)
        while step < a.steps:
            run_step(step)
            step += 1
        torch.cuda.synchronize()

    vals = losses.cpu().tolist()
    with open(a.out, "w") as f:
        for v in vals:
            f.write(float(v).hex() + "\n")
    print(f"torch {a.model} steps={a.steps} graph={int(a.graph)} first={float(vals[0]).hex()} "
          f"last={float(vals[-1]).hex()}")
    print(f"TIME us_per_step={statistics.median(per_step):.3f} min={min(per_step):.3f} "
          f"blocks={len(per_step)} block={a.block}", file=sys.stderr)
    if set_enabled and by_mode[0] and by_mode[1]:
        off, on = by_mode[0], by_mode[1]
        # Neighbouring blocks of the two modes, paired: (off, on), (on, off), ...
        ratios = sorted(x / y for x, y in zip(off, on))
        print(f"TIME ab_eager_us={statistics.median(off):.3f} ab_cgraft_us={statistics.median(on):.3f} "
              f"ab_ratio={statistics.median(off) / statistics.median(on):.4f} "
              f"ab_pair_lo={ratios[len(ratios) // 4]:.4f} ab_pair_hi={ratios[(3 * len(ratios)) // 4]:.4f} "
              f"pairs={len(ratios)}" + (f" ab_tcalls_us={statistics.median(tcalls):.3f} "
                                        f"ab_saved_share={(statistics.median(off) - statistics.median(on)) / statistics.median(tcalls):.3f}"
                                        if tcalls else "")
              + (f" ab_tcgraft_us={statistics.median(tcgraft):.3f} "
                 f"ab_calls_saved_share={1 - statistics.median(tcgraft) / statistics.median(tcalls):.3f}"
                 if tcalls and tcgraft else ""), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
