#!/usr/bin/env bash
# One call on a GPU host: the CUDA test suite, then the benchmarks, with full
# logs and the benchmark JSON under LOGDIR and a short summary printed last.
#
#   ci/gpu-host.sh LOGDIR [WHEELHOUSE]
#
# The host needs a CUDA build of torch in `python3`. If nox is missing and a
# WHEELHOUSE folder of wheels is given, nox is installed from it offline.
# TEST_WHEELS=DIR: test-cuda and sanitize install the kernforge wheels in DIR
# (e.g. a carried dist/cu13) instead of building from source.
# TESTS=0: no test-cuda. PYTEST_ARGS: more arguments for test-cuda's pytest
# (e.g. "-m 'multi_gpu or huge'" on a two-GPU host).
# SANITIZE=1: nox -s sanitize after the tests, SANITIZE_ARGS its arguments
# (e.g. "racecheck -n 16": one tool, 16 pytest-xdist workers). Or SANITIZE_JOBS
# "NAME=ARGS;NAME=ARGS": several nox -s sanitize runs with those arguments, each
# in its own venv, its logs in LOGDIR/sanitize-NAME, spread over the host's GPUs
# one lane per GPU (SANITIZE_LANES_PER_GPU=N: N a GPU) (ci/lanes.py), all stopped SANITIZE_DEADLINE seconds (default
# 540) after they start; e.g. 'race1=racecheck -n 10 -k "three_steps";mem=memcheck -n 14'.
# Give them TEST_WHEELS: without, each run builds kernforge itself. BENCH=0: no benchmarks.
# BENCH_ARGS: arguments for nox -s bench (e.g. "--publish --save-baseline").
set -uo pipefail
cd "$(dirname "$0")/.."
LOGDIR=${1:?usage: ci/gpu-host.sh LOGDIR [WHEELHOUSE]}
WHEELHOUSE=${2:-}
mkdir -p "$LOGDIR"
export PYTHONUNBUFFERED=1 MAX_JOBS=${MAX_JOBS:-$(nproc)}

if ! python3 -c "import nox" 2>/dev/null; then
  [ -n "$WHEELHOUSE" ] || { echo "nox is not installed and no WHEELHOUSE was given"; exit 2; }
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/nox-site "$WHEELHOUSE"/*.whl || exit 2
  export PYTHONPATH=/tmp/nox-site${PYTHONPATH:+:$PYTHONPATH}
fi

{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"; } | tee "$LOGDIR/device.txt"

test_rc=0
if [ "${TESTS:-1}" != 0 ]; then
  eval "extra=(${PYTEST_ARGS:-})"
  python3 -m nox -s test-cuda -- ${TEST_WHEELS:+--wheels "$TEST_WHEELS"} -q -p no:cacheprovider "${extra[@]}" 2>&1 | tee "$LOGDIR/test-cuda.log"
  test_rc=${PIPESTATUS[0]}
fi
sanitize_rc=0
if [ "${SANITIZE:-0}" = 1 ] && [ -n "${SANITIZE_JOBS:-}" ]; then
  lanes=()
  IFS=';' read -ra parts <<< "$SANITIZE_JOBS"
  for part in "${parts[@]}"; do
    name=${part%%=*}
    lanes+=(--job "$name=python3 -m nox --envdir /tmp/nox-sanitize-$name -s sanitize -- ${TEST_WHEELS:+--wheels $TEST_WHEELS} --logs $LOGDIR/sanitize-$name ${part#*=}")
  done
  gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | paste -sd, -)
  # SANITIZE_LANES_PER_GPU=N: N lanes on each GPU (its index listed N times)
  gpus=$(for _ in $(seq "${SANITIZE_LANES_PER_GPU:-1}"); do echo "$gpus"; done | paste -sd, -)
  # one build of the legacy test fixtures for all the runs (noxfile.py, sanitize)
  export KERNFORGE_TEST_BUILDS=${KERNFORGE_TEST_BUILDS:-$(mktemp -d)}
  python3 ci/lanes.py --gpus "$gpus" --deadline "${SANITIZE_DEADLINE:-540}" --logs "$LOGDIR/lanes" "${lanes[@]}" 2>&1 | tee "$LOGDIR/sanitize.log"
  sanitize_rc=${PIPESTATUS[0]}
  grep -hE "(memcheck|racecheck|initcheck|synccheck): " "$LOGDIR"/lanes/*.log >> "$LOGDIR/sanitize.log"
  # each tool log, also of a run killed at the deadline: tests, reports by kernel
  python3 ci/sanitizer.py digest "$LOGDIR"/sanitize-*/*.log | sed 's/^/digest: /' >> "$LOGDIR/sanitize.log"
elif [ "${SANITIZE:-0}" = 1 ]; then
  eval "sanitize_args=(${SANITIZE_ARGS:-})"
  python3 -m nox -s sanitize -- ${TEST_WHEELS:+--wheels "$TEST_WHEELS"} "${sanitize_args[@]}" 2>&1 | tee "$LOGDIR/sanitize.log"
  sanitize_rc=${PIPESTATUS[0]}
  cp -r sanitize-logs "$LOGDIR/" 2>/dev/null
fi
bench_rc=0
if [ "${BENCH:-1}" != 0 ]; then
  eval "bench_args=(${BENCH_ARGS:-})"
  # the SM clock, temperature and power once a second while the benchmarks
  # run, to tell a slow spell of the machine from a change in the code
  reasons=clocks_event_reasons.active
  nvidia-smi --query-gpu=$reasons --format=csv >/dev/null 2>&1 || reasons=clocks_throttle_reasons.active
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,temperature.gpu,power.draw,utilization.gpu,$reasons \
    --format=csv -l 1 > "$LOGDIR/gpu-clocks.csv" 2>&1 &
  monitor=$!
  # bench-times.log: the log with each line's time, to match a row with the clocks
  python3 -m nox -s bench -- "${bench_args[@]}" 2>&1 | tee "$LOGDIR/bench.log" |
    while IFS= read -r line; do printf '%(%H:%M:%S)T %s\n' -1 "$line"; done > "$LOGDIR/bench-times.log"
  bench_rc=${PIPESTATUS[0]}
  kill "$monitor" 2>/dev/null
  # the run's JSON and report (markdown, plots), and what --publish / --save-baseline wrote
  mkdir -p "$LOGDIR/bench-results" "$LOGDIR/published"
  cp bench-results/* "$LOGDIR/bench-results/" 2>/dev/null
  cp -r benchmarks/results benchmarks/baselines "$LOGDIR/published/" 2>/dev/null
fi

echo "== summary =="
cat "$LOGDIR/device.txt"
[ -f "$LOGDIR/test-cuda.log" ] && grep -E "^(FAILED|ERROR)|passed|failed" "$LOGDIR/test-cuda.log" | tail -15
[ -f "$LOGDIR/sanitize.log" ] && grep -E "(memcheck|racecheck|initcheck|synccheck): |^[A-Za-z_0-9]+: (rc=|killed|not started)" "$LOGDIR/sanitize.log"
[ -f "$LOGDIR/bench.log" ] && sed -n '/^device:/,$p' "$LOGDIR/bench.log"
echo "test-cuda rc=$test_rc sanitize rc=$sanitize_rc bench rc=$bench_rc"
exit $((test_rc || sanitize_rc || bench_rc))
