#!/usr/bin/env bash
# The Prometheus alerts (deploy/prometheus/alerts.yml): checked with `promtool check
# rules`, unit-tested with `promtool test rules` (alerts.test.yml), and every metric
# they name must be one the service exports (src/metrics, or prom-client's defaults).
# Needs promtool: Debian's `prometheus` package (`apt-get install -y prometheus`).
set -euo pipefail
cd "$(dirname "$0")/../deploy/prometheus"
command -v promtool >/dev/null || { echo "promtool not found: apt-get install -y prometheus" >&2; exit 1; }
promtool check rules alerts.yml
promtool test rules alerts.test.yml
# The metric names the rules use (up is Prometheus's own), each declared in src/metrics.
missing=0
for metric in $(grep -oE '\b[a-z_]+(_total|_seconds|_state|_leader|_ready|_failing)\b' alerts.yml | sort -u); do
  grep -rqE "['\"]${metric}['\"]" ../../src/metrics || { echo "alerts.yml names ${metric}, which src/metrics does not export" >&2; missing=1; }
done
exit $missing
