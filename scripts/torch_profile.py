#!/usr/bin/env python3
# scripts/torch_profile.py: where the host time of one PyTorch training step goes; the
# share that CUDA calls take is the most an interposer can remove.
"""Usage: torch_profile.py [--model mlp|transformer] [--steps 200] [--profile-steps 20]

Runs the training step of scripts/torch_train.py and prints, on stdout:
  PHASE  host µs per step of zero_grad / forward / backward / optimizer / copy (medians)
  API    per step: CUDA calls made and host µs spent in them, from torch.profiler
         (skipped with --no-profile, and when run under cgraft: the profiler's
         CUPTI callbacks would see cgraft's calls, not the program's)
  OPS    host µs per op of a Python loop of one-kernel ops (x.add_), the cost of a
         launch as PyTorch sees it
"""
import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import torch_train as tt  # noqa: E402  (beside this script, first on sys.path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=["mlp", "transformer"], default="mlp")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--profile-steps", type=int, default=20)
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--ops", type=int, default=2000, help="ops in the x.add_ loop")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch_profile: no CUDA device", file=sys.stderr)
        return 77
    torch.manual_seed(1234)
    torch.use_deterministic_algorithms(True)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    if a.model == "mlp":
        model = tt.make_mlp(256, 4).to(dev)
        shape = (32, 256)
    else:
        model = tt.Transformer(256, 4).to(dev)
        shape = (32, 32, 256)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, capturable=True, foreach=True)
    x = torch.randn(shape, device=dev)
    y = torch.randn(shape, device=dev)
    losses = torch.zeros(a.steps, device=dev)
    names = ["zero_grad", "forward", "backward", "optimizer", "copy"]
    phases = {n: [] for n in names}
    totals = []
    ctx = tt.sdpa_context("math")
    with ctx:
        for i in range(a.steps):
            t = [time.perf_counter()]
            opt.zero_grad(set_to_none=True)
            t.append(time.perf_counter())
            loss = F.mse_loss(model(x), y)
            t.append(time.perf_counter())
            loss.backward()
            t.append(time.perf_counter())
            opt.step()
            t.append(time.perf_counter())
            losses[i].copy_(loss.detach())
            t.append(time.perf_counter())
            if i >= a.steps // 4:
                for k, n in enumerate(names):
                    phases[n].append((t[k + 1] - t[k]) * 1e6)
                totals.append((t[-1] - t[0]) * 1e6)
            if i % 50 == 49:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
        med = {n: statistics.median(v) for n, v in phases.items()}
        print("PHASE " + " ".join(f"{n}={med[n]:.1f}" for n in names) + f" step={statistics.median(totals):.1f}")

        preloaded = "cgraft" in os.environ.get("LD_PRELOAD", "")
        if not a.no_profile and not preloaded:
            from torch.profiler import ProfilerActivity, profile
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                for i in range(a.profile_steps):
                    opt.zero_grad(set_to_none=True)
                    loss = F.mse_loss(model(x), y)
                    loss.backward()
                    opt.step()
                    losses[i].copy_(loss.detach())
                torch.cuda.synchronize()
            calls, us = {}, {}
            for e in prof.key_averages():
                if e.key.startswith(("cuda", "cu")) and e.key != "cudaDeviceSynchronize":
                    calls[e.key] = e.count / a.profile_steps
                    us[e.key] = e.self_cpu_time_total / a.profile_steps
            n = a.profile_steps
            print(f"API calls_per_step={sum(calls.values()):.1f} us_per_step={sum(us.values()):.1f} " +
                  " ".join(f"{k}={calls[k]:.1f}x{us[k] / max(calls[k], 1e-9):.2f}us"
                           for k in sorted(us, key=us.get, reverse=True)[:8]) + f" steps={n}")

    z = torch.zeros(16, device=dev)
    per = []
    for _ in range(5):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(a.ops):
            z.add_(1.0)
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        per.append((t1 - t0) * 1e6 / a.ops)
    print(f"OPS add_us_per_op={statistics.median(per):.3f} min={min(per):.3f} value={z[0].item():.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
