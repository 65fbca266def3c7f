# Step 42's last call: the GPU tests that blocks of 144 reach automatically now
# (BLOCK_MAX_MEAN 128: 120; test_gpu's 9 cases of a mean past 120, the packer at
# 144, test_wgmma's cases moved or added), keys compiled here, one process each.
# carry [".whl"]
. docs/wip/dev.sh
dev_setup
T="python3 -m pytest -q -p no:cacheprovider -m gpu --collect-only"
{ $T tests/cuda/test_gpu.py 2>/dev/null | grep "::" | grep -E "\[T1024-|\[T257-H256-I144-(E1-k1|E7-k4|E8-k8)-"
  $T tests/cuda/test_route_pack.py -k "multi_cta and uniform" 2>/dev/null | grep "::"
  $T tests/cuda/test_wgmma.py -k "b144 or fp16_nvfp4_scales or (nan_scale and 128) or b128" 2>/dev/null | grep "::"
} > $OUT/ids.txt
echo "$(wc -l < $OUT/ids.txt) tests"
par_tests 15 420
