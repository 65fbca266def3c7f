# Stop 66: fc2 at qwen3-30b-a3b / gpt-oss-120b T = 4096 (blocks of 144), four trees side by side:
# dx (HEAD's kernels), ns (dx with every fc2 route-row store predicated off: what the stores
# cost), sg (dx with fc2's first wave put in 8 phases after its pdl_wait: whether the waves' write
# bursts coincide), pf (fc2 as persistent CTAs on the register epilogue, branch pfd: the next
# tile's setup and ring prologue issued before this tile's stores).  block_cut (its reference
# check is the correctness check of pf; ns prints its failed check), qwen3 in two rounds, gpt-oss
# between them; then test_wgmma's b128 wgmma cases on pf while time is left.
# Keys: .revs/d78.tgz (dx_bc ns_bc sg_bc pf_bc: the bench at 144; pf_t: the b128 cases).
# carry [".whl", ".revs/d78.tgz", ".revs/dx", ".revs/ns", ".revs/sg", ".revs/pf"]
. docs/wip/dev.sh
dev_setup
export OMP_NUM_THREADS=2
tar -xzf .revs/d78.tgz
for t in dx ns sg pf; do
  python3 tools/ptx_pack.py install .revs/pack/${t}_bc --tree .revs/$t 2>&1 | tail -n 1
done
[ -d .revs/pack/pf_t ] && python3 tools/ptx_pack.py install .revs/pack/pf_t --tree .revs/pf 2>&1 | tail -n 1
for t in dx ns sg pf; do bc $t q_${t}_1 qwen3-30b-a3b "144:4096" 60; done
for t in dx pf; do bc $t g_${t}_1 gpt-oss-120b "144:4096" 70; done
for t in pf sg ns dx; do bc $t q_${t}_2 qwen3-30b-a3b "144:4096" 60; done
bc_report 3
if [ $SECONDS -lt $((${TL:-570} - 60)) ]; then
  cd .revs/pf && export PYTHONPATH=/tmp/site:$PWD
  shards 5 $((${TL:-570} - SECONDS - 10)) tests/cuda/test_wgmma.py -k "b128 and wgmma"
fi
echo "total $SECONDS s"
