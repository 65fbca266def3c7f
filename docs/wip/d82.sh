# Stop 67, with little device time left: d80.sh without its sanitizers (about 300 s): the bench
# (bulk-copy rows .revs/bk beside main's kernels .revs/dx, qwen3-30b-a3b / gpt-oss-120b T = 4096
# at blocks of 144, two rounds) and tests/cuda/test_bulk.py, then test_wgmma's wide cases on bk
# only while TLB (default 240) s last.
# carry [".whl", ".revs/d80.tgz", ".revs/dx", ".revs/bk"]
SAN=0 TLB=${TLB:-240} exec bash docs/wip/d80.sh
