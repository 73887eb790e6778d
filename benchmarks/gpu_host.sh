# Running the benchmarks on a lent GPU host, which has jax (CUDA), flax, optax, orbax and matplotlib
# but not gymnasium, ale-py, dm-env, dm-tree or tensorboardX, and no network.
#
# Here, once:   bash benchmarks/gpu_host.sh fetch      (wheels into .whl/, which git ignores locally)
# There, first: source benchmarks/gpu_host.sh          (installs .whl/ into .site/ and sets PYTHONPATH)
#               with `carry: [".whl"]` on the device call.
set -e
if [ "${1:-}" = "fetch" ]; then
    exclude="$(git rev-parse --git-path info/exclude)"  # .git/info/exclude; in a worktree, the shared one
    mkdir -p "$(dirname "$exclude")"
    grep -qx '/.whl/' "$exclude" 2>/dev/null || printf '/.whl/\n/.site/\n' >> "$exclude"
    pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 -d .whl \
        gymnasium==1.4.0 farama-notifications ale-py==0.12.1 dm-env dm-tree tensorboardX
else
    rm -rf .site
    python3 -m pip install -q --no-index --no-deps --target .site .whl/*.whl
    export PYTHONPATH="$PWD/.site:$PWD"
    python3 -c "import envs, experiments.impala, jax; print('GPU host ready:', jax.devices())"
fi
set +e
