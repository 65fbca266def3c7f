# Step 39's bench call: wip/ring5-64 (.revs/r5) beside main in both orders (qwen3-30b-a3b
# and gpt-oss-120b at T = 512 / 1024: blocks of 64 on qwen3 512 and gpt-oss 1024, the other
# two rows unchanged controls), alone on the GPU.  Every key packed here (ab_main, ab_r5 in
# .revs/packs.tgz); carry [".whl", ".revs/packs.tgz", ".revs/r5"] (".peers" and ".revs/peers.tgz" too for PEERS=1:
# the peers side by side, GPU.md section 11, with the keys of wt_peers).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit
export PYTHONDONTWRITEBYTECODE=1
nvidia-smi --query-gpu=name --format=csv,noheader
SECONDS=0
tar -xzf .revs/packs.tgz
[ -f .revs/peers.tgz ] && tar -xzf .revs/peers.tgz
for d in .revs/pack/ab_main .revs/pack/wt_bench .revs/pack/wt_peers; do
  [ -d $d ] && PYTHONPATH=/tmp/site:$PWD python3 tools/ptx_pack.py install $d 2>&1 | tail -n 1; done
(cd .revs/r5 && PYTHONPATH=/tmp/site:$PWD python3 ../../tools/ptx_pack.py install ../pack/ab_r5 --tree . 2>&1 | tail -n 1)
echo "installed in $SECONDS s"
PRESETS=qwen3-30b-a3b,gpt-oss-120b TOK=512,1024 BT=80 OUT=$OUT/b1 bash tools/bench_revs.sh . .revs/r5 2>&1 | tail -n 5
PRESETS=qwen3-30b-a3b,gpt-oss-120b TOK=512,1024 BT=80 OUT=$OUT/b2 bash tools/bench_revs.sh .revs/r5 . 2>&1 | tail -n 5
echo "a/b done at $SECONDS s"
if [ "${PEERS:-0}" = 1 ]; then
  PYTHONPATH=/tmp/site:$PWD timeout ${PT:-300} python3 .peers/bench_peers.py --peers floor,pymoe,marlin,tk \
    --preset gpt-oss-120b,qwen3-30b-a3b,deepseek-v3 --tokens ${PTOK:-1,8,64,512,4096} > $OUT/peers.txt 2>&1
  echo "peers rc $?"; tail -n 24 $OUT/peers.txt
fi
echo "total $SECONDS s"
