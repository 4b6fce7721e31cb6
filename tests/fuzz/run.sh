#!/usr/bin/env bash
# Build ar-fuzz (clang, libFuzzer, ASan+UBSan) in its own build directory and run
# every target for SECONDS each (default 20), seeded from tests/fuzz/corpus/<target>/.
# The committed corpus is only read: new inputs go to a temporary work corpus.
# Fails when any target crashes, leaks or breaks an invariant; the reproducer is
# copied to BUILD/artifacts/ and printed (base64). See docs/fuzzing.md.
#   tests/fuzz/run.sh [SECONDS]
# Environment: AR_FUZZ_BUILD_DIR (default build-fuzz/), AR_FUZZ_TARGETS ("policy rules"),
# AR_FUZZ_SEED (fixed libFuzzer seed), AR_FUZZ_KEEP=DIR (keep the work corpora in DIR).
# Exit 77 (skip) without clang or the libFuzzer runtime, unless AGENTRUN_MUST_WORK=1.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
secs=${1:-20}
build=${AR_FUZZ_BUILD_DIR:-$src/build-fuzz}

if ! [[ $secs =~ ^[1-9][0-9]*$ ]]; then
	echo "usage: tests/fuzz/run.sh [SECONDS]" >&2
	exit 2
fi

skip() {
	if [ "${AGENTRUN_MUST_WORK:-0}" = 1 ]; then
		echo "fuzz: FAIL (AGENTRUN_MUST_WORK=1): $*" >&2
		exit 1
	fi
	echo "fuzz: SKIP: $*" >&2
	exit 77
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ar-fuzz.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

command -v clang >/dev/null || skip "clang is not installed (scripts/install-deps.sh)"
echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return 0; }' \
	>"$tmp/probe.c"
clang -fsanitize=fuzzer "$tmp/probe.c" -o "$tmp/probe" 2>/dev/null ||
	skip "clang cannot link -fsanitize=fuzzer (libclang-rt-14-dev missing?)"

echo "fuzz: building ar-fuzz in $build"
CC=clang cmake -S "$src" -B "$build" -DAR_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" --target ar-fuzz >"$tmp/build.log" 2>&1 || {
	cat "$tmp/build.log" >&2
	exit 1
}
bin=$build/tests/fuzz/ar-fuzz

if [ -n "${AR_FUZZ_TARGETS:-}" ]; then
	read -r -a targets <<<"$AR_FUZZ_TARGETS"
else
	targets=()
	for d in "$here"/corpus/*/; do targets+=("$(basename "$d")"); done
fi

extra=()
if [ -n "${AR_FUZZ_SEED:-}" ]; then extra+=("-seed=$AR_FUZZ_SEED"); fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

failed=()
for t in "${targets[@]}"; do
	work=$tmp/work-$t
	mkdir -p "$work" "$tmp/art-$t"
	dict=()
	if [ -f "$here/dict/$t.dict" ]; then dict=("-dict=$here/dict/$t.dict"); fi
	if AR_FUZZ_TARGET=$t "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$tmp/art-$t/" "${dict[@]}" "${extra[@]}" \
		"$work" "$here/corpus/$t" >"$tmp/$t.log" 2>&1; then
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$tmp/$t.log")
		cov=$(grep -o 'cov: [0-9]*' "$tmp/$t.log" | tail -1)
		echo "fuzz: $t: ok, ${runs:-?} runs in ${secs}s, $cov, $(find "$work" -type f | wc -l) new input(s)"
	else
		failed+=("$t")
		echo "fuzz: $t: FAILED" >&2
		grep -a -E -A40 'ERROR:|runtime error|invariant broken|deadly signal' "$tmp/$t.log" |
			head -60 >&2 || tail -40 "$tmp/$t.log" >&2
		mkdir -p "$build/artifacts"
		for a in "$tmp/art-$t"/*; do
			[ -f "$a" ] || continue
			cp "$a" "$build/artifacts/$t-$(basename "$a")"
			echo "fuzz: $t: reproducer $build/artifacts/$t-$(basename "$a")" \
				"(AR_FUZZ_TARGET=$t $bin FILE), base64:" >&2
			head -c 4096 "$a" | base64 >&2
		done
	fi
	if [ -n "${AR_FUZZ_KEEP:-}" ]; then
		mkdir -p "$AR_FUZZ_KEEP/$t"
		cp -n "$work"/* "$AR_FUZZ_KEEP/$t/" 2>/dev/null || true
	fi
done

if [ "${#failed[@]}" -gt 0 ]; then
	echo "fuzz: ${#failed[@]} target(s) failed: ${failed[*]}" >&2
	exit 1
fi
echo "fuzz: all ${#targets[@]} target(s) ran ${secs}s without a crash"
