#!/usr/bin/env bash
# Takes the README's screenshot of the live view: runs the `service` example on a
# local port, sends it some traffic (renders, a retried one, charges, a throttled
# burst), and has headless Chromium render http://127.0.0.1:PORT/herta into
# herta/docs/img/dashboard.png. Needs `chromium` and `curl`.
set -euo pipefail
cd "$(dirname "$0")/.."
port=${PORT:-3917}
out=herta/docs/img/dashboard.png
cargo build -q -p herta-examples --example service
target=${CARGO_TARGET_DIR:-target}
RUST_LOG=warn "$target"/debug/examples/service --addr "127.0.0.1:$port" --latency-ms 40 &
service=$!
trap 'kill "$service" 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -fs "http://127.0.0.1:$port/herta/stats.json" >/dev/null && break; sleep 0.1; done
url=http://127.0.0.1:$port
sent=()
for i in $(seq 12); do curl -s -X POST "$url/render/job-$i" >/dev/null & sent+=($!); done
curl -s -X POST "$url/render/flaky-1" >/dev/null & sent+=($!)
for i in $(seq 6); do curl -s -X POST "$url/charge/customer-$i" >/dev/null & sent+=($!); done
wait "${sent[@]}"
# A burst still running while the page renders: budgets in use and waiting.
for i in $(seq 8); do curl -s -X POST "$url/render/burst-$i" >/dev/null & done
profile=$(mktemp -d)
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync --no-proxy-server \
  --user-data-dir="$profile" --hide-scrollbars --window-size=1000,620 \
  --virtual-time-budget=2500 --screenshot="$out" "$url/herta"
rm -rf "$profile"
echo "wrote $out ($(stat -c %s "$out") bytes)"
