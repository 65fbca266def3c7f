# Stop 66: on .revs/f1 (fc1 and fc2 on the wide loop store from registers; fc2 as
# d73.sh measured, fc1 as d75.sh) compute-sanitizer memcheck over test_wgmma's wide wgmma cases (b128, packed
# keys; b144, compiled here) beside racecheck on the b144 ones, and plainly the one case d73.sh's
# shards ran out of time on (nan_scale at 420 / fp16).  Keys: .revs/f1.tgz.
# carry [".whl", ".revs/f1.tgz", ".revs/f1"]
. docs/wip/dev.sh
dev_setup
export OMP_NUM_THREADS=2
tar -xzf .revs/f1.tgz
for d in f1_bc f1_t; do python3 tools/ptx_pack.py install .revs/pack/$d --tree .revs/f1 2>&1 | tail -n 1; done
cd .revs/f1 && export PYTHONPATH=/tmp/site:$PWD
LIM=$((${TL:-540} - SECONDS)) san memcheck mc_128 tests/cuda/test_wgmma.py -k "b128 and wgmma"
LIM=$((${TL:-540} - SECONDS)) san memcheck mc_144 tests/cuda/test_wgmma.py -k "b144 and wgmma"
LIM=$((${TL:-540} - SECONDS)) san racecheck rc_144 tests/cuda/test_wgmma.py -k "b144 and wgmma and 440"
timeout $((${TL:-540} - SECONDS)) python3 -m pytest -q -p no:cacheprovider -m gpu -rfE \
  tests/cuda/test_wgmma.py -k "nan_scale and 420 and float16" > $OUT/nan.log 2>&1 &
wait
san_report mc_128 mc_144 rc_144
tail -n 3 $OUT/nan.log
echo "total $SECONDS s"
