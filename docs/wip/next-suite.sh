# The whole gpu suite with memcheck on the tree after steps 36-37 (docs/performance.md):
# the decode keys fold MXFP4 scales on sm_90, the GEMMs make their scale values from the
# byte, and blocks of 32 run a 6-slot ring.  Step 37 ran the suite without memcheck and
# two of its four shards were cut while compiling test_wgmma's keys: pack them too.
# Run from the repository root with carry [".whl", ".revs"]; .revs/pack/wt_* from
# docs/wip/pack.sh on this tree (the packs' source hash must match).  Plain in 3 shards beside
# memcheck in 3 (tools/gpu_suite.sh), about 9 min; then the peers' T = 1 rows.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit
for d in .revs/pack/wt_*; do PYTHONPATH=/tmp/site:$PWD python3 tools/ptx_pack.py install $d; done
nvidia-smi --query-gpu=name --format=csv,noheader
PYTHONPATH=/tmp/site:$PWD TOOLS=memcheck OUT=/tmp bash tools/gpu_suite.sh 3 540 tests
