#!/usr/bin/env python3
# scripts/torch_ddp.py: data-parallel training with DistributedDataParallel over NCCL, one
# process a GPU, started by torchrun; each rank writes its losses and a digest of its
# parameters as float.hex, so runs bare and under cgraft compare bit for bit.
"""Usage: torchrun --nproc_per_node=N scripts/torch_ddp.py --out PREFIX [--steps 30]

Writes PREFIX.rankR.txt per rank: the loss of every step, then the sum of the
squares of the parameters after the last step (equal on every rank when the
gradient all-reduce worked). Prints "TIME us_per_step=..." on stderr (rank 0).
"""
import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

import torch_train as tt  # noqa: E402  (beside this script, first on sys.path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--block", type=int, default=5)
    a = ap.parse_args()
    if "LOCAL_RANK" not in os.environ:
        print("torch_ddp: start it with torchrun (python3 -m torch.distributed.run)", file=sys.stderr)
        return 64
    if not torch.cuda.is_available():
        print("torch_ddp: no CUDA device", file=sys.stderr)
        return 77
    rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    dev = torch.device("cuda", local)
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", device_id=dev)
    torch.manual_seed(1234)  # the same initial weights on every rank
    torch.use_deterministic_algorithms(True)
    torch.backends.cuda.matmul.allow_tf32 = False
    model = DDP(tt.make_mlp(256, 4).to(dev), device_ids=[local])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, capturable=True, foreach=True)
    g = torch.Generator(device=dev)
    g.manual_seed(100 + rank)  # each rank its own data
    xs = torch.randn((a.steps, 32, 256), device=dev, generator=g)
    ys = torch.randn((a.steps, 32, 256), device=dev, generator=g)
    losses = torch.zeros(a.steps, device=dev)
    per_step = []
    t0 = time.perf_counter()
    for i in range(a.steps):
        opt.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(xs[i]), ys[i])
        loss.backward()
        opt.step()
        losses[i].copy_(loss.detach())
        if (i + 1) % a.block == 0:
            torch.cuda.synchronize()
            t1 = time.perf_counter()
            per_step.append((t1 - t0) * 1e6 / a.block)
            t0 = t1
    torch.cuda.synchronize()
    digest = sum(float((p.detach().double() ** 2).sum()) for p in model.parameters())
    with open(f"{a.out}.rank{rank}.txt", "w") as f:
        for v in losses.cpu().tolist():
            f.write(float(v).hex() + "\n")
        f.write("params " + float(digest).hex() + "\n")
    if rank == 0 and len(per_step) > 1:
        print(f"TIME us_per_step={statistics.median(per_step[1:]):.3f} blocks={len(per_step) - 1} "
              f"block={a.block}", file=sys.stderr)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
