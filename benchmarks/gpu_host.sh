# Running the benchmarks on a lent GPU host, which has jax (CUDA), flax, optax, orbax, matplotlib,
# pandas, seaborn, six, lxml and tqdm (the device library's KINDS.md lists its image) but not
# gymnasium, ale-py, dm-env, dm-tree, tensorboardX, gymnax or MuJoCo Playground, and no network.
#
# Here, once:   bash benchmarks/gpu_host.sh fetch      (wheels into .whl/, which git ignores locally;
#               about 31 MB, under the 64 MiB a device call carries: see the list below)
# There, first: source benchmarks/gpu_host.sh          (installs .whl/ into .site/ and sets PYTHONPATH)
#               with `carry: [".whl"]` on the device call.
set -e
if [ "${1:-}" = "fetch" ]; then
    exclude="$(git rev-parse --git-path info/exclude)"  # .git/info/exclude; in a worktree, the shared one
    mkdir -p "$(dirname "$exclude")"
    grep -qx '/.whl/' "$exclude" 2>/dev/null || printf '/.whl/\n/.site/\n' >> "$exclude"
    # Afresh: two versions of one package in .whl/ stop the whole install there.
    rm -f .whl/*.whl
    # gymnasium 1.3: gymnax 1.0.1 pins gymnasium < 1.4 (the CPU machine's venv has 1.3.0 too).
    # gymnax needs gymnasium, matplotlib, seaborn (pandas) and six at import: the host has the rest.
    # MuJoCo Playground's CartpoleBalance (playground, mujoco-mjx, mujoco and mujoco-core, brax,
    # ml_collections, trimesh, jaxopt: ~26 MB) runs MJX's JAX pipeline there (--env_kwargs
    # impl='jax'): warp-lang, for its default MuJoCo Warp pipeline, is a 149 MB wheel, over what a
    # call carries; mujoco-studio (12.8 MB, the viewer) is not needed to step an env. glfw: Gymnasium's
    # MuJoCo envs (the native pool's HalfCheetah-v5, the off-policy stage) import it at load. mctx, pgx
    # and svgwrite (pgx's): the planning stage's MuZero and AlphaZero (~1 MB).
    pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 -d .whl \
        gymnasium==1.3.0 farama-notifications ale-py==0.12.1 dm-env dm-tree tensorboardX \
        gymnax==1.0.1 six \
        playground==0.2.0 mujoco-mjx==3.17.0 mujoco==4.0.0 mujoco-core==4.0.0 brax==0.14.2 ml_collections \
        trimesh jaxopt glfw==2.11.0 mctx==0.0.71 pgx==2.6.0 svgwrite
    du -ch .whl/*.whl | tail -1
else
    rm -rf .site
    python3 -m pip install -q --no-index --no-deps --target .site .whl/*.whl
    export PYTHONPATH="$PWD/.site:$PWD"
    python3 -c "import envs, experiments.impala, gymnax, jax; print('GPU host ready:', jax.devices())"
fi
set +e
