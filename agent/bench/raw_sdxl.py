"""Raw diffusers SDXL run, for comparing with `labgpu-agent smoke sdxl` (docs/benchmarks.md).

Plain diffusers and torch, none of the agent's harness: only the architecture configs are taken
from the agent so that both runs build exactly the same shapes.
"""

import argparse
import json
import statistics
import time

import diffusers
import torch

from labgpu_agent.smoke.sdxl import SDXL_SCHEDULER_CONFIG, SDXL_UNET_CONFIG, SDXL_VAE_CONFIG

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=20)
parser.add_argument("--batch", type=int, default=4)
parser.add_argument("--guidance", type=float, default=5.0)
parser.add_argument("--resolution", type=int, default=1024)
parser.add_argument("--warmup", type=int, default=1)
parser.add_argument("--iters", type=int, default=3)
args = parser.parse_args()

dtype = torch.bfloat16
torch.manual_seed(0)
with torch.device("cuda"):
    unet = diffusers.UNet2DConditionModel(**SDXL_UNET_CONFIG).to(dtype)
    vae = diffusers.AutoencoderKL(**SDXL_VAE_CONFIG).to(dtype)
pipe = diffusers.StableDiffusionXLPipeline(
    vae=vae,
    unet=unet,
    scheduler=diffusers.EulerDiscreteScheduler(**SDXL_SCHEDULER_CONFIG),
    text_encoder=None,
    text_encoder_2=None,
    tokenizer=None,
    tokenizer_2=None,
    add_watermarker=False,
)
pipe.set_progress_bar_config(disable=True)
g = torch.Generator(device="cuda").manual_seed(1)
emb = {
    "prompt_embeds": torch.randn(args.batch, 77, 2048, generator=g, device="cuda", dtype=dtype),
    "pooled_prompt_embeds": torch.randn(args.batch, 1280, generator=g, device="cuda", dtype=dtype),
    "negative_prompt_embeds": torch.randn(
        args.batch, 77, 2048, generator=g, device="cuda", dtype=dtype
    ),
    "negative_pooled_prompt_embeds": torch.randn(
        args.batch, 1280, generator=g, device="cuda", dtype=dtype
    ),
}
times = []
with torch.inference_mode():
    for i in range(args.warmup + args.iters):
        torch.cuda.synchronize()
        start = time.perf_counter()
        image = pipe(
            **emb,
            num_inference_steps=args.steps,
            guidance_scale=args.guidance,
            height=args.resolution,
            width=args.resolution,
            output_type="pt",
        ).images
        torch.cuda.synchronize()
        if i >= args.warmup:
            times.append(time.perf_counter() - start)
median = statistics.median(times)
print(
    json.dumps(
        {
            "name": "raw-diffusers-sdxl",
            "params": vars(args),
            "seconds_all": times,
            "seconds_per_batch": median,
            "images_per_s": args.batch / median,
            "finite": bool(torch.isfinite(image).all()),
            "torch": torch.__version__,
            "diffusers": diffusers.__version__,
            "device": torch.cuda.get_device_name(0),
        }
    )
)
