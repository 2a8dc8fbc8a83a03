"""LLM smoke decoding: the Llama-3-8B architecture through transformers' model and StaticCache.

Synthetic weights by default (LlamaConfig below matches meta-llama/Meta-Llama-3-8B's config.json;
random init, nothing downloaded); `weights=DIR` loads a local checkpoint instead. Greedy decoding
of exactly `new_tokens` tokens after a `prompt_tokens` prompt, at batch 1 and at batch B, each step
replayed as a CUDA graph (StaticDecoder); the throughput is that of the median of `iters` timed
calls, their spread recorded beside it (see run_llm).
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import os
import statistics
import traceback
from collections.abc import Iterator
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

log = logging.getLogger("labgpu_agent.smoke.llm")

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


# bf16 attention, two summation orders: they agree to ~1e-3; a wrong head mapping is off by ~1.
GQA_TOLERANCE = 2e-2


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


class GqaDecodeAttention:
    """transformers' `sdpa` attention, except that a one-token decode step attends per KV head.

    With an explicit mask transformers' SDPA path expands K and V from 8 to 32 heads (`repeat_kv`)
    before every attention: at batch 128 and a 256-slot cache that is 1 GB of copies a step, 19 of
    its 34 ms on an H200 (agent/bench/gate_profile.py). For one query token the 4 query heads that
    share a KV head are simply 4 rows against the same keys, so the step asks SDPA for that
    (B, 8, 4, D) × (B, 8, L, D) product instead: the same arithmetic, no copies. Every other call
    (the prefill, models without grouped heads) goes to transformers' own function. With `check`
    on (the eager steps before capture), each layer also runs transformers' path and the largest
    relative difference is kept, so the smoke test proves the two agree on this stack.
    """

    def __init__(self, reference: Any):
        self.reference = reference
        self.check = False
        self.worst: float | None = None

    def __call__(
        self,
        module: Any,
        query: Any,
        key: Any,
        value: Any,
        attention_mask: Any,
        dropout: float = 0.0,
        scaling: float | None = None,
        **kwargs: Any,
    ) -> tuple[Any, None]:
        groups = getattr(module, "num_key_value_groups", 1)
        if (
            query.shape[2] != 1
            or groups == 1
            or kwargs.get("position_bias") is not None
            or (attention_mask is not None and attention_mask.shape[1] != 1)
        ):
            result: tuple[Any, None] = self.reference(
                module,
                query,
                key,
                value,
                attention_mask,
                dropout=dropout,
                scaling=scaling,
                **kwargs,
            )
            return result
        import torch

        batch, heads, _, dim = query.shape
        rows = query.reshape(batch, key.shape[1], groups, dim)  # head kv*groups+g → row g of kv
        out = torch.nn.functional.scaled_dot_product_attention(
            rows, key, value, attn_mask=attention_mask, dropout_p=dropout, scale=scaling
        )
        out = out.reshape(batch, heads, 1, dim).transpose(1, 2).contiguous()
        if self.check:
            ref, _ = self.reference(
                module, query, key, value, attention_mask, dropout=dropout, scaling=scaling
            )
            rel = float(((out.float() - ref.float()).norm() / ref.float().norm()).item())
            self.worst = max(self.worst or 0.0, rel)
        return out, None


@contextlib.contextmanager
def gqa_decode_attention(transformers: ModuleType) -> Iterator[GqaDecodeAttention | None]:
    """Route transformers' `sdpa` attention through GqaDecodeAttention inside the block only."""
    try:
        from transformers.modeling_utils import AttentionInterface
    except ImportError:  # transformers before the attention registry: its own path stays
        yield None
        return
    mapping = AttentionInterface._global_mapping
    reference = mapping.get("sdpa")
    if reference is None:
        yield None
        return
    attention = GqaDecodeAttention(reference)
    mapping["sdpa"] = attention
    try:
        yield attention
    finally:
        mapping["sdpa"] = reference


