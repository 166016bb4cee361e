#!/bin/sh
# Renders `placesim topology --dot` of one example with Graphviz and checks the picture's
# level: usage: render_dot.sh PLACESIM DOT SCENARIO OUT_DIR gpu|node
# Prints how long `dot -Tsvg` took (the issue asks for seconds at 1024 GPUs); the ctest's
# TIMEOUT, not this script, bounds it.
set -eu
placesim="$1"; dot="$2"; scenario="$3"; out="$4"; level="$5"
mkdir -p "$out"
name="$(basename "$scenario" .textproto)"
"$placesim" topology "$scenario" --dot "$out/$name.dot" >/dev/null
start=$(date +%s.%N)
"$dot" -Tsvg "$out/$name.dot" -o "$out/$name.svg"
end=$(date +%s.%N)
echo "dot -Tsvg $name: $(awk "BEGIN { printf \"%.2f\", $end - $start }") s, $(wc -c < "$out/$name.svg") bytes of SVG"
grep -q "<svg" "$out/$name.svg"
if [ "$level" = gpu ]; then
  grep -q "subgraph cluster_node" "$out/$name.dot"
else
  ! grep -q "subgraph cluster_node" "$out/$name.dot"
  grep -q "shape=box3d" "$out/$name.dot"
fi
