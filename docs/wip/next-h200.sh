# The next device call (docs/performance.md step 33), run from the repository root with
# carry [".whl"] (plus ".revs" if packs are there), about 4 min, ideally on an H200:
#   1. tools/probe_flush.py: what the bench's L2 flush (a 256 MB write that leaves the L2
#      dirty) adds to a read of S bytes and to an empty graph;
#   2. tools/probe_decode_floor.py on this GPU (its first H200 run faulted, step 31; with
#      CUDA_LAUNCH_BLOCKING=1 the H100 ran it clean twice, step 32);
#   3. pymoe bench at T = 1 and 8 on the three presets (graph), the landed decode rule;
#   4. the wide decode_fc2 GPU cases (I = 2048, and I = 2080 whose K tail has not run on a GPU),
#      plain and under memcheck.
# Then a second call: the peers side by side (GPU.md section 11; carry ".peers" too):
#   python3 .peers/bench_peers.py --peers floor,pymoe,marlin,tk \
#     --preset gpt-oss-120b,qwen3-30b-a3b,deepseek-v3 --tokens 1,8,64,512,4096
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit
[ -f .revs/inst.sh ] && bash .revs/inst.sh > /tmp/inst.txt 2>&1
nvidia-smi --query-gpu=name --format=csv,noheader
NOISE="^  |moduleUnload|check_status|^Traceback|Exception ignored|CUDADriverError|^Error in|^Original"
(cd tools && PYTHONPATH=/tmp/site timeout 100 python3 probe_flush.py 2>&1 | grep -vE "$NOISE" | tail -n 12)
(cd tools && CUDA_LAUNCH_BLOCKING=1 PYTHONPATH=/tmp/site timeout 100 python3 probe_decode_floor.py 2>&1 \
   | grep -vE "$NOISE" | grep -vE "d24|half d8" | head -n 40)
PYTHONPATH=/tmp/site:$PWD timeout 200 python3 -m pymoe bench --preset qwen3-30b-a3b,gpt-oss-120b,deepseek-v3 \
  --tokens 1,8 --mode graph --no-progress 2>&1 | grep -E " graph " | cut -c1-100
T=(python3 -m pytest -q -p no:cacheprovider -m gpu tests/cuda/test_gpu.py -k "I2048 or I2080")
PYTHONPATH=/tmp/site:$PWD timeout 150 "${T[@]}" 2>&1 | tail -n 2
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
PYTHONPATH=/tmp/site:$PWD timeout 150 $SAN --tool memcheck --target-processes all "${T[@]}" 2>&1 \
  | grep -E "passed|failed|^========= [A-Z]" | sed 's/due to.*on CUDA API call to/ -> /' | sort | uniq -c
