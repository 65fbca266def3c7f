# Where T = 1's decode kernels stall (docs/performance.md step 34): ncu's warp-state
# samples on the SASS of qwen3-30b-a3b's decode_fc1 / decode_fc2 and deepseek-v3's
# decode_fc1 at T = 1 (eager, the second forward: SKIP 3 = fc1, 4 = fc2).
# carry [".whl", ".revs"] (.revs/packs.tgz: wt_q, the T = 1 kernels packed here); ~4 min.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit
bash .revs/inst.sh > /tmp/inst.txt 2>&1; tail -n 1 /tmp/inst.txt
nvidia-smi --query-gpu=name --format=csv,noheader
export PYTHONPATH=/tmp/site:$PWD
for job in "qwen3-30b-a3b 3" "qwen3-30b-a3b 4" "deepseek-v3 3"; do
  set -- $job
  d=/tmp/src_$1_$2; mkdir -p $d
  echo "######## $1 T=1 SKIP=$2"
  OUT=$d NT=150 bash tools/ncu_source.sh $1 1 $2 > $d/all.txt 2>&1
  head -n 1 $d/src_T1.txt 2>/dev/null; grep -m1 -o "kernels::[a-z_0-9]*" $d/src_T1.csv 2>/dev/null
  sed -n '1,70p' $d/src_T1.txt | cut -c1-150
done
