"""The GPU cases .revs/next-mix.sh runs for wip/decode-mix (decode_fc2's wide
CTA and the narrow decode kernels in dynamic shared memory), as a Case list
for `tools/ptx_pack.py pack ... --case-list mix_cases:CASES` (PYTHONPATH=docs/wip:.
from the branch's tree), and their pytest ids (`python docs/wip/mix_cases.py`)."""
from tests.cuda.test_gpu import MISALIGNED_CASES, _families


def _picked(c) -> bool:
    s = str(c)
    return (("-H2880-I2880-E8-k2-" in s and c.T in (1, 2))
            or s.startswith(("T1-H2048-I768-", "T3-H8448-I64-", "T3-H64-I8448-"))
            or "-I2048-" in s or "-I2112-" in s
            or (s.startswith("T3-H256-I144-E8-k2-") and s.endswith("-bias-s3")))


PICKED = [c for c in _families() if _picked(c)]
CASES = PICKED + MISALIGNED_CASES

if __name__ == "__main__":
    for c in PICKED:
        print(f"tests/cuda/test_gpu.py::test_gpu_matches_reference[{c}]")
    print("tests/cuda/test_gpu.py::test_decode_misaligned_activations")
