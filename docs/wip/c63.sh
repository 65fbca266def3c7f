# Stop 62's third call (after pack63.sh's wg stage): test_wgmma, test_bad_inputs and
# test_self_pack on main (9277ca1's pymoe) in 6 shards, with racecheck on the ring loop's
# misaligned-x cases (blocks of 48 / 64: the register path a chunk a thread) beside them.
# carry [".whl", ".revs/wg63.tgz", ".revs/gpu63.tgz"]
. docs/wip/dev.sh
dev_setup
export OMP_NUM_THREADS=2
dev_packs .revs/wg63.tgz; dev_packs .revs/gpu63.tgz
LIM=$((${TL:-570} - SECONDS - 20)) san racecheck rc_x tests/cuda/test_wgmma.py -k "x_not_16 and (48 or 64)"
shards 6 $((${TL:-570} - SECONDS)) tests/cuda/test_wgmma.py tests/cuda/test_bad_inputs.py \
  tests/cuda/test_self_pack.py
san_report rc_x
echo "total $SECONDS s"
