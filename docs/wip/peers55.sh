# The peers side by side (GPU.md section 11) on main, alone on the GPU: keys packed here
# (the wt_peers line of docs/wip/pack54.sh -> .revs/peers.tgz); carry [".whl", ".peers",
# ".revs/peers.tgz"]; PTGZ another: .revs/peers61.tgz, stop 60, main at de3c744, packed with
# --tree .revs/both, 61 keys, 16 min here).  PT (520 s), PTOK (1,8,64,512,4096).
. docs/wip/dev.sh
dev_setup
dev_packs ${PTGZ:-.revs/peers.tgz}
timeout ${PT:-520} python3 .peers/bench_peers.py --peers floor,pymoe,marlin,tk \
  --preset gpt-oss-120b,qwen3-30b-a3b,deepseek-v3 --tokens ${PTOK:-1,8,64,512,4096} > $OUT/peers.txt 2>&1
echo "peers rc $? at $SECONDS s"; tail -n 30 $OUT/peers.txt