class StaticDecoder:
    """Greedy decoding with a static KV cache, one decode step captured as a CUDA graph.

    Eager `generate` is bound by the host launching ~600 kernels a token, so its speed follows the
    VM's CPU (0.59-1.41x of its median between processes on one H200, docs/benchmarks.md). A
    replayed graph launches the whole step at once: what is timed is the GPU running the same
    Llama forward (transformers' model, its StaticCache), as inference servers decode. Every
    buffer the step reads or writes is allocated once, so each replay is the next token.
    """

    def __init__(
        self, torch: ModuleType, model: Any, batch: int, prompt_tokens: int, new_tokens: int
    ):
        transformers = import_optional("transformers")
        self.torch, self.model = torch, model
        self.batch, self.prompt_tokens, self.new_tokens = batch, prompt_tokens, new_tokens
        length = prompt_tokens + new_tokens
        config = model.config
        try:  # transformers 5: the batch size, device and dtype come with the first update
            self.cache = transformers.StaticCache(config=config, max_cache_len=length)
        except TypeError:  # 4.x
            self.cache = transformers.StaticCache(
                config=config,
                max_batch_size=batch,
                max_cache_len=length,
                device="cuda",
                dtype=torch.bfloat16,
            )
        self.prompt = decode_inputs(torch, batch, prompt_tokens, config.vocab_size)["input_ids"]
        self.ids = torch.zeros(batch, 1, dtype=torch.long, device="cuda")
        self.cache_position = torch.zeros(1, dtype=torch.long, device="cuda")
        self.position_ids = torch.zeros(batch, 1, dtype=torch.long, device="cuda")
        self.step_index = torch.zeros(1, dtype=torch.long, device="cuda")
        self.tokens = torch.zeros(batch, new_tokens, dtype=torch.long, device="cuda")
        # Additive mask over the whole cache: 0 where a slot is written, the dtype's minimum
        # elsewhere; a 4-D mask is used as given (no host-side mask building inside the graph).
        self.mask = torch.empty(batch, 1, 1, length, dtype=torch.bfloat16, device="cuda")
        # transformers 4.x places each step by `cache_position`; 5.x keeps its own counter and no
        # longer takes the argument.
        accepts = inspect.signature(model.model.forward).parameters
        self.position_kwarg = "cache_position" in accepts
        self.logits: Any = None
        self.graph: Any = None
        self.mode = "eager"
        self.reason: str | None = None

    def _reset(self) -> None:
        torch = self.torch
        # transformers 5's StaticLayer writes at its own device-side length counter, not at
        # `cache_position`: rewind it (and clear the keys) for each call.
        self.cache.reset()
        self.mask.fill_(torch.finfo(torch.bfloat16).min)
        self.mask[..., : self.prompt_tokens] = 0
        self.cache_position.fill_(self.prompt_tokens)
        self.position_ids.fill_(self.prompt_tokens)
        self.step_index.fill_(1)

    def _prefill(self) -> None:
        torch = self.torch
        positions = torch.arange(self.prompt_tokens, device="cuda")
        out = self.model(
            input_ids=self.prompt,
            position_ids=positions.unsqueeze(0).expand(self.batch, -1),
            past_key_values=self.cache,
            use_cache=True,
            logits_to_keep=1,
            **({"cache_position": positions} if self.position_kwarg else {}),
        )
        first = out.logits[:, -1].argmax(-1, keepdim=True)
        self.ids.copy_(first)
        self.tokens[:, :1].copy_(first)

    def _step(self) -> None:
        self.mask.index_fill_(3, self.cache_position, 0)
        out = self.model(
            input_ids=self.ids,
            position_ids=self.position_ids,
            past_key_values=self.cache,
            attention_mask=self.mask,
            use_cache=True,
            **({"cache_position": self.cache_position} if self.position_kwarg else {}),
        )
        self.logits = out.logits
        following = out.logits[:, -1].argmax(-1, keepdim=True)
        self.ids.copy_(following)
        self.tokens.index_copy_(1, self.step_index, following)
        self.cache_position.add_(1)
        self.position_ids.add_(1)
        self.step_index.add_(1)

    def prepare(self, attention: GqaDecodeAttention | None = None) -> None:
        """Run prefill and two steps eagerly (allocates the cache, warms cuBLAS), then capture.

        This is the warm-up: every kernel of a call has run once before the first timed call
        (measured on the H200: the first timed call within 2 % of the next four)."""
        torch = self.torch
        self._reset()
        self._prefill()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        if attention is not None:
            attention.check = True
        try:
            with torch.cuda.stream(side):
                for _ in range(2):
                    self._step()
        finally:
            if attention is not None:
                attention.check = False
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        log.info("batch %d: prefill and two eager steps done; capturing", self.batch)
        try:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                self._step()
            self.graph, self.mode = graph, "cuda_graph"
            log.info("batch %d: decode step captured", self.batch)
        except Exception as exc:  # a stack that cannot capture still decodes, eagerly
            last = traceback.format_exception_only(exc)[-1].strip()
            self.reason = f"CUDA graph capture failed, decoded eagerly: {last[:300]}"
            torch.cuda.synchronize()

    def decode(self) -> None:
        """One whole call: prefill the prompt, then `new_tokens - 1` steps."""
        self._reset()
        self._prefill()
        for _ in range(self.new_tokens - 1):
            if self.graph is not None:
                self.graph.replay()
            else:
                self._step()


