# Step 38, call C: deeper rings where they cost no CTA an SM, against main: blocks of 64
# five slots (3 k-tiles ahead; 65 KB MXFP4, 3 CTAs an SM still fit) and the wide loop
# (blocks of 128) seven (5 ahead; 182 / 196 KB, one CTA an SM).  Each tree's bench keys
# packed on the device (ab-ondevice.sh's pattern); carry [".whl", ".revs/knobs"].
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit
nvidia-smi --query-gpu=name --format=csv,noheader
SECONDS=0
pk() {
  t=$1; n=$2; shift 2
  (cd $t && PYTHONPATH=/tmp/site:$PWD python3 $OLDPWD/tools/ptx_pack.py pack /tmp/pk/$n --tree . "$@" --jobs 4 > /tmp/pk_$n.log 2>&1 \
   && PYTHONPATH=/tmp/site:$PWD python3 $OLDPWD/tools/ptx_pack.py install /tmp/pk/$n --tree . >> /tmp/pk_$n.log 2>&1)
}
for t in . .revs/knobs; do
  n=$(basename $t); [ $t = . ] && n=main
  (pk $t ${n}_a --preset deepseek-v3,gpt-oss-120b --tokens 1024,4096; pk $t ${n}_b --preset qwen3-30b-a3b --tokens 512,4096) &
done
wait; tail -q -n 1 /tmp/pk_*.log; echo "packed in $SECONDS s"
PRESETS=qwen3-30b-a3b TOK=512,4096 BT=120 OUT=/tmp/b1 bash tools/bench_revs.sh . .revs/knobs 2>&1 | tail -n 3
PRESETS=gpt-oss-120b,deepseek-v3 TOK=1024,4096 BT=200 OUT=/tmp/b2 bash tools/bench_revs.sh . .revs/knobs 2>&1 | tail -n 5
PRESETS=qwen3-30b-a3b TOK=512,4096 BT=120 OUT=/tmp/b3 bash tools/bench_revs.sh .revs/knobs . 2>&1 | tail -n 3
echo "total $SECONDS s"
