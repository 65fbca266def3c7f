# Where T = 1's decode kernels stall (docs/performance.md step 34): ncu's warp-state
# samples on the SASS of qwen3-30b-a3b's decode_fc1 / decode_fc2 at T = 1 (eager,
# the second forward: SKIP 3 = fc1, 4 = fc2); TREE: the tree profiled (default .).
# carry [".whl", ".revs"] (.revs/packs.tgz: the T = 1 kernels packed here); ~2 min.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit
bash .revs/inst.sh > /tmp/inst.txt 2>&1; tail -n 1 /tmp/inst.txt
nvidia-smi --query-gpu=name --format=csv,noheader
export PYTHONPATH=/tmp/site:$(cd ${TREE:-.} && pwd)
for job in "qwen3-30b-a3b 3" "qwen3-30b-a3b 4"; do
  set -- $job
  d=/tmp/src_$1_$2; mkdir -p $d
  echo "######## $1 T=1 SKIP=$2"
  OUT=$d NT=150 bash tools/ncu_source.sh $1 1 $2 > $d/all.txt 2>&1
  grep -m1 -o "kernels::[a-z_0-9]*" $d/src_T1.csv 2>/dev/null
  grep -E "samples|loop 0x|outside" $d/src_T1.txt | head -n 8 | cut -c1-110
  sed -n '/^top 30 instructions:/,/^L2 sectors/p' $d/src_T1.txt | head -n 16 | cut -c1-150
done
