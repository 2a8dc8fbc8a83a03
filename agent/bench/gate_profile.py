"""Where the full gate's seconds go on one GPU (issue 27 item 4): one process, JSON lines.

    python3 agent/bench/gate_profile.py > profile.jsonl

Times, in the order a gate meets them: importing torch, the CUDA context, importing diffusers and
transformers; building the random-weight SDXL pipeline and Llama-3-8B three ways (the agent's
path before issue 27: fp32 on the GPU then converted; built straight in bf16 on the GPU; built on
the meta device and filled on the GPU, no init at all); a short warm-up against the full one; each
timed call; and the top kernels of one batch-128 decode step (torch.profiler), with and without
the explicit mask. Nothing is downloaded: every weight is random.
"""

import json
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
T = time.perf_counter()


def emit(stage: str, seconds: float, **extra: object) -> None:
    print(json.dumps({"stage": stage, "s": round(seconds, 4), **extra}), flush=True)


def timed(stage: str, fn, sync=None, **extra):  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    out = fn()
    if sync:
        sync()
    emit(stage, time.perf_counter() - t, **extra)
    return out


emit("python_start", 0.0)
torch = timed("import_torch", lambda: __import__("torch"))
sync = torch.cuda.synchronize
timed("cuda_context", lambda: torch.zeros(1, device="cuda"), sync)
diffusers = timed("import_diffusers", lambda: __import__("diffusers"))
transformers = timed("import_transformers", lambda: __import__("transformers"))

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
from labgpu_agent.smoke import llm as L  # noqa: E402
from labgpu_agent.smoke import sdxl as S  # noqa: E402

timed("import_agent_smoke", lambda: None)
bf16 = torch.bfloat16


