#!/usr/bin/env bash
# Summarizes a perf profile of the Temporal dev server: the CPU it used, and the share (inclusive,
# callees counted) of the frames that holders and parked waiters can cost it. Record one during a
# scale bench's idle window (the bench prints when it starts), e.g.:
#   perf record -F 199 -g -p "$(pgrep -f 'start-dev.*--port 17433')" -o server.data -- sleep 40
#   bash bench/perfSummary.sh server.data 199 40
set -euo pipefail
data=$1 hz=$2 seconds=$3
report=$(mktemp)
trap 'rm -f "$report"' EXIT

samples=$(perf script -i "$data" -F period 2>/dev/null | wc -l)
awk -v n="$samples" -v hz="$hz" -v s="$seconds" \
  'BEGIN { printf "%d samples at %d Hz over %d s: %.1f %% of a core\n", n, hz, s, 100 * n / hz / s }'
perf report -i "$data" --children --sort symbol --stdio -g none 2>/dev/null >"$report"
frames=(
  'history.(*Handler).RecordActivityTaskHeartbeat'                      # a keeper's heartbeat
  'history.(*timerQueueActiveTaskExecutor).executeActivityTimeoutTask'  # its heartbeat timer firing
  'sql.(*sqlExecutionStore).UpdateWorkflowExecution'                    # the SQLite write both make
  'runtime.gcBgMarkWorker'                                              # the server's garbage collector
  'matching.(*Handler).PollActivityTaskQueue'                           # workers' long polls
  'matching.(*Handler).PollWorkflowTaskQueue'
)
for frame in "${frames[@]}"; do
  share=$(grep -F "$frame" "$report" | grep -vF -e "$frame." -e "$frame-fm" | awk 'NR == 1 { print $1 }' || true)
  printf '  %7s  %s\n' "${share:-0%}" "$frame"
done
