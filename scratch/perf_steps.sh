#!/bin/sh
# perf record of warm training steps only: scratch/perf_steps.sh MODEL MODE STEPS OUT.data
cd "$(dirname "$0")/.." || exit 1
PYTHONPATH=src /work/main/.venv/bin/python scratch/steps_cpu.py "$1" "$2" "$3" 2>"$4.log" &
pid=$!
until grep -q warm "$4.log" 2>/dev/null; do sleep 0.2; done
perf record -F 1000 ${PERF_CG:--g} -p $pid -o "$4" 2>/dev/null >/dev/null
wait $pid
cat "$4.log"
