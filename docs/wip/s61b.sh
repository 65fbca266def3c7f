# Stop 59's second call: the combined tree (.revs/both: wip/both = s144 + fc2pad)
# against main (.revs/head) on deepseek-v3 T = 2048 / 4096 and every layer's T = 512
# (blocks of 24 / 48: fc2pad only), then part of the gpu suite on .revs/both in 6
# shards (test_wgmma but its b144 cases, which the first call ran, test_self_pack,
# test_route_pack) from keys packed here (test_gpu and test_fuzz: s61c.sh).
# Keys: .revs/n58.tgz (main's 128 / 144), .revs/s61.tgz (s61_head_{24,48},
# s61_both_{24,48,128,144,wg}).
# carry [".whl", ".revs/n58.tgz", ".revs/s61.tgz", ".revs/head", ".revs/both"]
. docs/wip/dev.sh
dev_setup
export OMP_NUM_THREADS=2
TREE=.revs/head dev_packs .revs/n58.tgz .revs/pack/n58_head_128 .revs/pack/n58_head_144
tar -xzf .revs/s61.tgz
for t in head both; do
  for d in .revs/pack/s61_${t}_{24,48,128,144,wg}; do
    [ -d $d ] && python3 tools/ptx_pack.py install $d --tree .revs/$t 2>&1 | tail -n 1
  done
done
echo "installed at $SECONDS s"
for t in head both; do
  bc $t d_$t deepseek-v3 "24:512 128:2048 144:4096" 90
  bc $t g5_$t gpt-oss-120b "24:512" 40
  bc $t q5_$t qwen3-30b-a3b "48:512" 40
done
bc_report 4
cd .revs/both && export PYTHONPATH=/tmp/site:$PWD
shards 6 $((585 - SECONDS)) -k "not b144" tests/cuda/test_wgmma.py tests/cuda/test_self_pack.py \
  tests/cuda/test_route_pack.py
echo "total $SECONDS s"
