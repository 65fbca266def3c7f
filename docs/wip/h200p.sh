# Stop 63's second call, meant for an H200 (step 33's owed probes, next-h200.sh's first two
# parts): tools/probe_flush.py and tools/probe_decode_floor.py, which compile their own
# kernels on the device (no packed keys).  carry [".whl"]; about 3 min.
. docs/wip/dev.sh
dev_setup
NOISE="^  |moduleUnload|check_status|^Traceback|Exception ignored|CUDADriverError|^Error in|^Original"
(cd tools && timeout 150 python3 probe_flush.py 2>&1 | grep -vE "$NOISE" | tail -n 12)
echo "flush at $SECONDS s"
(cd tools && timeout $((${TL:-400} - SECONDS)) python3 probe_decode_floor.py 2>&1 \
   | grep -vE "$NOISE" | grep -vE "d24|half d8" | head -n 40)
echo "total $SECONDS s"
