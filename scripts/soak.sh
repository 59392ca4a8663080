#!/usr/bin/env bash
# The soak: is the test suite a signal? Run it RUNS times in a row while a second full run
# loads the same cores, then once in a shuffled order, stopping at the first failure; then
# drive CALLS random calls through the executor and require that none escaped `execute`, none
# failed as execution_failed and none passed the output limit.
#
#   bash scripts/soak.sh [RUNS] [CALLS]        (make soak RUNS=5 CALLS=1000000)
#
# SEED picks the random calls (0), SHUFFLE_SEED the shuffled order (random, printed).
#
# It takes about an hour and a half (a million calls: about 11 minutes) and both cores: run it on a machine of your own, not a shared one.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${1:-5}
CALLS=${2:-1000000}
PYTEST=${PYTEST:-.venv/bin/pytest}
PYTHON=${PYTHON:-.venv/bin/python}
# make test's parallel settings (the Makefile exports them), so the soak proves what CI runs.
PYTEST_PARALLEL=${PYTEST_PARALLEL--n 2 --dist loadfile}
LOGS=$(mktemp -d "${TMPDIR:-/tmp}/invokit-soak.XXXXXX")
load_pid=

stop_load() {
  # The load is a process group of its own (setsid): end it, and only it. SIGINT first, so
  # pytest tears its fixtures down (servers, databases); SIGKILL if that takes a minute.
  if [[ -n "$load_pid" ]] && kill -0 "$load_pid" 2>/dev/null; then
    kill -INT -- "-$load_pid" 2>/dev/null || true
    for _ in $(seq 1 60); do
      kill -0 "$load_pid" 2>/dev/null || break
      sleep 1
    done
    kill -KILL -- "-$load_pid" 2>/dev/null || true
    wait "$load_pid" 2>/dev/null || true
  fi
  load_pid=
}
trap stop_load EXIT

start_load() {
  # A second full test run, over and over, for as long as the measured run lasts; its own
  # results are not the point (it shares the machine, not the verdict). A background job of a
  # script starts with SIGINT ignored, which pytest would inherit: the launcher restores it and
  # makes the loop a process group of its own, so stop_load reaches it and only it.
  "$PYTHON" -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.setsid()
os.execvp(sys.argv[1], sys.argv[1:])' \
    bash -c "trap 'exit 0' INT; while true; do $PYTEST $PYTEST_PARALLEL -q -x >>'$LOGS/load.log' 2>&1 || true; done" &
  load_pid=$!
}

echo "soak: logs in $LOGS"
for run in $(seq 1 "$RUNS"); do
  start_load
  echo "soak: run $run of $RUNS, loaded by a second full run"
  # shellcheck disable=SC2086  # PYTEST_PARALLEL is several words
  if ! "$PYTEST" $PYTEST_PARALLEL -q -x >"$LOGS/run-$run.log" 2>&1; then
    stop_load
    tail -n 40 "$LOGS/run-$run.log"
    echo "soak: FAILED on run $run of $RUNS (log: $LOGS/run-$run.log)"
    exit 1
  fi
  stop_load
  tail -n 1 "$LOGS/run-$run.log"
done

SHUFFLE_SEED=${SHUFFLE_SEED:-$((RANDOM * 32768 + RANDOM))}
echo "soak: one run in a shuffled order (pytest-randomly, --randomly-seed=$SHUFFLE_SEED repeats it)"
# shellcheck disable=SC2086
if ! "$PYTEST" $PYTEST_PARALLEL -q -x -p randomly --randomly-seed="$SHUFFLE_SEED" >"$LOGS/shuffled.log" 2>&1; then
  tail -n 40 "$LOGS/shuffled.log"
  echo "soak: FAILED in shuffled order, seed $SHUFFLE_SEED (log: $LOGS/shuffled.log)"
  exit 1
fi
tail -n 1 "$LOGS/shuffled.log"

echo "soak: $CALLS random calls through the executor"
"$PYTHON" -m tests.soak.random_calls --calls "$CALLS" --seed "${SEED:-0}" | tee "$LOGS/calls.log"
echo "soak: passed ($RUNS loaded runs, one shuffled run, $CALLS random calls)"