def run_llm(
    *,
    batch: int = 128,
    new_tokens: int = 128,
    prompt_tokens: int = 128,
    weights: str | None = None,
    warmup: int | None = None,
    iters: int = 5,
    iters_large: int | None = 3,
    mode: str = "graph",
    baselines: dict[str, float] | None = None,
) -> list[SmokeResult]:
    """One result per batch size (1 and `batch`): metric `tokens_per_s_batch{N}`, from the median
    of `iters` timed calls at batch 1 and `iters_large` at `batch` (None: `iters`), their spread
    in `extra`. Graph decode needs no warm-up call (`prepare` runs every kernel first), eager
    `generate` one. `mode="generate"` times transformers' eager `generate` instead (the smoke
    test before issue 23, for comparison)."""
    state: dict[str, Any] = {}
    results = []
    if warmup is None:
        warmup = 0 if mode == "graph" else 1
    for size in dict.fromkeys((1, batch)):
        metric = f"tokens_per_s_batch{size}"
        calls = iters if size == 1 or iters_large is None else iters_large
        baseline = (baselines or {}).get(f"llm:{metric}")

        def run(
            size: int = size,
            metric: str = metric,
            baseline: float | None = baseline,
            calls: int = calls,
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
            decoder: StaticDecoder | None = None
            gqa_error: float | None = None
            with torch.inference_mode():
                if mode == "generate":
                    inputs = decode_inputs(torch, size, prompt_tokens, model.config.vocab_size)
                    outputs: list[Any] = []

                    def call() -> None:
                        outputs[:] = [model.generate(**inputs, **generate_kwargs(new_tokens))]

                    times = time_host(torch, call, warmup=warmup, iters=calls)
                    produced = outputs[0].shape[1] - prompt_tokens
                    last = outputs[0][:1, -16:]
                else:
                    with gqa_decode_attention(transformers) as attention:
                        decoder = StaticDecoder(torch, model, size, prompt_tokens, new_tokens)
                        decoder.prepare(attention)
                        if attention is not None and (attention.worst or 0.0) > GQA_TOLERANCE:
                            raise SmokeFailed(
                                f"decode attention per KV head differs from transformers' SDPA "
                                f"by {attention.worst:.2e} (relative)"
                            )
                        times = time_host(torch, decoder.decode, warmup=warmup, iters=calls)
                        gqa_error = attention.worst if attention is not None else None
                    tokens = decoder.tokens
                    produced = int(tokens.shape[1])
                    if not bool(((tokens >= 0) & (tokens < model.config.vocab_size)).all()):
                        raise SmokeFailed("decoded token ids outside the vocabulary")
                    last = tokens[:1, -16:]
                logits = model(input_ids=last).logits
                finite = bool(torch.isfinite(logits).all().item())
            if produced != new_tokens:
                raise SmokeFailed(f"generated {produced} tokens, expected {new_tokens}")
            if not finite:
                raise SmokeFailed("Llama logits are not finite")
            median = statistics.median(times)
            extra: dict[str, Any] = {
                "seconds_median": round(median, 4),
                "seconds_all": [round(t, 4) for t in times],
                # Spread of the timed calls around their median, as fractions of it.
                "spread_low": round(min(times) / median, 3),
                "spread_high": round(max(times) / median, 3),
                "decode": decoder.mode if decoder else "generate",
            }
            if decoder is not None and decoder.reason:
                extra["decode_fallback"] = decoder.reason
            if decoder is not None:
                extra["attention"] = "gqa_per_kv_head" if gqa_error is not None else "sdpa"
                extra["attention_check_rel_error"] = gqa_error
            del decoder
            return SmokeResult(
                name="llm",
                status="passed",
                metric=metric,
                value=round(size * new_tokens / median, 2),
                unit="tokens/s",
                baseline=baseline,
                params={
                    "batch": size,
                    "new_tokens": new_tokens,
                    "prompt_tokens": prompt_tokens,
                    "weights": weights or "synthetic",
                    "dtype": "bfloat16",
                    "warmup": warmup,
                    "iters": calls,
                    "mode": mode,
                    "statistic": "median",
                },
                extra=extra,
                environment={**torch_environment(torch), "transformers": transformers.__version__},
            )

        results.append(guarded("llm", metric, "tokens/s", run))
    state.clear()  # drop the 16 GB model before the caller frees cached memory
    return results
