#!/bin/sh
# louise's interpreter with its engine thread observed (bench/engine_profile.py says how).
exec "${BENCH_REAL_PYTHON:-python3}" "$(dirname "$0")/engine_profile.py" "$@"