def fill_random(module, std=None):  # type: ignore[no-untyped-def]
    """PyTorch's default init bounds (uniform ±1/sqrt(fan_in)), norms 1, biases 0."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if p.dim() == 1:
                p.fill_(1.0 if ("norm" in name and name.endswith("weight")) else 0.0)
            elif std is not None:
                p.normal_(0.0, std, generator=gen)
            else:
                bound = 1.0 / (p[0].numel() ** 0.5)
                p.uniform_(-bound, bound, generator=gen)


def sdxl_bf16_direct():  # type: ignore[no-untyped-def]
    prev = torch.get_default_dtype()
    torch.set_default_dtype(bf16)
    try:
        with torch.device("cuda"):
            unet = diffusers.UNet2DConditionModel(**S.SDXL_UNET_CONFIG)
            vae = diffusers.AutoencoderKL(**S.SDXL_VAE_CONFIG)
    finally:
        torch.set_default_dtype(prev)
    return unet, vae


def sdxl_meta():  # type: ignore[no-untyped-def]
    prev = torch.get_default_dtype()
    torch.set_default_dtype(bf16)
    try:
        with torch.device("meta"):
            unet = diffusers.UNet2DConditionModel(**S.SDXL_UNET_CONFIG)
            vae = diffusers.AutoencoderKL(**S.SDXL_VAE_CONFIG)
    finally:
        torch.set_default_dtype(prev)
    buffers = [n for n, _ in unet.named_buffers()] + [n for n, _ in vae.named_buffers()]
    unet.to_empty(device="cuda")
    vae.to_empty(device="cuda")
    fill_random(unet)
    fill_random(vae)
    return unet, vae, buffers


def pipe_of(unet, vae):  # type: ignore[no-untyped-def]
    pipe = diffusers.StableDiffusionXLPipeline(
        vae=vae,
        unet=unet,
        scheduler=diffusers.EulerDiscreteScheduler(**S.SDXL_SCHEDULER_CONFIG),
        text_encoder=None,
        text_encoder_2=None,
        tokenizer=None,
        tokenizer_2=None,
        add_watermarker=False,
    )
    pipe.set_progress_bar_config(disable=True)
    return pipe


# --- SDXL -----------------------------------------------------------------------------------
try:
    unet, vae, buffers = timed("sdxl_build_meta_fill", sdxl_meta, sync)
except Exception as exc:  # keep the rest of the profile
    emit("sdxl_build_meta_fill_failed", 0.0, error=repr(exc)[:400])
    unet, vae = sdxl_bf16_direct()
    buffers = []
emit("sdxl_meta_buffers", 0.0, buffers=buffers[:20], count=len(buffers))
pipe = pipe_of(unet, vae)
PIPE = [pipe]
inputs = S.synthetic_prompt(torch, 4, bf16)


def call(steps, pipe=None):  # type: ignore[no-untyped-def]
    pipe = pipe or PIPE[0]
    out = pipe(
        **inputs,
        num_inference_steps=steps,
        guidance_scale=5.0,
        height=1024,
        width=1024,
        output_type="pt",
    )
    return out.images


with torch.inference_mode():
    img = timed("sdxl_warmup_2steps_first_in_process", lambda: call(2), sync)
    for i in range(3):
        img = timed("sdxl_call_20steps", lambda: call(20), sync, i=i)
    emit(
        "sdxl_meta_finite",
        0.0,
        finite=bool(torch.isfinite(img).all().item()),
        mean=float(img.float().mean()),
        std=float(img.float().std()),
    )
del pipe, unet, vae
torch.cuda.empty_cache()
unet, vae = timed("sdxl_build_bf16_direct", sdxl_bf16_direct, sync)
pipe = pipe_of(unet, vae)
PIPE[0] = pipe
with torch.inference_mode():
    img = timed("sdxl_direct_call_20steps", lambda: call(20), sync)
    emit(
        "sdxl_direct_finite",
        0.0,
        finite=bool(torch.isfinite(img).all().item()),
        mean=float(img.float().mean()),
        std=float(img.float().std()),
    )
del pipe, unet, vae
torch.cuda.empty_cache()
pipe = timed("sdxl_build_old_fp32_then_bf16", lambda: S.build_synthetic_pipeline(torch, bf16), sync)
del pipe
torch.cuda.empty_cache()

# --- Llama ----------------------------------------------------------------------------------
cfg = transformers.LlamaConfig(**L.LLAMA3_8B_CONFIG)


def llama_meta():  # type: ignore[no-untyped-def]
    prev = torch.get_default_dtype()
    torch.set_default_dtype(bf16)
    try:
        with torch.device("meta"):
            model = transformers.LlamaForCausalLM(cfg)
    finally:
        torch.set_default_dtype(prev)
    buffers = [n for n, _ in model.named_buffers()]
    model.to_empty(device="cuda")
    fill_random(model, std=0.02)
    from transformers.models.llama import modeling_llama as ml

    model.model.rotary_emb = ml.LlamaRotaryEmbedding(config=cfg, device="cuda")
    return model.eval(), buffers


try:
    model, buffers = timed("llm_build_meta_fill", llama_meta, sync)
except Exception as exc:  # keep the rest of the profile
    emit("llm_build_meta_fill_failed", 0.0, error=repr(exc)[:400])
    model, buffers = L.build_synthetic_llama(torch, bf16), []
attn = getattr(model.config, "_attn_implementation", None)
emit("llm_meta_buffers", 0.0, buffers=buffers, attn=attn)
with torch.inference_mode():
    for batch, n in ((1, 5), (128, 3)):
        dec = L.StaticDecoder(torch, model, batch, 128, 128)
        timed("llm_prepare", dec.prepare, sync, batch=batch, mode=dec.mode)
        for i in range(n + 1):
            timed("llm_decode_call", dec.decode, sync, batch=batch, i=i)
        ok = bool(((dec.tokens >= 0) & (dec.tokens < cfg.vocab_size)).all())
        logits = model(input_ids=dec.tokens[:1, -16:]).logits
        emit(
            "llm_meta_ok",
            0.0,
            batch=batch,
            tokens_ok=ok,
            finite=bool(torch.isfinite(logits).all().item()),
            distinct=int(dec.tokens[0].unique().numel()),
        )
        if batch == 128:
            dec._reset()
            dec._prefill()
            for label in ("with_mask", "no_mask"):
                mask = dec.mask
                if label == "no_mask":
                    dec.mask = None  # type: ignore[assignment]

                    def step(model=model, dec=dec):  # type: ignore[no-untyped-def]
                        out = model(
                            input_ids=dec.ids,
                            position_ids=dec.position_ids,
                            past_key_values=dec.cache,
                            use_cache=True,
                        )
                        dec.ids.copy_(out.logits[:, -1].argmax(-1, keepdim=True))
                else:
                    step = dec._step
                for _ in range(2):
                    step()
                sync()
                t = time.perf_counter()
                for _ in range(5):
                    step()
                sync()
                emit("llm_b128_eager_step", (time.perf_counter() - t) / 5, variant=label)
                cuda = [torch.profiler.ProfilerActivity.CUDA]
                with torch.profiler.profile(activities=cuda) as prof:
                    step()
                    sync()
                rows = sorted(prof.key_averages(), key=lambda e: -e.device_time_total)[:12]
                emit(
                    "llm_b128_top_kernels",
                    0.0,
                    variant=label,
                    kernels=[
                        [e.key[:90], round(e.device_time_total / 1000, 3), e.count] for e in rows
                    ],
                )
                dec.mask = mask
        del dec
del model
torch.cuda.empty_cache()
model = timed("llm_build_old_bf16_on_cuda", lambda: L.build_synthetic_llama(torch, bf16), sync)
del model
emit("total", time.perf_counter() - T)
