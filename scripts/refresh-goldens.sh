#!/usr/bin/env bash
# Regenerates the golden end-to-end data in tests/golden/ from the current simulator, for
# when its output changes on purpose. Review `git diff tests/golden` before committing.
#
# Usage: scripts/refresh-goldens.sh
#   PLACESIM   the placesim binary to run (default: build/release/placesim; build it first,
#              e.g. `cmake --build build/release --target placesim`)
#   PLACESIM_GOLDEN_TRACE_LIMIT
#              the largest canonical trace kept in full, in bytes (default 131072); larger
#              traces are stored as a digest. Keep the goldens small: they live in git.
#
# For every example file E in examples/ (*.textproto, *.json) it writes:
#   tests/golden/E.analyze.json       `placesim analyze E --format json` (every example)
#   tests/golden/E.summary.json       `placesim simulate E --format json`, when simulate
#                                     accepts E (exit code 2, a refusal, is skipped)
#   tests/golden/E.trace.json         that run's --trace timeline of rank 0 (--trace-ranks 0),
#                                     canonical: keys sorted,
#                                     one event per line (traces up to the limit)
#   tests/golden/E.trace.digest.json  otherwise: SHA-256, byte count and event counts per
#                                     phase of the trace exactly as placesim wrote it
# Old golden data files are removed first, so goldens of deleted examples disappear.
# tests/golden/golden_test.cc checks the same files (built as golden_test; run with ctest).
# Requires bash and python3.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
placesim="${PLACESIM:-${root}/build/release/placesim}"
trace_limit="${PLACESIM_GOLDEN_TRACE_LIMIT:-131072}"
golden="${root}/tests/golden"

if [[ ! -x "${placesim}" ]]; then
  echo "refresh-goldens: no placesim binary at ${placesim}" >&2
  echo "  build it (cmake --build build/release --target placesim) or set PLACESIM" >&2
  exit 2
fi

tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT

rm -f "${golden}"/*.analyze.json "${golden}"/*.summary.json "${golden}"/*.trace.json \
  "${golden}"/*.trace.digest.json

# Writes the canonical trace, or its digest when the canonical form is over the limit.
# Arguments: RAW_TRACE OUT_PREFIX LIMIT.
store_trace() {
  python3 - "$@" <<'PY'
import hashlib, json, sys

raw_path, prefix, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
raw = open(raw_path, "rb").read()
trace = json.loads(raw)
events = trace["traceEvents"] if isinstance(trace, dict) else trace

def canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

if isinstance(trace, dict):
    parts = []
    for key in sorted(trace):
        value = trace[key]
        if isinstance(value, list):
            body = ",\n".join(canonical(v) for v in value)
            parts.append(canonical(key) + ":[\n" + body + "\n]")
        else:
            parts.append(canonical(key) + ":" + canonical(value))
    text = "{" + ",\n".join(parts) + "}\n"
else:
    text = "[\n" + ",\n".join(canonical(v) for v in trace) + "\n]\n"

if len(text.encode()) <= limit:
    with open(prefix + ".trace.json", "w", encoding="utf-8") as f:
        f.write(text)
else:
    by_phase = {}
    for e in events:
        ph = e.get("ph", "") if isinstance(e, dict) else ""
        by_phase[ph] = by_phase.get(ph, 0) + 1
    digest = {
        "sha256": hashlib.sha256(raw).hexdigest(),
        "bytes": len(raw),
        "events": len(events),
        "events_by_phase": dict(sorted(by_phase.items())),
    }
    with open(prefix + ".trace.digest.json", "w", encoding="utf-8") as f:
        f.write(json.dumps(digest, indent=2) + "\n")
PY
}

shopt -s nullglob
for example in "${root}"/examples/*.textproto "${root}"/examples/*.json; do
  name="$(basename "${example}")"
  rc=0
  "${placesim}" analyze "${example}" --format json >"${golden}/${name}.analyze.json" \
    2>"${tmp}/err" || rc=$?
  # 3: the strategy violates a correctness condition; the report is still the output.
  if [[ ${rc} -ne 0 && ${rc} -ne 3 ]]; then
    echo "refresh-goldens: analyze ${name} failed (exit ${rc}):" >&2
    cat "${tmp}/err" >&2
    exit 1
  fi

  rc=0
  "${placesim}" simulate "${example}" --format json --trace "${tmp}/trace.json" --trace-ranks 0 \
    >"${tmp}/summary.json" 2>"${tmp}/err" || rc=$?
  if [[ ${rc} -eq 2 ]]; then
    echo "${name}: analyze only (simulate refuses it: $(head -n 1 "${tmp}/err"))"
    continue
  elif [[ ${rc} -ne 0 ]]; then
    echo "refresh-goldens: simulate ${name} failed (exit ${rc}):" >&2
    cat "${tmp}/err" >&2
    exit 1
  fi
  mv "${tmp}/summary.json" "${golden}/${name}.summary.json"
  store_trace "${tmp}/trace.json" "${golden}/${name}" "${trace_limit}"
  rm -f "${tmp}/trace.json"
  echo "${name}: analyze, simulate and trace"
done

du -ch "${golden}"/*.json | tail -n 1 | sed 's/total/of golden data in tests\/golden/'
