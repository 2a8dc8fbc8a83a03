#!/usr/bin/env bash
# The H200 proof run (issue 3 item 5), executed from the repo root on the device machine:
#   bash agent/bench/device_run.sh          (wheels for diffusers & jsonschema carried in .whl/)
# Captures the tool outputs the NVIDIA fixture profiles are made from, then runs the agent's
# check and every smoke, and the raw diffusers/transformers runs of the same shapes, in one
# session. Everything lands in $OUT/results.tar.gz (the device tool returns few files).
set -u
RES=/tmp/res; mkdir -p "$RES/captures" "$RES/h200"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD/agent/src:$PWD/agent"
step() {  # step NAME TIMEOUT CMD… : stdout to $RES/NAME, stderr to $RES/NAME.err, wall time logged
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s)
  timeout "$limit" "$@" >"$RES/$name" 2>"$RES/$name.err"; local rc=$?
  echo "$name rc=$rc wall=$(( $(date +%s) - t0 ))s" | tee -a "$RES/steps.log"
}
# Phases (arguments, default "captures first"): captures, first (agent + raw, once each),
# overhead and llm-rounds (agent and raw alternated, to see run-to-run spread), full (one
# `check` report with every smoke, the per-booking gate as a node would run it).
PHASES=${*:-captures first}
C=captures
A="python3 -m labgpu_agent"
QUERY=$(python3 -c 'from labgpu_agent.parsers.nvidia_smi import QUERY_FIELDS; print(QUERY_FIELDS)')
for phase in $PHASES; do case $phase in
captures)
step $C/nvidia-smi-q-x.xml 60 nvidia-smi -q -x
step $C/nvidia-smi-query.csv 60 nvidia-smi --query-gpu="$QUERY" --format=csv
step $C/nvidia-smi-fixture-query.csv 60 nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,pcie.link.gen.current,pcie.link.width.current,pcie.link.width.max,temperature.gpu,power.draw,power.limit,memory.total,memory.used,utilization.gpu,ecc.errors.uncorrected.volatile.total,clocks.sm,clocks.max.sm --format=csv
step $C/nvidia-smi.txt 60 nvidia-smi
step $C/nvidia-smi-q.txt 60 nvidia-smi -q
step $C/lspci-vvv-10de.txt 60 lspci -vvv -d 10de:
step $C/lspci-vvv.txt 60 lspci -vvv
step $C/uname-r.txt 10 uname -r
step $C/proc-modules.txt 10 cat /proc/modules
step $C/dmesg-err-warn.txt 10 dmesg --level=err,warn
step $C/id.txt 10 id
step $C/ls-dev.txt 10 sh -c 'ls -l /dev/nvidiactl /dev/nvidia0 /dev/nvidia-uvm 2>&1'
step $C/versions.txt 60 python3 -c 'import torch, diffusers, transformers, sys; print(sys.version); print("torch", torch.__version__, torch.version.cuda); print("diffusers", diffusers.__version__); print("transformers", transformers.__version__); p = torch.cuda.get_device_properties(0); print(p.name, p.multi_processor_count, p.total_memory)'
;;
first)
step h200/check.json 120 $A check --json --profile h200
step h200/smoke-matmul.json 180 $A smoke matmul --json --profile h200
step h200/smoke-bandwidth.json 180 $A smoke bandwidth --json --profile h200
step h200/smoke-sdxl.json 300 $A smoke sdxl --json --profile h200
step h200/raw-sdxl.json 300 python3 agent/bench/raw_sdxl.py
step h200/smoke-llm.json 300 $A smoke llm --json --profile h200
step h200/raw-llm.json 300 python3 agent/bench/raw_llm.py
;;
overhead)
# Alternate the order between rounds so that drift (clocks, temperature) favours neither side.
step h200/smoke-llm-1.json 300 $A smoke llm --json --profile h200
step h200/raw-llm-1.json 300 python3 agent/bench/raw_llm.py
step h200/raw-sdxl-1.json 300 python3 agent/bench/raw_sdxl.py
step h200/smoke-sdxl-1.json 300 $A smoke sdxl --json --profile h200
step h200/raw-llm-2.json 300 python3 agent/bench/raw_llm.py
step h200/smoke-llm-2.json 300 $A smoke llm --json --profile h200
;;
llm-rounds)
# Eager decode is host-bound and its speed moves between processes; more alternated rounds.
for round in 3 4 5; do
  if [ $((round % 2)) = 1 ]; then
    step h200/smoke-llm-$round.json 300 $A smoke llm --json --profile h200
    step h200/raw-llm-$round.json 300 python3 agent/bench/raw_llm.py
  else
    step h200/raw-llm-$round.json 300 python3 agent/bench/raw_llm.py
    step h200/smoke-llm-$round.json 300 $A smoke llm --json --profile h200
  fi
done
;;
full)
step h200/check-full.json 420 $A check --json --profile h200 --smoke matmul,bandwidth,sdxl,llm
;;
llm-spread)
# Issue 12: run-to-run spread of eager decode, six separate processes back to back.
for round in 1 2 3 4 5 6; do
  step h200/spread-llm-$round.json 300 $A smoke llm --json --profile h200
done
;;
gate3)
# Issue 12: the whole per-booking gate, three separate processes in a row (no warn allowed), plus
# the reliability sources and the vendor stress tool the deep check would run.
step $C/nvidia-smi-nvlink-s.txt 30 nvidia-smi nvlink -s
step $C/which-dcgmi.txt 10 sh -c 'command -v dcgmi nv-hostengine || echo "dcgmi: not installed"'
if command -v dcgmi >/dev/null; then step $C/dcgmi-diag-r2.json 600 dcgmi diag -r 2 -j; fi
step h200/check-deep.json 300 $A check --json --deep --profile h200
for round in 1 2 3; do
  step h200/gate-$round.json 420 $A check --json --profile h200 --smoke matmul,bandwidth,sdxl,llm
done
;;
esac; done
step $C/nvidia-smi-query-after.csv 60 nvidia-smi --query-gpu="$QUERY" --format=csv
tar -C "$RES" -czf "$OUT/results.tar.gz" . && cp "$RES/steps.log" "$OUT/"
cat "$RES/steps.log"; tail -n 3 "$RES"/h200/*.err
