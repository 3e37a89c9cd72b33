#!/bin/bash -eu
# Builds every cargo-fuzz target of parkline with AddressSanitizer, the way ClusterFuzzLite and
# OSS-Fuzz build Rust projects (`cargo fuzz build -O`), and puts in $OUT each target's binary, its
# seed corpus `<target>_seed_corpus.zip` and its dictionary `<target>.dict` when it has one.
#
# In the build image (.clusterfuzzlite/Dockerfile) it runs from $SRC/parkline with the OSS-Fuzz
# variables set. Outside Docker, on stable, set them by hand (docs/fuzzing.md, ClusterFuzzLite), e.g.:
#   OUT=/tmp/cflite/out WORK=/tmp/cflite/work SRC=/tmp/cflite/src bash .clusterfuzzlite/build.sh
# `bash build.sh` ignores the flags on the first line, so they are set here as well.
set -euo pipefail

: "${OUT:?OUT must name the directory the fuzz targets are copied to}"
mkdir -p "$OUT"

# The repository: beside this script in the checkout, or the image's working directory (the
# image runs a copy of this script from $SRC).
repo=""
for candidate in "$(dirname "${BASH_SOURCE[0]}")/.." "$PWD" "${SRC:-/src}/parkline"; do
    if [ -f "$candidate/fuzz/Cargo.toml" ]; then
        repo="$(cd "$candidate" && pwd)"
        break
    fi
done
[ -n "$repo" ] || { echo "build.sh: no fuzz/Cargo.toml beside the script, in $PWD or in \$SRC/parkline" >&2; exit 1; }
cd "$repo"

sanitizer="${SANITIZER:-address}"
case "$sanitizer" in
    # coverage: the image's cargo wrapper replaces `cargo fuzz build` with a coverage build of
    # every binary and copies it where the release build would be, so the copy below is the same.
    address | coverage) ;;
    *)
        echo "build.sh: SANITIZER=$sanitizer is not supported for Rust (project.yaml lists address)" >&2
        exit 1
        ;;
esac

# AddressSanitizer needs rustc's unstable -Zsanitizer flag: the image's nightly has it; a stable
# toolchain is let use it by RUSTC_BOOTSTRAP, and CARGO_CACHE_RUSTC_INFO=0 stops cargo from
# answering with a probe of rustc cached before RUSTC_BOOTSTRAP was set.
if ! rustc --version | grep -q -- '-nightly'; then
    export RUSTC_BOOTSTRAP=1 CARGO_CACHE_RUSTC_INFO=0
fi

triple="${CARGO_BUILD_TARGET:-$(rustc -vV | sed -n 's/^host: //p')}"
bin_dir="${CARGO_TARGET_DIR:-$repo/fuzz/target}/$triple/release"

# The targets as cargo fuzz knows them, so a renamed or added target needs no edit here. With
# SANITIZER=coverage the image's cargo wrapper turns every `cargo fuzz` command into a build, so
# the listing runs with the variable changed for that one command.
mapfile -t targets < <(SANITIZER=address cargo fuzz list)
[ ${#targets[@]} -gt 0 ] || { echo "build.sh: cargo fuzz list found no fuzz targets" >&2; exit 1; }

# -O: optimised, as campaigns want; --debug-assertions keeps overflow checks, the way a counter
# that wraps at its limit becomes a finding instead of a silent wrong value.
cargo fuzz build -O --debug-assertions --sanitizer address --target "$triple"

for target in "${targets[@]}"; do
    [ -x "$bin_dir/$target" ] || { echo "build.sh: $bin_dir/$target was not built" >&2; exit 1; }
    cp "$bin_dir/$target" "$OUT/$target"

    # The seed corpus: the committed corpus and the committed findings (fixed bugs that `cargo
    # test` replays), so the fuzzer starts from them and a regression shows as a crash.
    rm -f "$OUT/${target}_seed_corpus.zip"
    seeds=$(find "fuzz/corpus/$target" "fuzz/regressions/$target" -maxdepth 1 -type f ! -name '.*' 2>/dev/null || true)
    if [ -n "$seeds" ]; then
        printf '%s\n' "$seeds" | zip -q -j -@ "$OUT/${target}_seed_corpus.zip"
    fi

    if [ -f "fuzz/dict/$target.dict" ]; then
        cp "fuzz/dict/$target.dict" "$OUT/$target.dict"
    fi
done
