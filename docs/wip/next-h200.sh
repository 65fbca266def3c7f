# The next device call (docs/performance.md step 33), run from the repository root with
# carry [".whl", ".revs/packs.tgz"] (docs/wip/pack.sh: the bench's kernels among them,
# packed off the device), about 3 min, ideally on an H200:
#   1. tools/probe_flush.py: what the bench's L2 flush (a 256 MB write that leaves the L2
#      dirty) adds to a read of S bytes and to an empty graph;
#   2. tools/probe_decode_floor.py, now without CUDA_LAUNCH_BLOCKING (step 33: its H200
#      fault fits a stream race, now synchronized; blocking launches add the host's launch
#      time to what it measures); it has not yet run on an H200 since;
#   3. pymoe bench at T = 1 and 8 on the three presets (graph).
# Then a second call: the peers side by side (GPU.md section 11; carry ".peers" too):
#   python3 .peers/bench_peers.py --peers floor,pymoe,marlin,tk \
#     --preset gpt-oss-120b,qwen3-30b-a3b,deepseek-v3 --tokens 1,8,64,512,4096
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit
tar -xzf .revs/packs.tgz
for d in .revs/pack/wt_*; do PYTHONPATH=/tmp/site:$PWD python3 tools/ptx_pack.py install $d; done > /tmp/inst.txt 2>&1
nvidia-smi --query-gpu=name --format=csv,noheader
NOISE="^  |moduleUnload|check_status|^Traceback|Exception ignored|CUDADriverError|^Error in|^Original"
(cd tools && PYTHONPATH=/tmp/site timeout 100 python3 probe_flush.py 2>&1 | grep -vE "$NOISE" | tail -n 12)
(cd tools && PYTHONPATH=/tmp/site timeout 100 python3 probe_decode_floor.py 2>&1 \
   | grep -vE "$NOISE" | grep -vE "d24|half d8" | head -n 40)
SECONDS=0
PYTHONPATH=/tmp/site:$PWD timeout 300 python3 -m pymoe bench --preset qwen3-30b-a3b,gpt-oss-120b,deepseek-v3 \
  --tokens 1,8 --mode graph --no-progress > /tmp/bench.txt 2>&1; echo "bench rc $? in $SECONDS s"
grep -E " graph " /tmp/bench.txt | cut -c1-100; grep -E "Error|error" /tmp/bench.txt | tail -n 5
