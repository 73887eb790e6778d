#!/usr/bin/env bash
# The GPU check in one call (issue 35): install what the GPU host lacks, report the environment,
# a short IMPALA Pong run at a fixed frame budget against the 2026-11-23 figures, a PPO CartPole
# run, the tests that exercise device placement, PPO in the Anakin loop on JAX-native envs (issue
# 37), and one markdown summary.
#
# ON THE LENT GPU HOST (one device call, at most 8 minutes):
#   here, once, in the checkout the device tool sends:  bash benchmarks/gpu_host.sh fetch
#       (the wheels of gymnasium, ale-py, dm-env, dm-tree, tensorboardX, gymnax and MuJoCo Playground
#       for Python 3.12 into .whl/, ~30 MB, which .git/info/exclude ignores)
#   then the device tool's run with
#       command:   bash benchmarks/gpu_check.sh
#       carry:     [".whl"]
#       timeout_s: 480
#   $OUT/gpu_check.md is the summary (paste it into BENCHMARKS.md, or here:
#   `python benchmarks/_gpu_check.py paste gpu_check.md`), $OUT/gpu_check.log the whole output,
#   $OUT/pong_metrics.csv, $OUT/ppo_metrics.csv and $OUT/anakin_*_metrics.csv the runs' metrics. The
#   stages share a budget of GPU_CHECK_BUDGET_S (default 450 s): each stage has its own `timeout`, a
#   stage that fails or runs out of time is recorded and the next one starts, and a stage that would
#   start with under 5 s left is skipped as out of time. Expected on an H100 host: about 6 minutes
#   before the Anakin stage, which gets what is left (~2 minutes): its runs shrink
#   with it. Issue 37's figures in a call of their own, the Anakin stage at its full 300 s:
#       command:   GPU_CHECK_STAGES=anakin bash benchmarks/gpu_check.sh
#       carry:     [".whl"]
#       timeout_s: 360
#   The planning stage comes last, so a default call has no time left for it (it is recorded as
#   out of the budget); issue 57's figures in a call of their own:
#       command:   GPU_CHECK_STAGES=planning bash benchmarks/gpu_check.sh
#       carry:     [".whl"]
#       timeout_s: 420
#
# THE PLANNING STAGE (issue 57), through `_gpu_check.py planning`: MuZero on Pong-v5 (its ATARI
#   preset, the Sebulba loop, 10M frames asked; SIGTERM at 60% of the stage's time), then AlphaZero's
#   self-play on pgx/go_9x9 (the Anakin loop; what is left): frames/s and the return; games/s.
#
# THE ANAKIN STAGE (issue 37): `python -m experiments.ppo` in the Anakin loop, three fresh processes,
# each sent SIGTERM at its share of the stage's time (35%, 25%, the rest; it then stops after the
# program's current call and writes its last metrics row), through `_gpu_check.py anakin`:
#   1. gymnax/CartPole-v1 at 2,048 envs x 16 steps, 2^28 env steps (~60 s if it trains at ~4.5M env
#      steps/s: a guess, never measured on a GPU; the run's share of the time caps it);
#   2. the same with --num_seeds 8 at 256 envs each (2,048 in all), 2^25 env steps per replica;
#   3. playground/CartpoleBalance at 2,048 envs x 32 steps, 2^26 env steps (the PPO preset for
#      continuous control), where mujoco_playground imports (else one 'skipped' line saying why);
#      MJX's JAX pipeline (--env_kwargs impl='jax') unless warp-lang is installed (its 149 MB wheel is
#      not fetched: over what a call carries).
#   For each: training env steps/s between the first and the last metrics row (bench_anakin's
#   training_sps, times the replicas for --num_seeds) and the final return (last 20 episodes).
#   Without CUDA: 64 envs and 20,480 env steps, 2 seeds x 64 envs, Playground 16 envs x 32 steps
#   and 2,048 env steps (where it imports; this CPU machine's venv has no Playground).
#
# ON A HOST WITHOUT CUDA (this CPU machine):  bash benchmarks/gpu_check.sh
#   runs every stage that needs no GPU at a tiny budget (Pong: 8 envs, 6,400 frames; PPO: the
#   CartPole preset; Anakin: above), says 'skipped: no CUDA device' for the rest, and writes the
#   summary to $GPU_CHECK_OUT, else $OUT, else .gpu_check/ (which ignores itself). About 2 minutes
#   on 2 cores (the Anakin stage alone: 15-35 s).
#   `bash benchmarks/gpu_check.sh --dry-run` lists the stages and the test selections, running nothing.
#
# Environment: PYTHON (default python3: on the GPU host, the one with jax[cuda]), GPU_CHECK_OUT,
# GPU_CHECK_STAGES (a comma list, say 'tests_gpu' to rerun a stage that failed: the stages it does
# not name are recorded as not asked; install and env always run), GPU_CHECK_BUDGET_S, GPU_CHECK_PONG_FRAMES (default 4,000,000 on a GPU: the preset reached
# -13.6 there on 2026-11-23, at ~54k frames/s; 6,400 without one).
#
# WHICH TESTS, AND WHY. tests/conftest.py sets XLA_FLAGS=--xla_force_host_platform_device_count=4,
# which only shapes the CPU platform: on the GPU host jax's default backend is the GPU, so
# `jax.devices()` is that one GPU, and the tests index devices 0..3 of the default backend. Two runs:
#   1. tests on the GPU (CUDA only): the files whose tests place networks, trajectories, step
#      states, experience and checkpoints on devices (test_loop, test_minibatches, test_precompile,
#      test_ppo, test_impala, test_framestack, test_checkpoint), on the real GPU, less the tests
#      that need several devices (MULTI_DEVICE below: learner_devices=(1, 2), device meshes of 2-4)
#      and the learning bars (the PPO stage is the learning run). What remains is the layout a
#      1-GPU host runs (actors and learner share device 0: default_devices), through the GPU's
#      allocator, donation, transfers, memory checks, compile counts and frames stacked on the
#      device (73 tests today, 12 workers). XLA_PYTHON_CLIENT_PREALLOCATE=false: the workers share the GPU.
#   2. the several-device tests on 4 fake CPU devices (JAX_PLATFORMS=cpu), with the host's own jax:
#      the sharding over learner devices is the same code on any platform, and a 1-GPU host cannot
#      give it several devices; this run catches a jax version the CPU machine does not have.
#      Without CUDA it runs only MULTI_DEVICE_CPU_SMOKE (the full CPU suite covers the rest).
# The lists name tests by id: tests/test_gpu_check.py checks that each still exists.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
ROOT=$PWD
SELF="$ROOT/benchmarks/gpu_check.sh"
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1

