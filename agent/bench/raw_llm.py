"""Raw transformers Llama-3-8B decode, for comparing with `labgpu-agent smoke llm`.

Plain transformers `generate`, none of the agent's harness; the config dict is the agent's so
that both build the same architecture.
"""

import argparse
import json
import statistics
import time

import torch
import transformers

from labgpu_agent.smoke.llm import LLAMA3_8B_CONFIG

parser = argparse.ArgumentParser()
parser.add_argument("--batch", type=int, default=128)
parser.add_argument("--new-tokens", type=int, default=128)
parser.add_argument("--prompt-tokens", type=int, default=128)
parser.add_argument("--warmup", type=int, default=1)
parser.add_argument("--iters", type=int, default=5)
args = parser.parse_args()

torch.manual_seed(0)
torch.set_default_dtype(torch.bfloat16)
with torch.device("cuda"):
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**LLAMA3_8B_CONFIG)).eval()
torch.set_default_dtype(torch.float32)
results = {}
for batch in dict.fromkeys((1, args.batch)):
    g = torch.Generator(device="cuda").manual_seed(2)
    ids = torch.randint(0, 128256, (batch, args.prompt_tokens), device="cuda", generator=g)
    times = []
    with torch.inference_mode():
        for i in range(args.warmup + args.iters):
            torch.cuda.synchronize()
            start = time.perf_counter()
            out = model.generate(
                input_ids=ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=args.new_tokens,
                min_new_tokens=args.new_tokens,
                do_sample=False,
                pad_token_id=0,
            )
            torch.cuda.synchronize()
            if i >= args.warmup:
                times.append(time.perf_counter() - start)
    median = statistics.median(times)
    results[f"batch{batch}"] = {
        "seconds_all": times,
        "seconds_per_generate": median,
        "tokens_per_s": batch * (out.shape[1] - args.prompt_tokens) / median,
    }
print(
    json.dumps(
        {
            "name": "raw-transformers-llama3-8b",
            "params": vars(args),
            "results": results,
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "device": torch.cuda.get_device_name(0),
        }
    )
)
