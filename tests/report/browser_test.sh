#!/usr/bin/env bash
# Opens the HTML reports of three examples (one pipeline-parallel step, one sweep, one search)
# in headless Chromium from file:// URLs and checks, for each page:
#   - every chart drew: the page's own script sets <body data-report-status="ok"> only when each
#     canvas has data points and non-blank pixels and no script error occurred (--dump-dom
#     after a virtual-time budget shows the DOM once the scripts ran);
#   - no console error ("Uncaught", CSP violations) in Chromium's log;
#   - no network request: the page's CSP (default-src 'none') blocks any, and a blocked request
#     is recorded by the page as an error, so "ok" proves none was attempted;
# and keeps a screenshot of each in OUT_DIR (a build artifact). It also checks that two runs of
# one sweep (1 and 2 threads) write the same bytes.
#
# usage: browser_test.sh PLACESIM SOURCE_DIR OUT_DIR
# Exit: 0 pass, 1 fail, 77 skipped (no Chromium: `./dev test` installs it).
set -euo pipefail

placesim="$1"
src="$2"
out="$3"

chromium=""
for c in chromium chromium-browser google-chrome; do
  if command -v "$c" >/dev/null 2>&1; then chromium="$(command -v "$c")"; break; fi
done
if [ -z "$chromium" ]; then
  echo "SKIP: Chromium is not installed (Debian package chromium; ./dev test installs it)"
  exit 77
fi

rm -rf "$out"
mkdir -p "$out"
profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT

flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
  --disable-background-networking --disable-component-update --disable-sync
  --disable-default-apps --hide-scrollbars --user-data-dir="$profile"
  --virtual-time-budget=10000 --enable-logging=stderr --v=0)

echo "generating the reports"
"$placesim" report "$src/examples/gpt3-175b-tp8-pp8.textproto" -o "$out/pipeline.html"
"$placesim" sweep "$src/examples/korthikanti-22b-tp8.textproto" --mode simulate \
  --network analytic --vary training.micro_batch=1,2,4 \
  --vary training.recompute=RECOMPUTE_NONE,RECOMPUTE_SELECTIVE,RECOMPUTE_FULL \
  --report "$out/sweep.html" --jobs 2 >"$out/sweep.txt"
# The same input gives the same bytes, whatever the thread count.
"$placesim" sweep "$src/examples/korthikanti-22b-tp8.textproto" --mode simulate \
  --network analytic --vary training.micro_batch=1,2,4 \
  --vary training.recompute=RECOMPUTE_NONE,RECOMPUTE_SELECTIVE,RECOMPUTE_FULL \
  --report "$out/sweep-again.html" --jobs 1 >/dev/null
if ! cmp "$out/sweep.html" "$out/sweep-again.html"; then
  echo "FAIL: two runs of the same sweep wrote different reports" >&2
  exit 1
fi
"$placesim" search "$src/examples/gpt3-175b-tp8-pp8.textproto" --simulate-top 8 --top 300 \
  --report "$out/search.html" >"$out/search.txt" 2>"$out/search.err"

status=0
for name in pipeline sweep search; do
  page="$out/$name.html"
  url="file://$page"
  "$chromium" "${flags[@]}" --dump-dom "$url" >"$out/$name.dom.html" 2>"$out/$name.log" || true
  "$chromium" "${flags[@]}" --window-size=1400,2400 --screenshot="$out/$name.png" "$url" \
    >/dev/null 2>>"$out/$name.screenshot.log" || true
  result="$(grep -o 'data-report-status="[a-z]*"' "$out/$name.dom.html" | head -1 || true)"
  drawn="$(grep -o 'data-charts-drawn="[0-9]*"' "$out/$name.dom.html" | head -1 || true)"
  charts="$(grep -o 'data-charts="[0-9]*"' "$out/$name.dom.html" | head -1 || true)"
  echo "$name: $result $drawn of $charts"
  if [ "$result" != 'data-report-status="ok"' ]; then
    echo "FAIL: $name: not every chart drew, or a script error; the page says:" >&2
    sed -n '/<pre id="errors">/,/<\/pre>/p' "$out/$name.dom.html" >&2
    grep -o '<canvas[^>]*>' "$out/$name.dom.html" >&2 || true
    status=1
  fi
  if grep -E 'Uncaught|Content Security Policy|Refused to|ERR_BLOCKED' "$out/$name.log" >&2; then
    echo "FAIL: $name: console errors (above)" >&2
    status=1
  fi
  if [ ! -s "$out/$name.png" ]; then
    echo "FAIL: $name: no screenshot" >&2
    status=1
  fi
done
[ "$status" -eq 0 ] && echo "PASS: screenshots in $out"
exit "$status"