DEVICE_TEST_FILES=(tests/test_loop.py tests/test_minibatches.py tests/test_precompile.py tests/test_ppo.py
                   tests/test_impala.py tests/test_framestack.py tests/test_checkpoint.py)
MULTI_DEVICE=(
    tests/test_loop.py::test_experience_state_is_built_on_each_learner_device_with_its_own_key
    tests/test_loop.py::test_multi_device_layouts
    tests/test_loop.py::test_step_states_reach_the_learner_split_over_devices
    "tests/test_minibatches.py::test_minibatches_are_optimizer_steps_on_each_devices_env_slices_in_turn[learners1]"
    tests/test_minibatches.py::test_impala_cartpole_learns_with_minibatches_in_a_loop
    tests/test_minibatches.py::test_minibatches_are_validated
    tests/test_minibatches.py::test_default_learner_devices_leave_whole_minibatches_on_each
    "tests/test_precompile.py::test_first_cycles_and_updates_compile_nothing_the_constructor_compiled[2 learner devices, 2 minibatches]"
    "tests/test_precompile.py::test_first_cycles_and_updates_compile_nothing_the_constructor_compiled[2 actor devices]"
    tests/test_ppo.py::test_advantages_are_normalised_over_every_learner_devices_samples
    tests/test_ppo.py::test_running_statistics_equal_numpy_over_all_batches_and_devices
    tests/test_ppo.py::test_one_and_two_learner_devices_give_the_same_update
    tests/test_ppo.py::test_an_interrupted_run_with_running_statistics_resumes_exactly
    tests/test_framestack.py::test_async_loop_splits_the_frame_history_over_learner_devices_and_minibatches
    tests/test_checkpoint.py::test_interrupted_and_resumed_run_is_bit_identical
    tests/test_checkpoint.py::test_a_partial_checkpoint_is_never_loaded
    tests/test_checkpoint.py::test_resume_needs_a_checkpoint_and_the_same_mode
    tests/test_checkpoint.py::test_nan_loss_stops_the_run_with_a_checkpoint_of_the_last_good_state
    tests/test_checkpoint.py::test_replay_is_saved_when_asked_and_async_runs_resume_their_learner
)
MULTI_DEVICE_CPU_SMOKE=(
    tests/test_ppo.py::test_advantages_are_normalised_over_every_learner_devices_samples
    tests/test_loop.py::test_experience_state_is_built_on_each_learner_device_with_its_own_key
)
WHEEL_MODULES="gymnasium ale_py dm_env tree tensorboardX gymnax six glfw mctx pgx"

