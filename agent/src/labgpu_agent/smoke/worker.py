"""One smoke test in a process of its own, for run_smokes: import first, touch the GPU on `go`.

    python -m labgpu_agent.smoke.worker   # stdin: one JSON request line, later `go`

The child reads {"name", "baselines", "options", "log_level"}, imports the test's libraries
without a single CUDA call (a context would sit beside the test the parent is timing), writes
`ready <import seconds>`, waits for `go`, runs the test with run_smoke and writes its results as
one JSON line. The protocol has its own copy of stdout: anything a library prints goes to stderr.
"""

from __future__ import annotations

import json
import logging
import os
import selectors
import subprocess
import sys
import time
from typing import IO, Any

from labgpu_agent.smoke.base import SmokeResult, unused_imports_blocked

# What a child that died before answering is reported as (its first metric).
FIRST_METRIC = {"sdxl": ("images_per_s", "images/s"), "llm": ("tokens_per_s_batch1", "tokens/s")}


def preload(name: str) -> None:
    """Import everything the test `name` will use, short of the GPU: torch, and diffusers'
    pipeline and models or transformers' Llama and StaticCache (each a lazy attribute that loads
    its modules when read). Whatever fails here, the test itself reports when it runs."""
    with unused_imports_blocked():
        try:
            import torch  # noqa: F401

            if name == "sdxl":
                import diffusers

                for attr in (
                    "StableDiffusionXLPipeline",
                    "UNet2DConditionModel",
                    "AutoencoderKL",
                    "EulerDiscreteScheduler",
                ):
                    getattr(diffusers, attr)
                import labgpu_agent.smoke.sdxl
            elif name == "llm":
                import transformers

                for attr in ("LlamaConfig", "LlamaForCausalLM", "StaticCache"):
                    getattr(transformers, attr)
                import transformers.modeling_utils

                import labgpu_agent.smoke.llm  # noqa: F401
        except Exception:  # the run says what is missing, as a skipped result
            pass


class SmokeProcess:
    """The parent's handle on one child: started at once, run when its turn comes."""

    def __init__(self, name: str, popen: subprocess.Popen[str]):
        self.name, self.popen = name, popen
        self.import_s: float | None = None
        self.waited_s = 0.0
        self.answered_ready = False

    @classmethod
    def start(cls, name: str, baselines: dict[str, float], options: dict[str, Any]) -> SmokeProcess:
        popen = subprocess.Popen(
            [sys.executable, "-m", "labgpu_agent.smoke.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        request = {
            "name": name,
            "baselines": baselines,
            "options": options,
            "log_level": logging.getLogger().getEffectiveLevel(),
        }
        assert popen.stdin is not None
        popen.stdin.write(json.dumps(request) + "\n")
        popen.stdin.flush()
        return cls(name, popen)

    @staticmethod
    def first_ready(processes: list[SmokeProcess]) -> SmokeProcess:
        """The first of `processes` to have finished its imports (or died), waiting if none has."""
        for process in processes:
            if process.answered_ready:
                return process
        started = time.perf_counter()
        with selectors.DefaultSelector() as selector:
            for process in processes:
                selector.register(process._stdout, selectors.EVENT_READ, process)
            key = selector.select()[0][0]
        process = key.data
        line = process._stdout.readline().split()  # "ready 9.812", or nothing from a dead child
        if line[:1] == ["ready"] and len(line) == 2:
            process.import_s = float(line[1])
        process.answered_ready = True
        process.waited_s = time.perf_counter() - started
        return process  # type: ignore[no-any-return]

    @property
    def _stdout(self) -> IO[str]:
        assert self.popen.stdout is not None
        return self.popen.stdout

    def run(self) -> list[SmokeResult]:
        """Let the child run its test; its results, with how long its imports took."""
        if not self.answered_ready:
            SmokeProcess.first_ready([self])
        assert self.popen.stdin is not None
        try:
            self.popen.stdin.write("go\n")
            self.popen.stdin.close()
        except BrokenPipeError:
            pass
        answer = self._stdout.read().strip().splitlines()
        code = self.popen.wait()
        try:
            results = [SmokeResult.from_dict(item) for item in json.loads(answer[-1])]
        except (IndexError, ValueError, TypeError):
            metric, unit = FIRST_METRIC[self.name]
            reason = f"the {self.name} smoke process exited with code {code} before reporting"
            return [SmokeResult(self.name, "failed", metric, unit=unit, reason=reason)]
        for result in results:
            result.extra["own_process"] = {
                "import_s": self.import_s,
                "waited_for_imports_s": round(self.waited_s, 3),
            }
        return results

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
        self.popen.wait()


def main() -> int:
    protocol = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # a library's print, even from C, lands on stderr, not in the protocol
    request = json.loads(sys.stdin.readline())
    logging.basicConfig(
        level=request.get("log_level", logging.WARNING),
        format="%(asctime)s %(name)s [%(process)d] %(message)s",
    )
    name = request["name"]
    started = time.perf_counter()
    preload(name)
    protocol.write(f"ready {time.perf_counter() - started:.3f}\n")
    protocol.flush()
    if sys.stdin.readline().strip() != "go":
        return 0
    from labgpu_agent.smoke import run_smoke

    results = run_smoke(name, request["baselines"], **request["options"])
    protocol.write(json.dumps([r.to_dict() for r in results]) + "\n")
    protocol.flush()
    return 0


if __name__ == "__main__":
    code = main()
    # The agent waits for this process to exit before the next test takes the GPU. Nothing is left
    # to write or close, and finalising the interpreter would first tear down every module of
    # torch, diffusers or transformers one by one; the driver frees the GPU either way.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
