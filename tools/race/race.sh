#!/usr/bin/env bash
# race.sh: Trochilus against llama.cpp on the same full-size OLMoE-shaped GGUF files, same
# prompt ids, same thread counts. For each file and thread count it runs, one process a run,
#   T T L T L T L ...   (T = trochilus generate, L = llama.cpp through node-llama-cpp)
# so the engines alternate and the first two T runs, back to back, are an A/A control that shows
# the noise. Each run: pp512 (512 random ids from a fixed seed, one pass) then tg128 (128
# single-token greedy passes after the prompt, depth 512..639). Prints a table of medians with
# min/max and writes every run and the summary as JSON.
#
# usage: tools/race/race.sh            (from anywhere; env below overrides the defaults)
#   RACE_TYPES="q4_k_m q8_0"  RACE_THREADS="2 1"  RACE_REPS=3  RACE_MODELS=/tmp/race-models
#   RACE_OUT=/tmp/race-out  RACE_MODEL_FILE=path (race one given file, e.g. the tiny one)
#   RACE_PROMPT=512  RACE_GEN=128
#   RACE_WARM=1: each process runs the prompt and generation twice and reports the second run
#   (both engines warm: pages mapped, caches and thread pools started); RACE_WARM=0: one cold run.
# The generated GGUF files are large (4.2 and 7.4 GB): delete RACE_MODELS when done.
set -euo pipefail