# name | title | seconds at most with CUDA | without | what it runs
STAGES=(
    "install|install the wheels|60|60|pip install --no-index --no-deps .whl/*.whl into a scratch site (the gpu_host.sh way), used where the host lacks $WHEEL_MODULES"
    "env|environment|60|60|python, jax, devices, packages; nvidia-smi -L"
    "pong|IMPALA Pong, fixed frame budget|200|150|bench_atari_gpu raw env (one repeat) + end_to_end: python -m experiments.impala --env Pong-v5 --total_env_steps=FRAMES/4"
    "ppo|PPO CartPole|90|120|python -m experiments.ppo (the CartPole preset, 200k env steps)"
    "tests_gpu|device-placement tests on the GPU|150|0|pytest ${DEVICE_TEST_FILES[*]} -k 'not learning_bar', less MULTI_DEVICE (CUDA only)"
    "tests_multi|several-device tests on 4 CPU devices|110|90|JAX_PLATFORMS=cpu pytest MULTI_DEVICE (without CUDA: MULTI_DEVICE_CPU_SMOKE)"
    "offpolicy|SAC and TD3 on MuJoCo|120|60|python -m experiments.sac and td3 --env HalfCheetah-v5 (CleanRL's settings), then SAC at batch 4,096: the learner's optimizer steps/s once learning (issue 38)"
    "anakin|PPO in the Anakin loop|300|120|python -m experiments.ppo on gymnax/CartPole-v1 at 2,048 envs, with --num_seeds 8 x 256 envs, and playground/CartpoleBalance where mujoco_playground imports (without CUDA: 64 envs, 20k env steps, 2 seeds)"
    "planning|MuZero Pong and AlphaZero go 9x9|300|150|python -m experiments.muzero --env Pong-v5 (its ATARI preset), then python -m experiments.alphazero --env pgx/go_9x9: frames/s, return; games/s (issue 57; without CUDA: 4 envs, a few hundred env steps each)"
)

field() { local IFS='|'; local -a f; read -r -a f <<< "$1"; echo "${f[$2]}"; }

