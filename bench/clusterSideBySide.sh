#!/usr/bin/env bash
# The same figures on the dev server and on the cluster, one run each, one after the other on this
# machine: P1 to P4 (bench/contention.ts --quick: etcd beside the dev server, then the cluster's
# Temporal services and three-member etcd) and P6 (bench/scale.ts: parked waiters' idle cost and
# their drain; on the cluster at three sizes, for the cost model in docs/cluster.md).
#   sudo bash bench/clusterSideBySide.sh [idle seconds, default 30] [all | contention | scale]
# Writes bench/results/contention-{etcd,cluster}.md and scale-{devserver-etcd,cluster}.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
idle="${1:-30}" part="${2:-all}"
case "$part" in all | contention | scale) ;; *) echo "no such part: $part (all, contention, scale)" >&2; exit 2 ;; esac
bash scripts/cluster.sh up >/dev/null
if [ "$part" != scale ]; then
  npx tsx bench/contention.ts --backend etcd --quick
  npx tsx bench/contention.ts --cluster --quick
fi
if [ "$part" != contention ]; then
  npx tsx bench/scale.ts --backend etcd --rows 100:1000,100:10000 --idle-s "$idle" --out scale-devserver-etcd
  npx tsx bench/scale.ts --cluster --rows 100:1000,100:3000,100:10000 --idle-s "$idle" --out scale-cluster
fi