# Everything runs inside main, called on the last line: bash reads a script as it runs, so an
# edit to this file during a 20-minute race would otherwise run whatever bytes now sit at its
# read offset (it did, in session 4).
main() {
	here=$(cd "$(dirname "$0")" && pwd)
	root=$(cd "$here/../.." && pwd)
	types=${RACE_TYPES:-"q4_k_m q8_0"}
	threads_list=${RACE_THREADS:-"2 1"}
	reps=${RACE_REPS:-3}
	models=${RACE_MODELS:-/tmp/race-models}
	out=${RACE_OUT:-/tmp/race-out}
	nprompt=${RACE_PROMPT:-512}
	ngen=${RACE_GEN:-128}
	runs_per_process=$(( ${RACE_WARM:-1} ? 2 : 1 ))
	nlc="$root/.deps/race"
	bin="$out/bin"
	mkdir -p "$models" "$out" "$bin"

	# llama.cpp: the prebuilt CPU libraries inside node-llama-cpp's npm package.
	if [ ! -d "$nlc/node_modules/node-llama-cpp" ] || [ ! -d "$nlc/node_modules/@node-llama-cpp/linux-x64" ]; then
		echo "race: installing node-llama-cpp@3.22.1 into $nlc" >&2
		mkdir -p "$nlc"
		[ -f "$nlc/package.json" ] || echo '{"private": true}' >"$nlc/package.json"
		(cd "$nlc" && npm install --no-audit --no-fund --omit=optional --ignore-scripts \
			node-llama-cpp@3.22.1 @node-llama-cpp/linux-x64@3.22.1)
	fi

	echo "race: building trochilus and the probes into $bin" >&2
	(cd "$root" && CGO_ENABLED=0 go build -o "$bin/" ./app/trochilus ./tools/race/bandwidth ./tools/race/tokenbytes)

	files=()
	if [ -n "${RACE_MODEL_FILE:-}" ]; then
		files=("$RACE_MODEL_FILE")
	else
		for t in $types; do
			f="$models/olmoe-full-$t.gguf"
			if [ ! -f "$f" ]; then
				echo "race: generating $f" >&2
				"$bin/trochilus" gen -o "$f.part" -preset full -type "$t"
				mv "$f.part" "$f"
			fi
			files+=("$f")
		done
	fi

	prompt="$out/prompt.txt"
	node "$here/llama_bench.mjs" prompt "$nprompt" >"$prompt"
	runs="$out/runs.jsonl"
	: >"$runs"

	bytes="$out/tokenbytes.jsonl"
	"$bin/tokenbytes" -json "${files[@]}" >"$bytes"
	"$bin/tokenbytes" "${files[@]}" >&2
	bw="$out/bandwidth.txt"
	"$bin/bandwidth" -mib 2048 -g 2 -rounds 5 | tee "$bw" >&2

	# run_trochilus FILE THREADS REP ROLE appends one JSON line to $runs.
	run_trochilus() {
		local f=$1 t=$2 rep=$3 role=$4 log="$out/trochilus.log"
		counters "trochilus $(basename "$f") t=$t rep=$rep"
		other_start
		# -n ngen+1: the first new token comes from the prompt pass, the other ngen from one-token passes.
		"$bin/trochilus" generate -m "$f" --tokens "$(cat "$prompt")" -n $((ngen + 1)) -t "$t" -b 512 -c 1024 \
			--ignore-eos -repeat "$runs_per_process" >/dev/null 2>"$log" || { cat "$log" >&2; return 1; }
		other_cores
		local pr gr
		pr=$(sed -n 's/^prompt: .* \([0-9.]*\) tok\/s$/\1/p' "$log" | tail -1)
		gr=$(sed -n 's/^generation: .* \([0-9.]*\) tok\/s$/\1/p' "$log" | tail -1)
		[ -n "$pr" ] && [ -n "$gr" ] || { echo "race: cannot read the rates in:" >&2; cat "$log" >&2; return 1; }
		printf '{"engine":"trochilus","model":"%s","threads":%d,"rep":%d,"role":"%s","promptRate":%s,"genRate":%s,"otherCores":%s}\n' \
			"$(basename "$f")" "$t" "$rep" "$role" "$pr" "$gr" "$other" | tee -a "$runs"
	}

	# run_llama FILE THREADS REP appends one JSON line to $runs.
	run_llama() {
		local f=$1 t=$2 rep=$3 log="$out/llama.log"
		counters "llama.cpp $(basename "$f") t=$t rep=$rep"
		other_start
		NLC_DIR="$nlc" node "$here/llama_bench.mjs" run "$f" "$t" "$prompt" "$ngen" "$runs_per_process" >"$log" 2>&1 ||
			{ cat "$log" >&2; return 1; }
		other_cores
		sed -n 's/^RESULT {\(.*\)}$/{"rep":'"$rep"',"role":"race","otherCores":'"$other"',\1}/p' "$log" | tee -a "$runs"
	}

	# Anything else running during a run makes it worthless (session 5: a 37-second test job on
	# both cores cut one generation from ~19 to 12.3 tok/s, LESSONS 22). other_start and
	# other_cores measure it: the machine's busy CPU time over the run (/proc/stat) less the
	# CPU time of the run's own process tree (bash's times), in cores. A run where other work
	# used more than a tenth of a core is flagged, and summarize.mjs leaves it out.
	busy_seconds() { awk '/^cpu /{ printf "%.2f", ($2 + $3 + $4 + $7 + $8 + $9) / 100 }' /proc/stat; }
	# times must run in this shell (in a $(...) subshell it would count that subshell's
	# children): it writes to a file that child_seconds then reads.
	child_seconds() {
		awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); n += a[1] * 60 + a[2] } printf "%.2f", n }' "$out/.times"
	}
	other_start() { times >"$out/.times"; other_b0=$(busy_seconds) other_c0=$(child_seconds) other_t0=$(date +%s.%N); }
	# other_cores sets other (it must not run in a subshell either).
	other_cores() {
		local o c1
		times >"$out/.times"
		c1=$(child_seconds)
		o=$(awk -v b0="$other_b0" -v b1="$(busy_seconds)" -v c0="$other_c0" -v c1="$c1" \
			-v t0="$other_t0" -v t1="$(date +%s.%N)" 'BEGIN { o = ((b1 - b0) - (c1 - c0)) / (t1 - t0); printf "%.3f", o < 0 ? 0 : o }')
		if awk -v o="$o" 'BEGIN { exit !(o > 0.1) }'; then
			echo "race: WARNING: other work used $o cores during this run: it will be left out" >&2
		fi
		other=$o
	}

	# cached FILE says how much of FILE the page cache holds: a run that reads part of the model from
	# disk measures the disk (session 2's one-thread figures were 1.2-1.7x low, cause unproven), so
	# every run is preceded by the figure and a warning when the file is not all there.
	cached() {
		local f=$1 size res
		size=$(stat -c %s "$f")
		if ! res=$(fincore --bytes --noheadings --output RES "$f" 2>/dev/null); then
			echo "race: fincore unavailable; page-cache residency of $(basename "$f") unknown" >&2
			return
		fi
		res=${res//[[:space:]]/}
		echo "race: $(basename "$f"): $res of $size bytes in the page cache" >&2
		if [ "$res" -lt "$size" ]; then
			echo "race: WARNING: $(basename "$f") is not all in the page cache; reading it now" >&2
			cat "$f" >/dev/null
		fi
	}

	# The machine's memory over the race: a run that slows by 15% while the page cache loses part of
	# the model (session 3) needs the why — free memory, page-cache size, swap-ins, compaction
	# stalls — beside the figures: vmstat every second, and /proc/vmstat's paging and compaction
	# counters before each run. (Found in session 4: this VM runs a DAMON "pageout" scheme that
	# reclaims memory unused for 60 s at up to 128 MB/s even with 9 GB free, so the model file
	# leaves the page cache between runs; the state of DAMON is logged too.)
	vmstat -t 1 >"$out/vmstat.log" 2>&1 &
	vmstat_pid=$!
	trap 'kill $vmstat_pid 2>/dev/null || true' EXIT
	counters() {
		{
			echo "== $1 $(date -u +%T)"
			grep -E '^(pgmajfault|pgsteal_[a-z_]+|pgscan_[a-z_]+|compact_stall|compact_fail|compact_success|thp_fault_alloc|thp_fault_fallback|nr_file_pages|nr_anon_pages|nr_free_pages) ' /proc/vmstat
		} >>"$out/vmstat-counters.log"
	}
	: >"$out/vmstat-counters.log"
	for d in /sys/kernel/mm/damon/admin/kdamonds/*/; do
		[ -f "$d/state" ] && echo "DAMON $(basename "$d"): $(cat "$d/state"), schemes: $(cat "$d"/contexts/*/schemes/*/action 2>/dev/null | tr '\n' ' ')" >>"$out/vmstat-counters.log"
	done

	for f in "${files[@]}"; do
		for t in $threads_list; do
			echo "race: $(basename "$f"), $t threads: T T L T L ..., $reps reps each after the A/A run" >&2
			cached "$f"
			run_trochilus "$f" "$t" 0 aa
			for ((r = 1; r <= reps; r++)); do
				cached "$f"
				run_trochilus "$f" "$t" "$r" race
				cached "$f"
				run_llama "$f" "$t" "$r"
			done
		done
	done

	node "$here/summarize.mjs" "$runs" "$bytes" "$bw" "$out/race.json"
}

main "$@"
