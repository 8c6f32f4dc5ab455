#!/usr/bin/env python3
# scripts/hf_decode.py: HF transformers greedy decoding at batch 1 (GPT-2 from a
# small config, random weights, no download), cgraft switched off and on between
# generate() calls in one process.
"""Usage: hf_decode.py [--cache static|dynamic] [--tokens 64] [--rounds 8] [--out tokens.txt]

Under cgraft (LD_PRELOAD=.../libcgraft.so): generate() calls alternate between
cgraft switched off (cgraft_set_enabled(0): every call passes through, as
eager) and on, in the order off, on, on, off, ...; the tokens of every call
must be the same. Prints on stderr

  TIME eager_us_per_token=... cgraft_us_per_token=... ratio=... tcalls_us_per_token=...
       saved_share=... ceiling=...

       tcgraft_us_per_token=... calls_saved_share=...

where tcalls is the host time the eager CUDA calls themselves take per token
(cgraft_call_time_ns() around extra eager calls), saved_share is
(eager - cgraft) / tcalls and ceiling is eager / (eager - tcalls), the most an
interposer could give. tcgraft is the host time of the same calls under
cgraft, timed whole (cgraft_call_time_ns(2): its own work, graph launches and
the calls it lets through), and calls_saved_share (tcalls - tcgraft) / tcalls:
what cgraft saved inside the calls, free of the host's drift between blocks. Without cgraft it runs eagerly only (bare).
Exit 0 when all tokens match, 1 when they differ, 77 without a GPU or
transformers.
"""
import argparse
import ctypes
import statistics
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", choices=["static", "dynamic"], default="static")
    ap.add_argument("--tokens", type=int, default=64, help="new tokens per generate() call")
    ap.add_argument("--prompt", type=int, default=16, help="prompt length")
    ap.add_argument("--rounds", type=int, default=8, help="timed generate() calls (half off, half on)")
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--width", type=int, default=384)
    ap.add_argument("--heads", type=int, default=6)
    ap.add_argument("--out", help="write the tokens here")
    a = ap.parse_args()
    try:
        import torch
        from transformers import GPT2Config, GPT2LMHeadModel
    except ImportError as e:
        print(f"hf_decode: {e}", file=sys.stderr)
        return 77
    if not torch.cuda.is_available():
        print("hf_decode: no CUDA device", file=sys.stderr)
        return 77
    lib = ctypes.CDLL(None)
    try:
        set_enabled = lib.cgraft_set_enabled
        set_enabled.argtypes, set_enabled.restype = [ctypes.c_int], ctypes.c_int
        call_ns = lib.cgraft_call_time_ns
        call_ns.argtypes, call_ns.restype = [ctypes.c_int], ctypes.c_ulonglong
    except AttributeError:
        set_enabled = call_ns = None

    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=a.layers, n_embd=a.width, n_head=a.heads, n_positions=1024)
    model = GPT2LMHeadModel(cfg).to("cuda").eval()
    prompt = torch.randint(0, cfg.vocab_size, (1, a.prompt), device="cuda",
                           generator=torch.Generator(device="cuda").manual_seed(1))
    kw = dict(max_new_tokens=a.tokens, min_new_tokens=a.tokens, do_sample=False, pad_token_id=0)
    if a.cache == "static":
        kw.update(cache_implementation="static", disable_compile=True)

    def generate():
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.no_grad():
            out = model.generate(prompt, **kw)
        torch.cuda.synchronize()
        return out[0].tolist(), (time.perf_counter() - t0) * 1e6 / a.tokens

    # Warm-up: cgraft (when there) records and learns here, and its governor
    # makes its first check of replay against eager (about 0.4 s).
    t_warm = time.perf_counter()
    ref, _ = generate()
    generate()
    while set_enabled and time.perf_counter() - t_warm < 0.6:
        generate()
    times = {0: [], 1: []}
    same = True
    for r in range(a.rounds):
        on = (0, 1, 1, 0)[r % 4] if set_enabled else 0
        if set_enabled:
            set_enabled(on)
        toks, us = generate()
        times[on].append(us)
        same &= toks == ref

    def timed_calls(on, timing):
        """Median host time per token in CUDA calls over two generate()
        calls, cgraft off or on, timed with cgraft_call_time_ns(timing)."""
        nonlocal same
        set_enabled(on)
        per = []
        for _ in range(2):
            t0 = call_ns(timing)
            toks, _ = generate()
            per.append((call_ns(0) - t0) / 1e3 / a.tokens)
            same &= toks == ref
        set_enabled(1)
        return statistics.median(per)

    tcalls = tcgraft = None
    if set_enabled:
        # The calls' own time, eagerly, in calls of their own (timing costs
        # two clock reads a call, kept out of the times above); then the
        # same calls under cgraft, timed whole (its own work, graph launches
        # and the eager calls it lets through; the split is in cgraft's
        # report): what it leaves of tcalls, without the host's drift
        # between blocks.
        tcalls = timed_calls(0, 1)
        tcgraft = timed_calls(1, 2)
    if a.out:
        with open(a.out, "w") as f:
            f.write(" ".join(map(str, ref)) + "\n")
    print(f"hf_decode cache={a.cache} tokens={a.tokens} same={int(same)} first={ref[a.prompt]} last={ref[-1]}")
    eager = statistics.median(times[0])
    line = f"TIME eager_us_per_token={eager:.2f}"
    if times[1]:
        cg = statistics.median(times[1])
        line += f" cgraft_us_per_token={cg:.2f} ratio={eager / cg:.4f}"
        if tcalls:
            line += (f" tcalls_us_per_token={tcalls:.2f} saved_share={(eager - cg) / tcalls:.3f}"
                     f" ceiling={eager / max(eager - tcalls, 1e-9):.3f}"
                     f" tcgraft_us_per_token={tcgraft:.2f} calls_saved_share={(tcalls - tcgraft) / tcalls:.3f}")
    print(line, file=sys.stderr)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
