# The whole gpu suite on the tree after step 36 (docs/performance.md): the decode keys
# now fold MXFP4 scales on sm_90, and that session ran only test_gpu.py on a GPU.
# Run from the repository root with carry [".whl", ".revs"]; .revs/packs.tgz should
# hold pack/wt_gpu (tools/ptx_pack.py pack pack/wt_gpu --gpu-suite) and pack/wt_fold
# (... --case-list tests.cuda.test_gpu:FOLD_CASES, the bit test's cases), packed
# from this tree (the pack's source hash must match).  Plain in 3 shards beside
# memcheck in 3 (tools/gpu_suite.sh), about 9 min; then the peers' T = 1 rows.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit
[ -f .revs/inst.sh ] && bash .revs/inst.sh > /tmp/inst.txt 2>&1; tail -n 2 /tmp/inst.txt
nvidia-smi --query-gpu=name --format=csv,noheader
PYTHONPATH=/tmp/site:$PWD TOOLS=memcheck OUT=/tmp bash tools/gpu_suite.sh 3 540 tests
