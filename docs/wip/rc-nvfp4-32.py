"""racecheck's stand-in for test_wgmma's 129-512-224-128-8 bf16 NVFP4 case (step 40): under
racecheck that case's process grows past the device machine's 128 GB of host memory and is
OOM-killed (no kernel error).  The same path, blocks of 32 on the v2 wgmma GEMM with NVFP4
(bf16's scale table, up_gate; and fp16), on E = 8, which racecheck finishes in seconds:
    PYMOE_GEMM=wgmma compute-sanitizer --tool racecheck python3 docs/wip/rc-nvfp4-32.py
"""
from pymoe import geometry as geo
from tests.cuda.diff import check_case
from tests.problems import Case

for t, dt, lay in ((65, "bfloat16", "up_gate"), (40, "float16", "gate_up")):
    assert geo.select_block_size(t, 2, 8) == 32
    check_case(Case(t, 256, 144, 8, 2, dtype=dt, format="nvfp4", activation="silu",
                    layout=lay, bias=True, seed=t), device=True)
    print("ok", t, dt, flush=True)
