# Stop 59's third call: the rest of the gpu suite on the combined tree (.revs/both, =
# main at f016c4e): test_gpu from keys packed here (s61_both_gpu), test_fuzz compiled
# here, 6 shards; beside them racecheck and memcheck on blocks of 144 (the new staging).
# carry [".whl", ".revs/s61g.tgz", ".revs/both"]
. docs/wip/dev.sh
dev_setup
export OMP_NUM_THREADS=2
TREE=.revs/both dev_packs .revs/s61g.tgz .revs/pack/s61_both_gpu
cd .revs/both && export PYTHONPATH=/tmp/site:$PWD
L=$((${TL:-560} - SECONDS))
export LIM=$L
san racecheck rc_b144 tests/cuda/test_wgmma.py -k "b144 and 440-256-144 and wgmma"
san memcheck mc_b144 tests/cuda/test_wgmma.py -k "b144 and (aligned or on_input or 560-272)"
shards 6 $L tests/cuda/test_gpu.py tests/cuda/test_fuzz.py
san_report rc_b144 mc_b144
echo "total $SECONDS s"
