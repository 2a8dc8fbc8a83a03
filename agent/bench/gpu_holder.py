"""Another tenant on the GPU, for the in-use and deep-check fault runs (agent/bench/device_deep.sh).

    python3 agent/bench/gpu_holder.py hold --gib 60 --ready FILE   # holds 60 GiB, idle
    python3 agent/bench/gpu_holder.py busy --ready FILE            # bf16 products, back to back

Writes FILE once the memory is taken (or the first products ran), then runs until killed.
"""

import argparse
import time
from pathlib import Path

import torch

parser = argparse.ArgumentParser()
parser.add_argument("mode", choices=("hold", "busy"))
parser.add_argument("--gib", type=float, default=60.0)
parser.add_argument("--ready", required=True)
args = parser.parse_args()

if args.mode == "hold":
    held = torch.empty(int(args.gib * 2**30), dtype=torch.uint8, device="cuda")
    held.fill_(1)
    torch.cuda.synchronize()
    Path(args.ready).write_text(f"holding {args.gib} GiB\n")
    while True:
        time.sleep(1)
else:
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(a)
    for _ in range(10):
        torch.matmul(a, b, out=out)
    torch.cuda.synchronize()
    Path(args.ready).write_text("busy\n")
    while True:
        for _ in range(50):
            torch.matmul(a, b, out=out)
        torch.cuda.synchronize()
