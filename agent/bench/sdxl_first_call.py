"""The SDXL smoke's one-time costs in a fresh process (issue 27 item 4), one JSON line:

    python3 agent/bench/sdxl_first_call.py [--no-cudnn-sdp]

import diffusers, build the random-weight pipeline (smoke/sdxl.py), one 2-step warm-up call, one
full 20-step call. --no-cudnn-sdp turns PyTorch's cuDNN attention off, to see whether the first
call's extra seconds are cuDNN building its attention plans.
"""

import json
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
marks: dict[str, float] = {}
t = time.perf_counter()


def mark(name: str) -> None:
    global t
    now = time.perf_counter()
    marks[name] = round(now - t, 3)
    t = now


import torch  # noqa: E402

mark("import_torch")
torch.zeros(1, device="cuda")
torch.cuda.synchronize()
mark("cuda_context")
if "--no-cudnn-sdp" in sys.argv:
    torch.backends.cuda.enable_cudnn_sdp(False)
import diffusers  # noqa: E402, F401

mark("import_diffusers")
from labgpu_agent.smoke import sdxl  # noqa: E402

pipe = sdxl.build_synthetic_pipeline(torch, torch.bfloat16)
inputs = sdxl.synthetic_prompt(torch, 4, torch.bfloat16)
torch.cuda.synchronize()
mark("build")
with torch.inference_mode():
    for name, steps in (("warmup_2_steps", 2), ("call_20_steps", 20), ("call_20_steps_2", 20)):
        pipe(
            **inputs,
            num_inference_steps=steps,
            guidance_scale=5.0,
            height=1024,
            width=1024,
            output_type="pt",
        )
        torch.cuda.synchronize()
        mark(name)
print(json.dumps({"argv": sys.argv[1:], **marks}))