for asked in ${GPU_CHECK_STAGES:+${GPU_CHECK_STAGES//,/ }}; do
    known=0; for s in "${STAGES[@]}"; do [ "$(field "$s" 0)" = "$asked" ] && known=1; done
    [ $known = 1 ] || { echo "GPU_CHECK_STAGES names no stage '$asked' (see --dry-run)" >&2; exit 2; }
done

if [ "${1:-}" = "--dry-run" ]; then
    echo "stages (seconds at most with CUDA / without), run in this order, then the summary:"
    for s in "${STAGES[@]}"; do
        printf '  stage %-12s %4s / %3s s  %s: %s\n' "$(field "$s" 0)" "$(field "$s" 2)" "$(field "$s" 3)" \
            "$(field "$s" 1)" "$(field "$s" 4)"
    done
    for t in "${MULTI_DEVICE[@]}"; do echo "  multi-device: $t"; done
    for t in "${MULTI_DEVICE_CPU_SMOKE[@]}"; do echo "  cpu-smoke: $t"; done
    for t in "${DEVICE_TEST_FILES[@]}"; do echo "  device-file: $t"; done
    exit 0
fi

# ---------------------------------------------------------------- one stage, in a child process
say() { echo "$*"; }
fig() { printf '%s\n' "$*" > "$WORK/$STAGE.fig"; }
skip() { printf '%s\n' "$*" > "$WORK/$STAGE.status"; }

stage_install() {
    local missing wheels hostpy wheelpy n
    missing=$($PY - "$WHEEL_MODULES" <<'EOF'
import importlib.util, sys
print(" ".join(m for m in sys.argv[1].split() if importlib.util.find_spec(m) is None))
EOF
)
    wheels=$(ls .whl/*.whl 2>/dev/null)
    n=$(echo "$wheels" | grep -c . )
    if [ -z "$wheels" ]; then
        if [ -z "$missing" ]; then
            skip "skipped: no wheels in .whl/, and this host has $WHEEL_MODULES"
            return 0
        fi
        say "NO WHEELS: .whl/ holds no *.whl and this host lacks: $missing."
        say "Run 'bash benchmarks/gpu_host.sh fetch' in the checkout (a machine with network), and name .whl in carry."
        fig "no wheels in .whl/ (run bash benchmarks/gpu_host.sh fetch here, carry .whl); the host lacks: $missing"
        return 1
    fi
    hostpy=$($PY -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    wheelpy=$(echo "$wheels" | sed -n 's/.*-cp\([0-9]\)\([0-9]*\)-.*/\1.\2/p' | head -1)
    local args=(-m pip install -q --no-index --no-deps --no-compile --no-cache-dir --disable-pip-version-check)
    export PIP_ROOT_USER_ACTION=ignore  # the GPU host runs commands as root
    if [ -n "$missing" ]; then
        say "this host (Python $hostpy) lacks: $missing; installing $n wheels into $WORK/site"
        $PY "${args[@]}" --target "$WORK/site" $wheels || { fig "pip install of $n wheels failed"; return 1; }
        touch "$WORK/use_site"
        PYTHONPATH="$WORK/site:$ROOT" $PY -c "import $(echo "$WHEEL_MODULES" | tr ' ' ','), envs, experiments.impala" \
            || { fig "installed, but the imports fail"; return 1; }
        fig "$n wheels into a scratch site (the host lacked: $missing): $(cd .whl && ls *.whl | cut -d- -f1,2 | tr '\n' ' ')"
    else
        # The host has them all (this CPU machine): install the wheels anyway, for the Python they
        # were fetched for, into a folder that is not used, so that the stage itself is exercised.
        local target=()
        [ -n "$wheelpy" ] && [ "$wheelpy" != "$hostpy" ] && target=(--python-version "$wheelpy" --implementation cp
            --only-binary=:all: --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64)
        say "this host (Python $hostpy) has $WHEEL_MODULES; checking that the $n wheels install (Python ${wheelpy:-any})"
        $PY "${args[@]}" --target "$WORK/site_unused" "${target[@]}" $wheels || { fig "pip install of $n wheels failed"; return 1; }
        fig "the host has $WHEEL_MODULES (used as they are); the $n wheels install for Python ${wheelpy:-any} (checked, not used)"
    fi
}

stage_env() {
    command -v nvidia-smi >/dev/null && nvidia-smi -L
    $PY benchmarks/_gpu_check.py env --fig "$WORK/env.fig" --backend "$WORK/backend" || return 1
    if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU' && [ "$(cat "$WORK/backend")" = cpu ]; then
        say "nvidia-smi lists a GPU but jax's default backend is cpu: jax has no working CUDA here"
        echo "$(cat "$WORK/env.fig"); nvidia-smi lists a GPU that jax does not use" > "$WORK/env.fig"
        return 1
    fi
}

stage_pong() {
    local limit=$1 args
    if [ "$CUDA" = 1 ]; then
        args=(--settings 64x2x2 --frames "${GPU_CHECK_PONG_FRAMES:-4000000}" --warmup 30 --raw_seconds 3)
    else  # a smoke run: 8 envs, one inferencer, 2 minibatches of 4, a metrics row a second, no raw env
        args=(--settings 8x1x2 --frames "${GPU_CHECK_PONG_FRAMES:-6400}" --warmup 0 --raw_seconds 0
              --cli_flags "--log_every_s=1 --env_threads=2")
    fi
    $PY benchmarks/_gpu_check.py pong --fig "$WORK/pong.fig" --md "$WORK/pong.md" --work "$WORK/pong_run" \
        --metrics_out "$OUTDIR/pong_metrics.csv" --seconds $((limit > 50 ? limit - 25 : limit)) "${args[@]}"
}

stage_anakin() {
    local limit=$1 args
    if [ "$CUDA" = 1 ]; then
        args=(--envs 2048 --total_env_steps 268435456 --seeds 8 --seed_envs 256 --seed_steps 33554432
              --playground_envs 2048 --playground_steps 67108864 --log_every_s 2)
    else  # a smoke run of each: far from learning
        args=(--envs 64 --total_env_steps 20480 --seeds 2 --seed_envs 64 --seed_steps 20480
              --playground_envs 16 --playground_steps 2048 --log_every_s 0.5)
    fi
    $PY benchmarks/_gpu_check.py anakin --fig "$WORK/anakin.fig" --md "$WORK/anakin.md" --work "$WORK/anakin_run" \
        --metrics_out "$OUTDIR" --seconds $((limit > 20 ? limit - 10 : limit)) "${args[@]}"
}

stage_offpolicy() {
    local limit=$1 args
    if [ "$CUDA" = 1 ]; then
        args=(--total_env_steps 300000 --learning_starts 2000 --big_batch 4096 --log_every_s 2)
    else  # a smoke run of each: 256 random steps, then a few learner steps
        args=(--total_env_steps 3200 --learning_starts 256 --big_batch 512 --log_every_s 1)
    fi
    # Gymnasium's MuJoCo envs import glfw; no display there: EGL, should anything render.
    MUJOCO_GL=${MUJOCO_GL:-egl} $PY benchmarks/_gpu_check.py offpolicy --fig "$WORK/offpolicy.fig" --md "$WORK/offpolicy.md" --work "$WORK/offpolicy_run" \
        --metrics_out "$OUTDIR" --seconds $((limit > 20 ? limit - 10 : limit)) "${args[@]}"
}

stage_planning() {
    local limit=$1 args
    if [ "$CUDA" = 1 ]; then
        args=(--pong_frames 10000000 --go_steps 67108864 --log_every_s 5)
    else  # a smoke run of each: far from learning
        args=(--pong_frames 3200 --muzero_flags "--num_envs=4 --batch_size=4 --min_replay_size=8 --replay_capacity=200"
              --go_steps 8192 --alphazero_flags "--num_envs=8 --steps_per_cycle=32 --min_replay_size=64" --log_every_s 1)
    fi
    $PY benchmarks/_gpu_check.py planning --fig "$WORK/planning.fig" --md "$WORK/planning.md" --work "$WORK/planning_run" \
        --metrics_out "$OUTDIR" --seconds $((limit > 20 ? limit - 10 : limit)) "${args[@]}"
}

stage_ppo() {
    local limit=$1
    $PY benchmarks/_gpu_check.py ppo --fig "$WORK/ppo.fig" --md "$WORK/ppo.md" --work "$WORK/ppo_run" \
        --metrics_out "$OUTDIR/ppo_metrics.csv" --timeout $((limit > 10 ? limit - 5 : limit))
}

pytest_cmd() {  # workers, per-test timeout, then pytest's arguments
    local workers=$1 per_test=$2; shift 2
    $PY -m pytest -o addopts="" -p no:cacheprovider -ra -v --timeout "$per_test" -n "$workers" --dist loadgroup "$@"
}

stage_tests_gpu() {
    local deselect=() t
    for t in "${MULTI_DEVICE[@]}"; do deselect+=(--deselect "$t"); done
    XLA_PYTHON_CLIENT_PREALLOCATE=false pytest_cmd 12 120 "${DEVICE_TEST_FILES[@]}" -k "not learning_bar" "${deselect[@]}"
}

stage_tests_multi() {
    if [ "$CUDA" = 1 ]; then
        JAX_PLATFORMS=cpu XLA_FLAGS=--xla_force_host_platform_device_count=4 pytest_cmd 8 100 "${MULTI_DEVICE[@]}"
    else
        JAX_PLATFORMS=cpu XLA_FLAGS=--xla_force_host_platform_device_count=4 pytest_cmd 0 60 "${MULTI_DEVICE_CPU_SMOKE[@]}"
    fi
}

if [ "${1:-}" = "--stage" ]; then  # the child: bash gpu_check.sh --stage NAME LIMIT
    STAGE=$2
    "stage_$2" "$3"
    exit $?
fi

# ---------------------------------------------------------------- the parent
# A fingerprint of the source that runs, comparable with a checkout's (the device host gets no .git).
FINGERPRINT=$(find sebulba envs experiments benchmarks tests -name '*.py' -not -path '*/__pycache__/*' | LC_ALL=C sort \
    | xargs sha1sum | sha1sum | cut -c1-12)
if [ "${1:-}" = "--fingerprint" ]; then echo "$FINGERPRINT"; exit 0; fi
OUTDIR=${GPU_CHECK_OUT:-${OUT:-$ROOT/.gpu_check}}
mkdir -p "$OUTDIR" || exit 2
[ "$OUTDIR" = "$ROOT/.gpu_check" ] && printf '*\n' > "$OUTDIR/.gitignore"
SUMMARY=$OUTDIR/gpu_check.md
LOG=$OUTDIR/gpu_check.log
: > "$LOG"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
BUDGET=${GPU_CHECK_BUDGET_S:-450}
START=$(date +%s)
DEADLINE=$((START + BUDGET))
CUDA=0
STARTED_AT=$(date -u '+%Y-%m-%d %H:%M')
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo "unknown (no git here)")
[ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] && COMMIT="$COMMIT with local changes"
export ROOT PY WORK OUTDIR CUDA
: > "$WORK/stages.tsv"

log() { echo "$*" | tee -a "$LOG"; }

write_summary() {
    local section=gpu_check mode="with CUDA" now name title status secs figures
    [ "$CUDA" = 1 ] || { section=gpu_check_cpu; mode="without CUDA (CPU mode: tiny budgets)"; }
    now=$(date +%s)
    {
        echo "<!-- section: $section -->"
        echo "## GPU check, $mode (\`benchmarks/gpu_check.sh\`)"
        echo
        echo "Run $STARTED_AT UTC, $((now - START)) s of a $BUDGET s budget; $(cat "$WORK/env.fig" 2>/dev/null || echo 'environment unknown')."
        echo "Commit $COMMIT; source fingerprint $FINGERPRINT (\`bash benchmarks/gpu_check.sh --fingerprint\` in a checkout)."
        echo
        echo "| stage | status | seconds | figures |"
        echo "|---|---|---:|---|"
        while IFS=$'\t' read -r name title status secs figures; do
            echo "| $title | $status | $secs | $figures |"
        done < "$WORK/stages.tsv"
        for name in pong ppo offpolicy anakin planning tests_gpu tests_multi; do
            [ -s "$WORK/$name.md" ] && { echo; cat "$WORK/$name.md"; }
        done
        [ -s "$WORK/failures.md" ] && { echo; echo "### What failed (the whole output: gpu_check.log)"; cat "$WORK/failures.md"; }
    } > "$SUMMARY"
}

pytest_figures() {  # name: pytest's closing line (or its counts so far) and the failed tests
    local name=$1 out=$WORK/$1.out line
    line=$(grep -E '^=+ .*(passed|failed|error|skipped|deselected|no tests ran).* in [0-9.]+s' "$out" | tail -1 | sed 's/^=* //; s/ =*$//')
    if [ -z "$line" ]; then
        line="cut short: $(grep -cE ' PASSED ' "$out") passed, $(grep -cE ' (FAILED|ERROR) ' "$out") failed so far"
    fi
    echo "$line" > "$WORK/$name.fig"
    if grep -qE '^(FAILED|ERROR) ' "$out"; then
        { echo; echo "#### $name"; echo; grep -E '^(FAILED|ERROR) ' "$out" | sed 's/^/- /'; } > "$WORK/$name.md"
    fi
}

run_stage() {
    local spec=$1 name title max limit left rc t0 secs status
    name=$(field "$spec" 0); title=$(field "$spec" 1)
    max=$(field "$spec" $((CUDA == 1 ? 2 : 3)))
    left=$((DEADLINE - $(date +%s)))
    limit=$((max < left ? max : left))
    log ""
    log "==== stage $name: $title (at most $limit s; $((left)) s of the budget left) ===="
    t0=$(date +%s)
    if [ -n "${GPU_CHECK_STAGES:-}" ] && [ "$name" != install ] && [ "$name" != env ] \
        && [[ ",$GPU_CHECK_STAGES," != *",$name,"* ]]; then
        echo "not asked (GPU_CHECK_STAGES=$GPU_CHECK_STAGES)" | tee "$WORK/$name.status" | tee -a "$LOG"; rc=0
    elif [ "$max" -le 0 ]; then  # a CUDA-only stage on a host without CUDA
        echo "skipped: no CUDA device" | tee "$WORK/$name.status" | tee -a "$LOG"; rc=0
    elif [ "$limit" -lt 5 ]; then
        echo "skipped: out of the $BUDGET s budget" > "$WORK/$name.status"; rc=0
    else
        CUDA=$CUDA timeout --kill-after=10 "$limit" bash "$SELF" --stage "$name" "$limit" 2>&1 | tee "$WORK/$name.out" | tee -a "$LOG"
        rc=${PIPESTATUS[0]}
    fi
    secs=$(($(date +%s) - t0))
    [[ $name == tests_* ]] && [ -s "$WORK/$name.out" ] && [ ! -s "$WORK/$name.status" ] && pytest_figures "$name"
    if [ -s "$WORK/$name.status" ]; then status=$(cat "$WORK/$name.status")
    elif [ "$rc" = 0 ]; then status=ok
    elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then status="**TIMED OUT** after $limit s"
    else status="**FAILED** (exit $rc)"
    fi
    if [[ $status == *FAILED* || $status == *TIMED* ]]; then
        { echo; echo "#### $title: $status"; echo; echo '```'; tail -n 12 "$WORK/$name.out" 2>/dev/null | cut -c1-200 | grep . \
              || echo "(no output)"; echo '```'; } >> "$WORK/failures.md"
    fi
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$title" "$status" "$secs" "$(tr '\n|' ' /' 2>/dev/null < "$WORK/$name.fig")" >> "$WORK/stages.tsv"
    log "---- $name: $status in $secs s"
    if [ "$name" = install ]; then
        if [ -e "$WORK/use_site" ]; then export PYTHONPATH="$WORK/site:$ROOT${PYTHONPATH:+:$PYTHONPATH}"
        else export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
        fi
    fi
    if [ "$name" = env ] && [ "$(cat "$WORK/backend" 2>/dev/null)" = gpu ]; then CUDA=1; fi
    write_summary
}

log "GPU check: summary $SUMMARY, log $LOG, budget $BUDGET s"
for s in "${STAGES[@]}"; do run_stage "$s"; done
write_summary
log ""
log "==== summary ($SUMMARY), $(($(date +%s) - START)) s ===="
cat "$SUMMARY"
