# wip/ring6 beside main, packing both trees' bench keys on the device itself (16 cores,
# the device's own NVVM) instead of here: carry [".whl", ".revs/ring6"] (.revs/ring6 =
# `git archive wip/ring6 pymoe tests tools pyproject.toml setup.cfg`), about 8 min.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit
nvidia-smi --query-gpu=name --format=csv,noheader
SECONDS=0
pk() {  # TREE NAME ARGS...: pack on this machine, then install into its disk cache
  t=$1; n=$2; shift 2
  (cd $t && PYTHONPATH=/tmp/site:$PWD python3 $OLDPWD/tools/ptx_pack.py pack /tmp/pk/$n --tree . "$@" --jobs 8 > /tmp/pk_$n.log 2>&1 \
   && PYTHONPATH=/tmp/site:$PWD python3 $OLDPWD/tools/ptx_pack.py install /tmp/pk/$n --tree . >> /tmp/pk_$n.log 2>&1)
}
(pk . main_a --preset deepseek-v3,gpt-oss-120b --tokens 512; pk . main_b --preset qwen3-30b-a3b --tokens 8,64) &
(pk .revs/ring6 r6_a --preset deepseek-v3,gpt-oss-120b --tokens 512; pk .revs/ring6 r6_b --preset qwen3-30b-a3b --tokens 8,64) &
wait
tail -n 1 /tmp/pk_*.log; echo "packed in $SECONDS s"
PRESETS=deepseek-v3,gpt-oss-120b TOK=512 BT=200 OUT=/tmp/b1 bash tools/bench_revs.sh . .revs/ring6 2>&1 | tail -n 6
PRESETS=qwen3-30b-a3b TOK=8,64 BT=120 OUT=/tmp/b2 bash tools/bench_revs.sh . .revs/ring6 2>&1 | tail -n 5
echo "total $SECONDS s"
