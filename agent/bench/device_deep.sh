#!/usr/bin/env bash
# Issue 23 items 2, 3, 5 on the H200, from a folder holding agent/ (and whl/ with the wheels the
# device image lacks: diffusers, jsonschema …):
#   bash agent/bench/device_deep.sh PHASE…
# Phases: captures (nvidia-smi at rest, with a process holding 60 GiB, with one running bf16
# products back to back, and the agent's `check` in each state), deep-dev (one short --deep at
# rest and one beside the busy process), llm (the smoke llm in three processes and once beside
# the busy process), gate (the full gate once), deep3 (--deep three times at rest), deep-hog
# (--deep beside the busy process, and beside the 60 GiB holder), gate3 (the full gate three
# times), gate-hog (the full gate beside the busy process), imports (-X importtime of the smoke
# libraries). ROUNDS="1 2" picks deep3's rounds (a device call is limited to 10 minutes).
# Everything lands in $OUT/results.tar.gz.
set -u
RES=/tmp/res; mkdir -p "$RES/captures" "$RES/h200"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
if ls whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site whl/*.whl && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD/agent/src:$PWD/agent"
step() {  # step NAME TIMEOUT CMD… : stdout to $RES/NAME, stderr to $RES/NAME.err, wall time logged
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s%N)
  timeout "$limit" "$@" >"$RES/$name" 2>"$RES/$name.err"; local rc=$?
  echo "$name rc=$rc wall=$(( ($(date +%s%N) - t0) / 1000000 ))ms" | tee -a "$RES/steps.log"
  tar -C "$RES" -czf "$OUT/results.tar.gz" .  # what ran so far comes back even if a later step hangs
}
HOLDER=
start_holder() {  # start_holder hold|busy : another process on the GPU, until stop_holder
  rm -f /tmp/ready
  python3 agent/bench/gpu_holder.py "$1" --gib 60 --ready /tmp/ready >"$RES/holder-$1.log" 2>&1 &
  HOLDER=$!
  for _ in $(seq 120); do [ -f /tmp/ready ] && break; sleep 0.5; done
  echo "holder $1 pid $HOLDER: $(cat /tmp/ready 2>/dev/null)" | tee -a "$RES/steps.log"
}
stop_holder() { [ -n "$HOLDER" ] && kill "$HOLDER" && wait "$HOLDER" 2>/dev/null; HOLDER=; sleep 2; }
A="python3 -m labgpu_agent"
QUERY=$(python3 -c 'from labgpu_agent.parsers.nvidia_smi import QUERY_FIELDS; print(QUERY_FIELDS)')
APPS=$(python3 -c 'from labgpu_agent.parsers.processes import COMPUTE_APPS_FIELDS; print(COMPUTE_APPS_FIELDS)')
C=captures
capture() {  # capture STATE : the three views of the GPU the agent reads, and `check` itself
  step $C/$1-nvidia-smi-q-x.xml 60 nvidia-smi -q -x
  step $C/$1-nvidia-smi-query.csv 60 nvidia-smi --query-gpu="$QUERY" --format=csv
  step $C/$1-nvidia-smi-compute-apps.csv 60 nvidia-smi --query-compute-apps="$APPS" --format=csv
  step $C/$1-nvidia-smi.txt 60 nvidia-smi
  step h200/check-$1.json 120 $A check --json --profile h200
}
GATE="check --json --profile h200 --smoke matmul,bandwidth,sdxl,llm"
for phase in ${*:-captures}; do case $phase in
captures)
step $C/versions.txt 60 python3 -c 'import torch, transformers, sys; print(sys.version); print("torch", torch.__version__, torch.version.cuda); print("transformers", transformers.__version__)'
step $C/date.txt 5 date -u
capture idle
start_holder hold; capture hold60; stop_holder
start_holder busy; capture busy; stop_holder
;;
deep-dev)
step h200/deep-dev.json 300 $A check --json --deep --burn-seconds 30 --profile h200
start_holder busy; step h200/deep-dev-busy.json 300 $A check --json --deep --burn-seconds 20 --profile h200; stop_holder
;;
llm)
for round in 1 2 3; do step h200/smoke-llm-$round.json 300 $A smoke llm --json --profile h200; done
start_holder busy; step h200/smoke-llm-busy.json 300 $A smoke llm --json --profile h200; stop_holder
;;
gate)
step h200/gate-1.json 420 $A $GATE
;;
deep3)
for round in ${ROUNDS:-1 2 3}; do step h200/deep-$round.json 400 $A check --json --deep --profile h200 ${BURN:+--burn-seconds $BURN}; done
;;
deep-hog)
start_holder busy; step h200/deep-busy.json 400 $A check --json --deep --profile h200 ${BURN:+--burn-seconds $BURN}; stop_holder
start_holder hold; step h200/deep-hold60.json 400 $A check --json --deep --profile h200 --burn-seconds 10; stop_holder
;;
llm-b1)
for round in 1 2; do step h200/smoke-llm-b1-$round.json 90 $A smoke llm --json --profile h200 --batch 1; done
start_holder busy; step h200/smoke-llm-b1-busy.json 90 $A smoke llm --json --profile h200 --batch 1; stop_holder
PYTHONFAULTHANDLER=1 step h200/smoke-llm-b128-debug.json 75 timeout -s ABRT 70 $A -v smoke llm --json --profile h200 --batch 128 --iters 2 --warmup 1
;;
llm-debug)
PYTHONFAULTHANDLER=1 step h200/smoke-llm-debug.json 80 timeout -s ABRT 75 $A -v smoke llm --json --profile h200 --batch 1 --iters 3 --warmup 1
;;
gate3)
for round in 1 2 3; do step h200/gate-$round.json 420 $A $GATE; done
;;
imports)
# Where an import's seconds go (issue 27 item 4): python's own import timer, top entries.
step h200/importtime.txt 120 python3 -X importtime -c 'import torch, diffusers, transformers, transformers.models.llama.modeling_llama'
;;
gate-hog)
start_holder busy; step h200/gate-busy.json 420 $A $GATE; stop_holder
;;
esac; done
step $C/after-nvidia-smi-query.csv 60 nvidia-smi --query-gpu="$QUERY" --format=csv
tar -C "$RES" -czf "$OUT/results.tar.gz" . && cp "$RES/steps.log" "$OUT/"
cat "$RES/steps.log"
for f in "$RES"/h200/*.json; do
  python3 - "$f" <<'EOF'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print(sys.argv[1].split("/")[-1], "unreadable", e); raise SystemExit
smoke = r.get("smoke", [])
if "verdict" in r and "facts" in r:
    print(sys.argv[1].split("/")[-1], r["verdict"], r.get("timing"), [f["id"] for f in r["findings"]])
    for m in r["facts"].get("measurements", []):
        print("   ", m["test"], m["gpu"], m["metric"], m["value"], m["unit"])
for s in smoke:
    e = s.get("extra", {})
    print("   smoke", s["name"], s["metric"], s["status"], s["value"], s.get("reason"), e.get("decode"), e.get("seconds_all"), e.get("decode_fallback"))
EOF
done
tail -n 4 "$RES"/h200/*.err
