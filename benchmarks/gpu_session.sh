#!/usr/bin/env bash
# The GPU work of issues 20 and 21, in stages that each fit one 10-minute device call, with every log kept.
#
#   bash benchmarks/gpu_session.sh tests            # versions, then pytest -m gpu (a hang costs 2 minutes, not 10)
#   bash benchmarks/gpu_session.sh bench            # benchmarks/gpu.py and the 4-device float16 matmul CLI run
#   bash benchmarks/gpu_session.sh main sanitize    # the README's main job on the GPU; compute-sanitizer on the kernels
#                                                   # (and on a captured step's replays: sa.graphed)
#   bash benchmarks/gpu_session.sh bench4 profile   # the 4-device CLI matmul; the step's top kernels (gpu_profile.py)
#   bash benchmarks/gpu_session.sh suite            # the whole suite on real CuPy shards (pytest --backend=cupy)
#   bash benchmarks/gpu_session.sh suitefast        # the same in one run over 12 xdist workers (about 2 minutes)
#   bash benchmarks/gpu_session.sh lease            # a 15-minute lease in one call of about 4 minutes: the whole suite,
#                                                   # main and sanitize side by side (correctness only), then bench and
#                                                   # profile alone
#   bash benchmarks/gpu_session.sh verify           # after host-side fixes: the whole suite beside the main job, then
#                                                   # the bfloat16 step's profile on 1 device and on 2x2, with JSON
#                                                   # (about 4 minutes, six files back)
#
# Each stage's time limit can be lowered for a short lease: TESTS_LIMIT, TEST_TIMEOUT (per test), MAIN_LIMIT,
# SANITIZE_LIMIT, BENCH_LIMIT, PROFILE_LIMIT, SUITE_LIMIT (seconds); SHARDARRAY_TEST_HANG_S bounds each isolated NCCL test.
#
# Run from the repository root (the source tree, PYTHONPATH=.). Results go to $OUT (default /tmp/gpu-session):
# at most 8 files, as the device tool brings back. A stage that fails does not stop the next; the script's exit
# status is the number of failed stages.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
OUT="${OUT:-/tmp/gpu-session}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
failed=0

stage() {  # stage NAME LIMIT_S COMMAND...: run COMMAND under a time limit, log to $OUT/NAME.log
    local name=$1 limit=$2
    shift 2
    echo "== $name: $* (limit ${limit}s)" | tee -a "$OUT/$name.log"
    local t0=$SECONDS
    timeout --kill-after=10 "$limit" "$@" >>"$OUT/$name.log" 2>&1
    local rc=$?
    echo "== $name: exit $rc after $((SECONDS - t0)) s" | tee -a "$OUT/$name.log"
    [ "$rc" -eq 0 ] || failed=$((failed + 1))
    tail -n 5 "$OUT/$name.log"
}

