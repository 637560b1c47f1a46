#!/usr/bin/env bash
# The README's main job: install what is missing, start Temporal and a worker, run the contention
# demo, then stop what it started. KEEP_SERVER=1 (or --keep-server) leaves the dev server up for the UI.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[ "${1:-}" = "--keep-server" ] && KEEP_SERVER=1

bash scripts/ensure-deps.sh
bash scripts/temporal-server.sh start

mkdir -p .data
# A task queue of this run's own: sessions can only be served by the worker started here.
export LOCKWARDEN_TASK_QUEUE="lockwarden-demo-$(date +%Y%m%d%H%M%S)-$$"
# The two worker roles apart, as in production: with a model key, a model worker holds it (and no
# lock setting) and the lock worker asks it for decisions; the lock worker never holds the key.
model_pid=
if [ -n "${ANTHROPIC_API_KEY:-}" ]; then
  model_queue="$LOCKWARDEN_TASK_QUEUE-model"
  env -u LOCKWARDEN_TASK_QUEUE -u LOCK_SERVICE_URL LOCKWARDEN_MODEL_TASK_QUEUE="$model_queue" \
    LOG_LEVEL="${LOG_LEVEL:-warn}" node --import tsx worker/modelMain.ts >.data/model-worker.log 2>&1 &
  model_pid=$!
  export LOCKWARDEN_MODEL_TASK_QUEUE="$model_queue"
fi
# node itself (not an npx wrapper) so that stopping $worker_pid stops the worker.
env -u ANTHROPIC_API_KEY LOG_LEVEL="${LOG_LEVEL:-warn}" node --import tsx worker/main.ts >.data/worker.log 2>&1 &
worker_pid=$!
cleanup() {
  kill "$worker_pid" $model_pid 2>/dev/null || true
  wait "$worker_pid" $model_pid 2>/dev/null || true
  if [ "${KEEP_SERVER:-0}" = 1 ]; then
    echo "Temporal dev server left running: UI at http://localhost:8233 (stop: bash scripts/temporal-server.sh stop)"
  else
    bash scripts/temporal-server.sh stop >/dev/null
  fi
}
trap cleanup EXIT

npx tsx scripts/contentionDemo.ts
