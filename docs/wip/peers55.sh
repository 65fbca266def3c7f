# The peers side by side (GPU.md section 11) on main, alone on the GPU: keys packed here
# (the wt_peers line of docs/wip/pack54.sh -> .revs/peers.tgz); carry [".whl", ".peers",
# ".revs/peers.tgz"].  PT (520 s), PTOK (1,8,64,512,4096).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit
export PYTHONPATH=/tmp/site:$PWD PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
SECONDS=0
tar -xzf .revs/peers.tgz
python3 tools/ptx_pack.py install .revs/pack/wt_peers 2>&1 | tail -n 1
timeout ${PT:-520} python3 .peers/bench_peers.py --peers floor,pymoe,marlin,tk \
  --preset gpt-oss-120b,qwen3-30b-a3b,deepseek-v3 --tokens ${PTOK:-1,8,64,512,4096} > $OUT/peers.txt 2>&1
echo "peers rc $? at $SECONDS s"; tail -n 30 $OUT/peers.txt
