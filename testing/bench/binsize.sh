#!/usr/bin/env bash
# binsize.sh: the worker binary a Dataflow job stages, measured against Beam's own
# wordcount. For each program it builds what Beam's Dataflow runner builds (go build
# -trimpath, GOOS=linux GOARCH=amd64 CGO_ENABLED=0) and prints the file size, .text
# and .gopclntab, and the ratio to wordcount; then, unless COLD=0, the cold build time
# of each in a fresh GOCACHE (module cache warm), the programs interleaved for ROUNDS
# rounds so that a change in machine load hits all of them alike. Load averages are
# printed before and after: cold builds are CPU-bound, run them on an idle machine.
#
#   bash testing/bench/binsize.sh                 # sizes, then one cold round
#   COLD=0 bash testing/bench/binsize.sh          # sizes only (warm cache, quick)
#   ROUNDS=3 bash testing/bench/binsize.sh        # three interleaved cold rounds
#
# Programs: examples/cdc (SQLite catalog, local files, gs:// storage), examples/biglake
# (the minimal REST catalog on GCS pipeline) and Beam's examples/wordcount at the
# Beam version of go.mod. Extra programs: PROGRAMS="name=./pkg ...".
set -euo pipefail
cd "$(dirname "$0")/../.."

GO=${GO:-go}
COLD=${COLD:-1}
ROUNDS=${ROUNDS:-1}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
PROGRAMS=${PROGRAMS:-"wordcount=github.com/apache/beam/sdks/v2/go/examples/wordcount cdc=./examples/cdc biglake=./examples/biglake"}
export GOOS=linux GOARCH=amd64 CGO_ENABLED=0

# section NAME FILE: the size in bytes of ELF section NAME (binutils' size).
section() {
	size -A "$2" | awk -v s="$1" '$1 == s {print $2}'
}
mb() { awk -v b="$1" 'BEGIN {printf "%.1f", b / 1e6}'; }

echo "$($GO version); $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
$GO mod download
echo
echo "size (go build -trimpath, warm cache)"
printf "%-10s %10s %10s %12s %7s\n" program "size MB" ".text MB" ".gopclntab MB" "x wc"
base=""
for p in $PROGRAMS; do
	name=${p%%=*} pkg=${p#*=}
	$GO build -trimpath -o "$OUT/$name" "$pkg"
	bytes=$(stat -c %s "$OUT/$name")
	[ -z "$base" ] && base=$bytes
	printf "%-10s %10s %10s %12s %7s\n" "$name" "$(mb "$bytes")" "$(mb "$(section .text "$OUT/$name")")" \
		"$(mb "$(section .gopclntab "$OUT/$name")")" "$(awk -v a="$bytes" -v b="$base" 'BEGIN {printf "%.2f", a / b}')"
done

[ "$COLD" = 0 ] && exit 0
echo
echo "cold build seconds (fresh GOCACHE each, interleaved, $ROUNDS round(s))"
declare -A total
for ((r = 1; r <= ROUNDS; r++)); do
	for p in $PROGRAMS; do
		name=${p%%=*} pkg=${p#*=}
		cache="$OUT/gocache"
		rm -rf "$cache"
		start=$(date +%s.%N)
		GOCACHE=$cache $GO build -trimpath -o "$OUT/$name.cold" "$pkg"
		secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
		rm -rf "$cache" "$OUT/$name.cold"
		total[$name]=$(awk -v a="${total[$name]:-0}" -v b="$secs" 'BEGIN {print a + b}')
		echo "round $r $name ${secs}s (load $(cut -d' ' -f1 /proc/loadavg))"
	done
done
first=${PROGRAMS%%=*}
for p in $PROGRAMS; do
	name=${p%%=*}
	awk -v n="$name" -v t="${total[$name]}" -v b="${total[$first]}" -v r="$ROUNDS" \
		'BEGIN {printf "%-10s mean %.1fs  x %s %.2f\n", n, t / r, "'"$first"'", t / b}'
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
