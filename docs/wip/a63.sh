# Stop 61's first call: the peers side by side on main (9277ca1; keys: pack63.sh's peers stage,
# .revs/peers63.tgz; PACKS: another tarball), alone on the GPU.
# carry [".whl", ".peers", ".revs/peers63.tgz"]
. docs/wip/dev.sh
dev_setup
dev_packs ${PACKS:-.revs/peers63.tgz}
timeout $((${TL:-570} - SECONDS)) python3 .peers/bench_peers.py --peers floor,pymoe,marlin,tk \
  --preset ${PPRE:-qwen3-30b-a3b,gpt-oss-120b,deepseek-v3} --tokens ${PTOK:-1,8,64,512,4096} > $OUT/peers.txt 2>&1
echo "peers rc $? at $SECONDS s"
tail -n 40 $OUT/peers.txt