for what in "$@"; do
    case "$what" in
    tests)
        stage tests 60 bash -c "nvidia-smi; $PY -c 'import cupy, cupy.cuda.nccl as n; print(\"cupy\", cupy.__version__, \"nccl\", n.get_version())'; command -v mpiexec || echo 'no mpiexec'"
        stage tests "${TESTS_LIMIT:-480}" "$PY" -m pytest -q -m gpu --timeout "${TEST_TIMEOUT:-120}" -p no:cacheprovider -rfEs tests/  # no -x: every failure in one call
        ;;
    suite)
        # the whole suite with every mesh on real CuPy shards (the run CI makes on the strict stand-in), one folder
        # at a time so a time limit loses one folder's report, not the rest (SUITE_DIRS picks folders)
        for dir in ${SUITE_DIRS:-tests/ops tests/autograd tests/linalg tests/fft tests/array_api tests/nn tests/optim tests/checkpoint}; do
            stage suite "${SUITE_LIMIT:-300}" "$PY" -m pytest -q --backend=cupy -x --timeout "${TEST_TIMEOUT:-120}" \
                -p no:cacheprovider "$dir"
        done
        ;;
    suitefast)
        # the whole suite on real CuPy shards in one pytest run over xdist workers (pytest-xdist is on the GPU image):
        # about 2 minutes on an H200 machine's 16 cores; mpiexec jobs run as root there (Open MPI's two variables)
        stage suite "${SUITE_LIMIT:-240}" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "$PY" -m pytest -q \
            --backend=cupy -n "${SUITE_WORKERS:-12}" --timeout "${TEST_TIMEOUT:-120}" -p no:cacheprovider -rfE -W ignore tests
        ;;
    bench)
        # shellcheck disable=SC2086  # GPU_BENCH_ARGS: extra flags, e.g. "--repeat 5 --calls 5" in a short lease
        stage bench "${BENCH_LIMIT:-420}" "$PY" benchmarks/gpu.py ${GPU_BENCH_ARGS:-} --json "$OUT/gpu.json"
        ;;
    bench4)
        stage bench4 150 "$PY" -m shardarray.bench matmul --backend cupy --devices 4 --m 8192 --k 8192 --n 8192 \
            --dtype float16 --json "$OUT/matmul-gpu-4dev-8192.json"
        ;;
    profile)  # top kernels, launches and syncs per step: shardarray and PyTorch eager, bfloat16 then float32
        for dtype in ${PROFILE_DTYPES:-bfloat16 float32}; do
            stage profile "${PROFILE_LIMIT:-120}" "$PY" benchmarks/gpu_profile.py --dtype "$dtype" --steps 2
        done
        ;;
    compile)  # torch.compile's figure beside the eager one (issue 21), a separate call: compiling takes minutes
        stage compile 540 "$PY" benchmarks/gpu.py --compile --json "$OUT/gpu-compile.json"
        ;;
    main)
        # the held-out accuracy must match the NumPy run's (the README's main job: 2x2 mesh2d)
        stage main "${MAIN_LIMIT:-200}" "$PY" examples/train_transformer.py --backend cupy --mesh d=1 --strategy replicated --quiet \
            --plot '' --json "$OUT/main-1dev.json"
        stage main "${MAIN_LIMIT:-200}" "$PY" examples/train_transformer.py --backend cupy --quiet --plot '' --json "$OUT/main-2x2.json"
        # the step captured once as a CUDA graph (--graph, sa.graphed): the same accuracy, far fewer launches from
        # Python (its figures in main.log only: the lease stage brings back eight files)
        stage main "${MAIN_LIMIT:-200}" "$PY" examples/train_transformer.py --backend cupy --mesh d=1 --strategy replicated \
            --graph --quiet --plot ''
        ;;
    sanitize)
        for tool in memcheck racecheck; do
            stage sanitize "${SANITIZE_LIMIT:-280}" compute-sanitizer --tool "$tool" --error-exitcode 1 \
                "$PY" -m pytest -q -m gpu -p no:cacheprovider tests/backend/test_gpu.py -k "${SANITIZE_TESTS:-kernel or fused or softmax or batched_gemm or (graphed and float32 and replicated)}"
        done
        ;;
    lease)
        # correctness lanes share the GPU (no timing is read from them): the whole suite on CuPy shards (the GPU
        # tests among it), the main job, the sanitizer; the timed stages run alone afterwards. Eight files come
        # back: suite (with the versions), main, sanitize, bench and profile logs, gpu.json and the two main JSONs.
        # On an H200 machine (2026-11-27) the lanes took about 140 s and the timed stages about 60 s.
        export SUITE_LIMIT=${SUITE_LIMIT:-200} TEST_TIMEOUT=${TEST_TIMEOUT:-90} SHARDARRAY_TEST_HANG_S=${SHARDARRAY_TEST_HANG_S:-80}
        export MAIN_LIMIT=${MAIN_LIMIT:-100} SANITIZE_LIMIT=${SANITIZE_LIMIT:-100} BENCH_LIMIT=${BENCH_LIMIT:-240}
        export GPU_BENCH_ARGS=${GPU_BENCH_ARGS:---repeat 5 --calls 5} PROFILE_LIMIT=${PROFILE_LIMIT:-80} PROFILE_DTYPES=${PROFILE_DTYPES:-bfloat16}
        stage suite 60 bash -c "nvidia-smi; $PY -c 'import cupy, cupy.cuda.nccl as n; print(\"cupy\", cupy.__version__, \"nccl\", n.get_version())'"
        bash "$0" suitefast & bash "$0" main & bash "$0" sanitize &
        wait
        bash "$0" bench profile
        grep -h "^== .*: exit" "$OUT"/*.log
        ;;
    verify)
        export SUITE_LIMIT=${SUITE_LIMIT:-240} TEST_TIMEOUT=${TEST_TIMEOUT:-90} SHARDARRAY_TEST_HANG_S=${SHARDARRAY_TEST_HANG_S:-80}
        export MAIN_LIMIT=${MAIN_LIMIT:-100}
        stage suite 60 bash -c "nvidia-smi; $PY -c 'import cupy, cupy.cuda.nccl as n; print(\"cupy\", cupy.__version__, \"nccl\", n.get_version())'"
        bash "$0" suitefast & bash "$0" main &
        wait
        rm -f "$OUT/main-1dev.json" "$OUT/main-2x2.json"  # (their figures are in main.log)
        for mesh in 1 2x2; do
            stage "profile-$mesh" "${PROFILE_LIMIT:-120}" "$PY" benchmarks/gpu_profile.py --dtype bfloat16 --steps 2 \
                --mesh "$mesh" --json "$OUT/profile-$mesh.json"
        done
        grep -h "^== .*: exit" "$OUT"/*.log
        ;;
    *)
        echo "unknown stage '$what': give some of tests, suite, suitefast, bench, bench4, profile, compile, main, sanitize, lease, verify" >&2
        failed=$((failed + 1))
        ;;
    esac
done
exit "$failed"
