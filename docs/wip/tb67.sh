# Stop 63: tbase.patch beside main and its tests in one call (tb65.sh cut to fit one call):
# benchmarks/block_cut.py from each tree on qwen3-30b-a3b at blocks of 48 (T = 512, 640) and 64
# (T = 896), two rounds alternating; then, on the tbase tree, racecheck on test_wgmma's
# misaligned-x cases at 48 / 64 beside 6 shards of test_wgmma + test_gpu.  Keys: the header of
# tb65.sh (`git show c1d7dd9:docs/wip/tb65.sh`; .revs/tb65.tgz, all of them packed here; the tbwg
# stage once failed in an NVVM worker with ERROR_INVALID_IR and packed cleanly when resumed).
# carry [".whl", ".revs/tb65.tgz", ".revs/m", ".revs/tb"]; about 9 min.
. docs/wip/dev.sh
dev_setup
export OMP_NUM_THREADS=2
tar -xzf .revs/tb65.tgz
for t in m tb; do for d in .revs/pack/tb_$t .revs/pack/tb64_$t; do
  python3 tools/ptx_pack.py install $d --tree .revs/$t 2>&1 | tail -n 1; done; done
python3 tools/ptx_pack.py install .revs/pack/tbwg --tree .revs/tb 2>&1 | tail -n 1
for r in 1 2; do for t in m tb; do
  bc $t q_${t}_$r qwen3-30b-a3b "48:512,640 64:896" 100
done; done
bc_report 4
cd .revs/tb && export PYTHONPATH=/tmp/site:$PWD
LIM=$((${TL:-585} - SECONDS - 15)) san racecheck rc_x tests/cuda/test_wgmma.py -k "x_not_16 and (48 or 64)"
shards 6 $((${TL:-585} - SECONDS - 10)) tests/cuda/test_wgmma.py tests/cuda/test_gpu.py
san_report rc_x
echo "total $SECONDS s"
