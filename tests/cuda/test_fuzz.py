"""Differential fuzz: hypothesis draws MoE problems (T, E, k, layer family, w13
layout, routing, expert map, id width, value scale, seed) and runs each through
the CUDA twin (a GPU, or Numba's simulator) and the reference, comparing every
buffer (diff.check_problem: NaN-poisoned scratch and output, route buffers
exactly, floats within the dtype's bound).

Families: every format x dtype x activation once, with bias and router-on-input
alternating, each on one of two odd (H, I) so the GPU compiles a bounded set of
kernels.  Routings: uniform; skewed (one expert takes half the routes);
duplicate ids within a token; invalid ids (-1, E, 2^31 - 1, and past int32 for
int64 ids); everything to one expert.  Values: x scaled by extreme but finite
powers of two.

    PYMOE_FUZZ_EXAMPLES   examples per run (default: 300 on a GPU, 6 simulated)
    PYMOE_FUZZ_SEED       the seed (default 20261130); a failure prints its example
    PYMOE_FUZZ_SHARD      I/N: this process takes families I, I+N, ... (parallel runs)
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, note, seed, settings
from hypothesis import strategies as st

from pymoe import env
from tests.cuda.diff import check_problem
from tests.gating import CUDASIM
from tests.problems import NP_DTYPE, Case, make_problem

pytestmark = [pytest.mark.cudasim] if CUDASIM else [pytest.mark.gpu]

FAMILIES = [dict(format=f, dtype=d, activation=a) for f in ("mxfp4", "nvfp4")
            for d in ("bfloat16", "float16") for a in ("silu", "swigluoai", "relu2")]
# odd shapes per format: K a multiple of 8 (MXFP4) or 16 (NVFP4), not of 32
SHAPES = {"mxfp4": ((64, 32), (40, 24)), "nvfp4": ((64, 32), (80, 48))}
for _i, _f in enumerate(FAMILIES):
    _f.update(bias=bool(_i % 2), on_input=bool((_i // 2) % 2),
              shape=((32, 16) if CUDASIM else SHAPES[_f["format"]][(_i // 3) % 2]))

N_EXAMPLES = int(env.get_str("PYMOE_FUZZ_EXAMPLES", "6" if CUDASIM else "300"))
SEED = int(env.get_str("PYMOE_FUZZ_SEED", "20261130"))
_shard = env.get_str("PYMOE_FUZZ_SHARD", "0/1")
SHARD_I, SHARD_N = (int(v) for v in _shard.split("/"))
MINE = FAMILIES[SHARD_I::SHARD_N]
ROUTINGS = ("uniform", "skewed", "duplicates", "invalid", "one_expert")
# x scale: extreme but finite through both projections in the dtype
SCALES = {"bfloat16": (1.0, 2.0 ** -40, 2.0 ** 30), "float16": (1.0, 2.0 ** -6, 2.0 ** 3)}
RAN: list = []


@pytest.fixture(scope="module", autouse=True)
def _report():
    """After the module: how many drawn problems ran (and matched) in this process
    (a sharded suite may run the fuzz in another process: then nothing is said)."""
    yield
    if RAN:
        print(f"\nfuzz: {len(RAN)} problems matched the reference (seed {SEED}, shard "
              f"{SHARD_I}/{SHARD_N}, families {len(MINE)})")


@st.composite
def moe_problems(draw):
    fam = draw(st.sampled_from(MINE))
    E = draw(st.integers(1, 5 if CUDASIM else 12))
    k = draw(st.integers(1, min(E, 4)))
    T = draw(st.integers(0, 12 if CUDASIM else 70))
    gated = fam["activation"] != "relu2"
    return dict(
        case=Case(T, *fam["shape"], E, k, dtype=fam["dtype"], format=fam["format"],
                  activation=fam["activation"], bias=fam["bias"], on_input=fam["on_input"],
                  layout=draw(st.sampled_from(("gate_up", "up_gate", "interleaved")
                                              if gated else ("gate_up",))),
                  ep=draw(st.booleans()), seed=draw(st.integers(0, 2 ** 31 - 1))),
        routing=draw(st.sampled_from(ROUTINGS)),
        int64_ids=draw(st.booleans()),
        scale=draw(st.sampled_from(SCALES[fam["dtype"]])),
        extra_tokens=draw(st.sampled_from((0, 1, 40))))


def _reroute(p, routing: str, int64_ids: bool, rng):
    c = p.case
    ids = p.topk_ids.astype(np.int64)
    n_ids = 2 * c.E if c.ep else c.E
    if ids.size and routing == "skewed":              # expert 0 takes half the routes
        flat = ids.reshape(-1)
        flat[rng.permutation(flat.size)[:flat.size // 2]] = 0
    elif ids.size and routing == "duplicates":        # one id repeated within tokens
        rows = rng.random(c.T) < 0.5
        ids[rows] = ids[rows, :1]
    elif ids.size and routing == "invalid":
        bad = [-1, n_ids, 2 ** 31 - 1, -(2 ** 31)] + ([2 ** 40, -(2 ** 33)] if int64_ids else [])
        flat = ids.reshape(-1)
        pos = rng.permutation(flat.size)[:max(1, flat.size // 3)]
        flat[pos] = rng.choice(bad, size=pos.size)
    elif routing == "one_expert":
        ids[:] = 0
    p.topk_ids = np.ascontiguousarray(ids if int64_ids else ids.astype(np.int32))


@settings(max_examples=N_EXAMPLES, deadline=None, database=None, print_blob=True,
          phases=(Phase.explicit, Phase.generate, Phase.shrink),
          suppress_health_check=list(HealthCheck))
@seed(SEED)
@given(moe_problems())
def test_cuda_matches_reference_on_drawn_problems(d):
    c = d["case"]
    note(f"case {c} routing={d['routing']} int64_ids={d['int64_ids']} scale={d['scale']} "
         f"max_tokens=T+{d['extra_tokens']}")
    p = make_problem(c)
    rng = np.random.default_rng(c.seed ^ 0x5EED)
    _reroute(p, d["routing"], d["int64_ids"], rng)
    p.x = (p.x.astype(np.float32) * np.float32(d["scale"])).astype(NP_DTYPE[c.dtype])
    check_problem(p, device=not CUDASIM, max_tokens=max(1, c.T + d["extra_tokens"]))
    RAN.append(1)


def test_the_families_cover_every_format_dtype_activation():
    seen = {(f["format"], f["dtype"], f["activation"]) for f in FAMILIES}
    assert len(seen) == 12 and {f["bias"] for f in FAMILIES} == {False, True}
    assert {f["on_input"] for f in FAMILIES} == {False, True}
