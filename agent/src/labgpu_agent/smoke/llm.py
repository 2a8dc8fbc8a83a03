"""LLM smoke decoding: the Llama-3-8B architecture through transformers' `generate`.

Synthetic weights by default (LlamaConfig below matches meta-llama/Meta-Llama-3-8B's config.json;
random init, nothing downloaded); `weights=DIR` loads a local checkpoint instead. Greedy decoding
of exactly `new_tokens` tokens at batch 1 and at batch B, each timed after a warm-up run; the
throughput is that of the fastest timed call (see run_llm).
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

LLAMA3_8B_CONFIG: dict[str, Any] = {
    "vocab_size": 128256,
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "max_position_embeddings": 8192,
    "rope_theta": 500000.0,
    "rms_norm_eps": 1e-05,
    "hidden_act": "silu",
    "tie_word_embeddings": False,
    "attention_bias": False,
    "bos_token_id": 128000,
    "eos_token_id": 128001,
}


def build_synthetic_llama(torch: ModuleType, dtype: Any) -> Any:
    transformers = import_optional("transformers")
    config = transformers.LlamaConfig(**LLAMA3_8B_CONFIG)
    torch.manual_seed(0)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)  # build straight in bf16 on the GPU: 16 GB, not 32
    try:
        with torch.device("cuda"):
            model = transformers.LlamaForCausalLM(config)
    finally:
        torch.set_default_dtype(previous)
    return model.eval()


def decode_inputs(torch: ModuleType, batch: int, prompt_tokens: int, vocab: int) -> dict[str, Any]:
    gen = torch.Generator(device="cuda").manual_seed(2)
    ids = torch.randint(0, vocab, (batch, prompt_tokens), device="cuda", generator=gen)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


def generate_kwargs(new_tokens: int) -> dict[str, Any]:
    # min_new_tokens keeps random weights from stopping early at an end-of-text token.
    return {
        "max_new_tokens": new_tokens,
        "min_new_tokens": new_tokens,
        "do_sample": False,
        "pad_token_id": 0,
    }


def run_llm(
    *,
    batch: int = 128,
    new_tokens: int = 128,
    prompt_tokens: int = 128,
    weights: str | None = None,
    warmup: int = 1,
    iters: int = 5,
    baselines: dict[str, float] | None = None,
) -> list[SmokeResult]:
    """One result per batch size (1 and `batch`): metric `tokens_per_s_batch{N}`."""
    state: dict[str, Any] = {}
    results = []
    for size in dict.fromkeys((1, batch)):
        metric = f"tokens_per_s_batch{size}"
        baseline = (baselines or {}).get(f"llm:{metric}")

        def run(
            size: int = size, metric: str = metric, baseline: float | None = baseline
        ) -> SmokeResult:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            torch = load_torch()
            transformers = import_optional("transformers")
            if "model" not in state:
                if weights:
                    state["model"] = (
                        transformers.AutoModelForCausalLM.from_pretrained(
                            weights, dtype=torch.bfloat16, local_files_only=True
                        )
                        .to("cuda")
                        .eval()
                    )
                else:
                    state["model"] = build_synthetic_llama(torch, torch.bfloat16)
            model = state["model"]
            inputs = decode_inputs(torch, size, prompt_tokens, model.config.vocab_size)
            outputs: list[Any] = []

            def generate() -> None:
                outputs[:] = [model.generate(**inputs, **generate_kwargs(new_tokens))]

            with torch.inference_mode():
                times = time_host(torch, generate, warmup=warmup, iters=iters)
                produced = outputs[0].shape[1] - prompt_tokens
                logits = model(input_ids=outputs[0][:1, -16:]).logits
                finite = bool(torch.isfinite(logits).all().item())
            if produced != new_tokens:
                raise SmokeFailed(f"generated {produced} tokens, expected {new_tokens}")
            if not finite:
                raise SmokeFailed("Llama logits are not finite")
            # The fastest call, not the median: eager decode is bound by the host launching
            # kernels, and interference from the host (other tenants, CPU frequency) only ever
            # adds time. Over 19 processes on one H200 the fastest of 5 moved 0.67-1.32x around
            # its median where the median call moved 0.59-1.41x (docs/benchmarks.md, issue 12).
            seconds = min(times)
            return SmokeResult(
                name="llm",
                status="passed",
                metric=metric,
                value=round(size * new_tokens / seconds, 2),
                unit="tokens/s",
                baseline=baseline,
                params={
                    "batch": size,
                    "new_tokens": new_tokens,
                    "prompt_tokens": prompt_tokens,
                    "weights": weights or "synthetic",
                    "dtype": "bfloat16",
                    "warmup": warmup,
                    "iters": iters,
                    "statistic": "fastest",
                },
                extra={
                    "seconds_per_generate": round(seconds, 4),
                    "seconds_median": round(statistics.median(times), 4),
                    "seconds_all": [round(t, 4) for t in times],
                },
                environment={**torch_environment(torch), "transformers": transformers.__version__},
            )

        results.append(guarded("llm", metric, "tokens/s", run))
    state.clear()  # drop the 16 GB model before the caller frees cached memory
    return results
