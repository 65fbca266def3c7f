# Stop 66: what fc2's stores cost at T = 4096 (step 49's ~8 us a CTA outside the k-loop: a
# wave of 132 CTAs writes 132 x 144 routes x 256 columns x 4 bytes = 19.5 MB of route rows at
# once, about 6.5 us at the copy rate, if the CTAs stay in step).  .revs/ns is .revs/dx (HEAD's
# kernels) with every fc2 route-row store predicated off (same instructions, no bytes; its
# block_cut prints the failed reference check instead of exiting).  .revs/sg is .revs/dx with
# fc2's first wave (linear CTA < 132) put in 8 phases after its pdl_wait (nanosleep 0 .. 8.4
# us), so the waves' write bursts need not coincide.  block_cut at blocks of 144, dx / ns / sg
# alternating (qwen3-30b-a3b; gpt-oss-120b dx / sg while time is left), ncu's source view of
# dx's qwen3 fc2 between the rounds.
# Keys: .revs/d77.tgz (dx_bc, ns_bc, sg_bc: the bench at 144; dx_nc: `pymoe bench`'s keys at
# qwen3-30b-a3b T = 4096, for ncu).
# carry [".whl", ".revs/d77.tgz", ".revs/dx", ".revs/ns", ".revs/sg"]
. docs/wip/dev.sh
dev_setup
export OMP_NUM_THREADS=2
tar -xzf .revs/d77.tgz
for d in dx_bc dx_nc; do python3 tools/ptx_pack.py install .revs/pack/$d --tree .revs/dx 2>&1 | tail -n 1; done
python3 tools/ptx_pack.py install .revs/pack/ns_bc --tree .revs/ns 2>&1 | tail -n 1
python3 tools/ptx_pack.py install .revs/pack/sg_bc --tree .revs/sg 2>&1 | tail -n 1
for t in dx ns sg; do bc $t q_${t}_1 qwen3-30b-a3b "144:4096" 60; done
# ncu's source view of dx's qwen3 fc2 (where its ~8 us a CTA outside the k-loop go)
mkdir -p $OUT/ncu_q
(cd .revs/dx && PYTHONPATH=/tmp/site:$PWD NT=170 KBASE=mangled KREGEX=regex:kernels3fc2 \
  OUT=$OUT/ncu_q bash tools/ncu_source.sh qwen3-30b-a3b 4096 1 > $OUT/ncu_q.txt 2>&1)
echo "== ncu done at $SECONDS s"
for t in dx ns sg; do bc $t q_${t}_2 qwen3-30b-a3b "144:4096" 60; done
[ $SECONDS -lt $((${TL:-570} - 150)) ] && for t in dx sg; do bc $t g_${t}_1 gpt-oss-120b "144:4096" 70; done
bc_report 3
head -n 70 $OUT/ncu_q/src_T4096.txt
echo "total $SECONDS s"
