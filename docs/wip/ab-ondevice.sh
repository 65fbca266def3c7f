# A/B on the device without packing here: each tree's bench keys packed there (16 cores,
# its own NVVM), then pymoe bench side by side.  As run in step 37 for ring6 / r32 beside
# main; carry [".whl", ".revs/ring6", ".revs/r32"] (git archive exports of the trees).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit
nvidia-smi --query-gpu=name --format=csv,noheader
SECONDS=0
pk() {
  t=$1; n=$2; shift 2
  (cd $t && PYTHONPATH=/tmp/site:$PWD python3 $OLDPWD/tools/ptx_pack.py pack /tmp/pk/$n --tree . "$@" --jobs 5 > /tmp/pk_$n.log 2>&1 \
   && PYTHONPATH=/tmp/site:$PWD python3 $OLDPWD/tools/ptx_pack.py install /tmp/pk/$n --tree . >> /tmp/pk_$n.log 2>&1)
}
for t in . .revs/ring6 .revs/r32; do
  n=$(basename $t); [ $t = . ] && n=main
  (pk $t ${n}_a --preset deepseek-v3,gpt-oss-120b --tokens 64,512; pk $t ${n}_b --preset qwen3-30b-a3b --tokens 8,64,256) &
done
wait; tail -q -n 1 /tmp/pk_*.log; echo "packed in $SECONDS s"
PRESETS=deepseek-v3,gpt-oss-120b TOK=64,512 BT=200 OUT=/tmp/b1 bash tools/bench_revs.sh . .revs/ring6 .revs/r32 2>&1 | tail -n 5
PRESETS=qwen3-30b-a3b TOK=8,64,256 BT=150 OUT=/tmp/b2 bash tools/bench_revs.sh . .revs/ring6 .revs/r32 2>&1 | tail -n 4
echo "total $SECONDS s"
