"""SDXL smoke inference: the SDXL-base UNet and VAE at 1024², through diffusers' own pipeline.

Synthetic weights by default: the architectures are built from the configs below (copied from
stabilityai/stable-diffusion-xl-base-1.0's unet/ and vae/ config.json) and randomly initialised,
so the same kernels run with the same FLOPs and nothing is downloaded. The two CLIP text encoders
are skipped (random prompt embeddings of their output shapes are fed instead): they need tokenizer
files we cannot fetch and cost well under 1 % of 20 UNet steps. With `weights=DIR` the full
pipeline, text encoders included, loads from a local diffusers-format directory.
"""

from __future__ import annotations

import os
import statistics
from types import ModuleType
from typing import Any

from labgpu_agent.smoke.base import (
    SmokeFailed,
    SmokeResult,
    guarded,
    import_optional,
    load_torch,
    time_host,
    torch_environment,
)

SDXL_UNET_CONFIG: dict[str, Any] = {
    "act_fn": "silu",
    "addition_embed_type": "text_time",
    "addition_embed_type_num_heads": 64,
    "addition_time_embed_dim": 256,
    "attention_head_dim": [5, 10, 20],
    "block_out_channels": [320, 640, 1280],
    "center_input_sample": False,
    "cross_attention_dim": 2048,
    "down_block_types": ["DownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D"],
    "downsample_padding": 1,
    "flip_sin_to_cos": True,
    "freq_shift": 0,
    "in_channels": 4,
    "layers_per_block": 2,
    "mid_block_scale_factor": 1,
    "mid_block_type": "UNetMidBlock2DCrossAttn",
    "norm_eps": 1e-05,
    "norm_num_groups": 32,
    "out_channels": 4,
    "projection_class_embeddings_input_dim": 2816,
    "resnet_time_scale_shift": "default",
    "sample_size": 128,
    "time_embedding_type": "positional",
    "transformer_layers_per_block": [1, 2, 10],
    "up_block_types": ["CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"],
    "use_linear_projection": True,
}

SDXL_VAE_CONFIG: dict[str, Any] = {
    "act_fn": "silu",
    "block_out_channels": [128, 256, 512, 512],
    "down_block_types": ["DownEncoderBlock2D"] * 4,
    "force_upcast": True,
    "in_channels": 3,
    "latent_channels": 4,
    "layers_per_block": 2,
    "norm_num_groups": 32,
    "out_channels": 3,
    "sample_size": 1024,
    "scaling_factor": 0.13025,
    "up_block_types": ["UpDecoderBlock2D"] * 4,
}

SDXL_SCHEDULER_CONFIG: dict[str, Any] = {
    "beta_end": 0.012,
    "beta_schedule": "scaled_linear",
    "beta_start": 0.00085,
    "interpolation_type": "linear",
    "num_train_timesteps": 1000,
    "prediction_type": "epsilon",
    "steps_offset": 1,
    "timestep_spacing": "leading",
    "use_karras_sigmas": False,
}

TEXT_TOKENS, TEXT_DIM, POOLED_DIM = 77, 2048, 1280  # CLIP-L (768) ⊕ OpenCLIP-bigG (1280)


def build_synthetic_pipeline(torch: ModuleType, dtype: Any) -> Any:
    """StableDiffusionXLPipeline with random UNet/VAE weights and no text encoders."""
    diffusers = import_optional("diffusers")
    torch.manual_seed(0)
    previous = torch.get_default_dtype()
    # Initialise on the GPU and in the target dtype: 2.6 B parameters init slowly on a CPU, and
    # an fp32 build would write 10 GB only to convert it.
    torch.set_default_dtype(dtype)
    try:
        with torch.device("cuda"):
            unet = diffusers.UNet2DConditionModel(**SDXL_UNET_CONFIG)
            vae = diffusers.AutoencoderKL(**SDXL_VAE_CONFIG)
    finally:
        torch.set_default_dtype(previous)
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
    return pipe


def synthetic_prompt(torch: ModuleType, batch: int, dtype: Any) -> dict[str, Any]:
    gen = torch.Generator(device="cuda").manual_seed(1)

    def randn(*shape: int) -> Any:
        return torch.randn(*shape, generator=gen, device="cuda", dtype=dtype)

    return {
        "prompt_embeds": randn(batch, TEXT_TOKENS, TEXT_DIM),
        "pooled_prompt_embeds": randn(batch, POOLED_DIM),
        "negative_prompt_embeds": randn(batch, TEXT_TOKENS, TEXT_DIM),
        "negative_pooled_prompt_embeds": randn(batch, POOLED_DIM),
    }


def run_sdxl(
    *,
    steps: int = 20,
    batch: int = 4,
    guidance: float = 5.0,
    resolution: int = 1024,
    weights: str | None = None,
    dtype: str = "bfloat16",
    warmup: int = 1,
    warmup_steps: int = 2,
    iters: int = 2,
    baseline: float | None = None,
) -> SmokeResult:
    """images/s of the median of `iters` timed calls of `steps` steps each. The `warmup` calls
    run only `warmup_steps` steps: the same shapes and kernels (UNet, scheduler, VAE decode), so
    the first timed call is as fast as the next (agent/bench/gate_profile.py on the H200), in a
    fraction of a full call's time."""

    def run() -> SmokeResult:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing may be fetched from a hub
        torch = load_torch()
        diffusers = import_optional("diffusers")
        torch_dtype = getattr(torch, dtype)
        if weights:
            pipe = diffusers.StableDiffusionXLPipeline.from_pretrained(
                weights, torch_dtype=torch_dtype, local_files_only=True
            ).to("cuda")
            pipe.set_progress_bar_config(disable=True)
            inputs: dict[str, Any] = {"prompt": ["a photograph of a GPU server rack"] * batch}
        else:
            pipe = build_synthetic_pipeline(torch, torch_dtype)
            inputs = synthetic_prompt(torch, batch, torch_dtype)
        images: list[Any] = []

        def generate(count: int = steps) -> None:
            out = pipe(
                **inputs,
                num_inference_steps=count,
                guidance_scale=guidance,
                height=resolution,
                width=resolution,
                output_type="pt",
            )
            images[:] = [out.images]

        with torch.inference_mode():
            for _ in range(warmup):
                generate(min(warmup_steps, steps))
            times = time_host(torch, generate, warmup=0, iters=iters)
        image = images[0]
        finite = bool(torch.isfinite(image).all().item())
        shape = list(image.shape)
        if not finite:
            raise SmokeFailed("SDXL produced non-finite pixels")
        seconds = statistics.median(times)
        return SmokeResult(
            name="sdxl",
            status="passed",
            metric="images_per_s",
            value=round(batch / seconds, 4),
            unit="images/s",
            baseline=baseline,
            params={
                "steps": steps,
                "batch": batch,
                "guidance": guidance,
                "resolution": resolution,
                "dtype": dtype,
                "weights": weights or "synthetic",
                "warmup": warmup,
                "warmup_steps": min(warmup_steps, steps),
                "iters": iters,
            },
            extra={
                "seconds_per_batch": round(seconds, 4),
                "seconds_all": [round(t, 4) for t in times],
                "output_shape": shape,
            },
            environment={**torch_environment(torch), "diffusers": diffusers.__version__},
        )

    return guarded("sdxl", "images_per_s", "images/s", run)
