"""Building blocks of the tensor-core GEMM (pymoe/cuda/mma.py, pymoe/cuda/ptx.py),
checked one at a time on the GPU, plus their PTX with no GPU.  Test kernels go
through pymoe's own launch path (CuPy), like every pymoe kernel."""
import numpy as np
import pytest

import pymoe
from pymoe import formats
from tests.cuda.ptxas import assemble

numba = pytest.importorskip("numba")

E2M1 = formats.decode_fp4(np.arange(16, dtype=np.uint8)).astype(np.float32)


def _bits16(v, dtype):
    v = np.asarray(v, np.float32)
    if dtype == "bfloat16":
        return (v.view(np.uint32) >> 16).astype(np.uint32)       # exact for E2M1 values
    return v.astype(np.float16).view(np.uint16).astype(np.uint32)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_fp4_word_decodes_to_exact_16bit_pairs(dtype):
    import cupy as cp
    from numba import cuda
    from pymoe.cuda.launch import KernelSpec, load_spec
    from pymoe.cuda.kernels.gemm_mma import make_decode_word
    dec = make_decode_word(dtype)

    def k(words, out):
        i = cuda.grid(1)
        if i < words.size:
            for p in range(4):
                out[4 * i + p] = dec(words[i], p)

    rng = np.random.default_rng(0)
    words = np.concatenate([np.arange(256, dtype=np.uint32) * 0x01010101,   # every byte
                            rng.integers(0, 2**32, 4096, dtype=np.uint64).astype(np.uint32)])
    out = cp.full(4 * words.size, 0xDEADBEEF, cp.uint32)
    load_spec(KernelSpec(k, ("u4[]", "u4[]"), 128)).launch(
        ((words.size + 127) // 128,), (cp.asarray(words), out))
    got = out.get().reshape(-1, 4)
    nib = (words[:, None] >> (4 * np.arange(8, dtype=np.uint32))) & 15          # [n, 8]
    want_lo = _bits16(E2M1[nib[:, :4]], dtype)
    want_hi = _bits16(E2M1[nib[:, 4:]], dtype)
    np.testing.assert_array_equal(got & 0xFFFF, want_lo)
    np.testing.assert_array_equal(got >> 16, want_hi)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_mma_m16n8k16_matches_float64(dtype):
    """The intrinsic with the PTX ISA fragment layout (lane = 4*group + t)."""
    import cupy as cp
    from numba import cuda
    from pymoe.cuda.launch import KernelSpec, load_spec
    from pymoe.cuda.kernels.ptx import mma_bf16, mma_f16
    mma = mma_bf16 if dtype == "bfloat16" else mma_f16

    def k(a, b, c, out):                   # a [16,16] b [16,8] (k, n) c [16,8]: 16-bit bits
        lane = cuda.threadIdx.x
        g = lane // 4
        t = lane % 4

        def pair(arr, i0, i1):
            return numba.uint32(arr[i0]) | (numba.uint32(arr[i1]) << numba.uint32(16))
        a0 = pair(a, g * 16 + 2 * t, g * 16 + 2 * t + 1)
        a1 = pair(a, (g + 8) * 16 + 2 * t, (g + 8) * 16 + 2 * t + 1)
        a2 = pair(a, g * 16 + 2 * t + 8, g * 16 + 2 * t + 9)
        a3 = pair(a, (g + 8) * 16 + 2 * t + 8, (g + 8) * 16 + 2 * t + 9)
        b0 = pair(b, (2 * t) * 8 + g, (2 * t + 1) * 8 + g)
        b1 = pair(b, (2 * t + 8) * 8 + g, (2 * t + 9) * 8 + g)
        d0, d1, d2, d3 = mma(a0, a1, a2, a3, b0, b1, c[g * 8 + 2 * t], c[g * 8 + 2 * t + 1],
                             c[(g + 8) * 8 + 2 * t], c[(g + 8) * 8 + 2 * t + 1])
        out[g * 8 + 2 * t] = d0
        out[g * 8 + 2 * t + 1] = d1
        out[(g + 8) * 8 + 2 * t] = d2
        out[(g + 8) * 8 + 2 * t + 1] = d3

    rng = np.random.default_rng(1)
    a = rng.standard_normal((16, 16)).astype(np.float32)
    b = rng.standard_normal((16, 8)).astype(np.float32)
    if dtype == "bfloat16":
        a = (a.view(np.uint32) & 0xFFFF0000).view(np.float32)
        b = (b.view(np.uint32) & 0xFFFF0000).view(np.float32)
    else:
        a, b = a.astype(np.float16).astype(np.float32), b.astype(np.float16).astype(np.float32)
    c = rng.standard_normal((16, 8)).astype(np.float32)
    out = cp.full(128, np.nan, cp.float32)
    load_spec(KernelSpec(k, ("u2[]", "u2[]", "f4[]", "f4[]"), 32)).launch(
        (1,), (cp.asarray(_bits16(a, dtype).astype(np.uint16).ravel()),
               cp.asarray(_bits16(b, dtype).astype(np.uint16).ravel()),
               cp.asarray(c.ravel()), out))
    want = a.astype(np.float64) @ b.astype(np.float64) + c
    np.testing.assert_allclose(out.get().reshape(16, 8), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("fmt", ["mxfp4", "nvfp4"])
def test_packed_gemms_compile_to_mma_ptx(fmt, dtype, monkeypatch):
    """With gemm='mma' (PYMOE_GEMM's GPU default) fc1/fc2 are tensor-core kernels."""
    from pymoe.cuda import launch
    if launch.SIM:
        pytest.skip("the simulator replaces the compiler")
    from pymoe.geometry import launch_keys
    for b in ((8, 64) if (fmt, dtype) == ("mxfp4", "bfloat16") else (16,)):
        keys = launch_keys("packed", b, format=fmt, activation="swigluoai", dtype=dtype,
                           hidden_size=40, intermediate_size=72, has_bias=True,
                           router_on_input=True, swiglu_limit=7.0, swiglu_alpha=1.702,
                           gemm="mma")
        for key in keys[1:3]:
            ptx, _ = launch.compile_ptx(key, (9, 0))
            n = ptx.count("mma.sync.aligned.m16n8k16.row.col.f32")
            assert n == 2 * (b // 8), (key.kernel, b, n)        # unrolled over n-tiles
            assert "prmt.b32" in ptx and ".local" not in ptx
            log = assemble(ptx)                      # None when no ptxas is installed
            assert log is None or "0 bytes spill" in log, log


@pytest.mark.parametrize("gemm,block,inter", [("wgmma", 64, 40), ("wgmma", 128, 40),
                                              ("mma", 32, 72), ("fma", 32, 40),
                                              ("mma", 32, 38)])
def test_epilogues_vector_io_ptx(gemm, block, inter):
    """fc1 / fc2 epilogues take 4 adjacent columns a thread (common.epilogue_vec)
    where the row lengths allow: one 16-byte ld.shared of the accumulator tile a
    part, fc1's 4 outputs rounded in pairs (cvt.rn.bf16x2) into one 8-byte store,
    fc2's 4 fp32 route outputs in one 16-byte store; the sigmoid on the SFU
    (ex2.approx, no IEEE division).  I = 38 (not a multiple of 4): fc1 falls back
    to a column a thread, 2-byte stores.  fc2 on wgmma's wide loop (blocks of
    128 / 144) stores its accumulators from registers instead: predicated 4-byte
    stores, no tile in shared memory (kernels/fc2.py make_acc_stores)."""
    from pymoe.cuda import launch
    from pymoe.cuda.kernels.common import EPI_VEC, epilogue_vec
    from pymoe.geometry import launch_keys
    if launch.SIM:
        pytest.skip("the simulator replaces the compiler")
    assert epilogue_vec(40, 128, 256, 32) == EPI_VEC == 4
    assert epilogue_vec(38, 128, 256, 32) == epilogue_vec(40, 128, 256, 30) == 1
    keys = launch_keys("packed", block, format="mxfp4",
                       activation="silu", dtype="bfloat16", hidden_size=72,
                       intermediate_size=inter, has_bias=True, router_on_input=False,
                       swiglu_limit=None, swiglu_alpha=None, gemm=gemm)
    fc1, fc2 = (launch.compile_ptx(k, (9, 0))[0] for k in keys[1:3])
    assert "ex2.approx" in fc1 and "div.rn.f32" not in fc1
    assert ("st.global.v2.u32" in fc1) == (inter % 4 == 0), inter
    assert ("cvt.rn.bf16x2.f32" in fc1) == (inter % 4 == 0), inter
    direct = block >= 128                               # wgmma's wide loop
    assert ("st.global.v4.u32" in fc2) != direct         # H = 72
    assert ("@p st.global.f32" in fc2) == direct
    for ptx in (fc1,) * (inter % 4 == 0) + (fc2,) * (not direct):
        assert "ld.shared.v4.u32" in ptx


def test_gemm_variant_is_chosen_by_env_once_and_carried_by_the_key(monkeypatch):
    """PYMOE_GEMM is read in one place (env.gemm_variant); the keys carry it."""
    from pymoe import env
    from pymoe.cuda import launch
    from pymoe.cuda.kernels.common import activation_code
    from pymoe.geometry import LaunchKey
    caps = pymoe.Caps(max_tokens=64, top_k=2, num_experts=8, hidden_size=64,
                      intermediate_size=32)
    if launch.SIM:
        assert env.gemm_variant() == "fma"              # the simulator runs no inline PTX
        assert caps.launch_keys("packed", 8)[1].gemm == "fma"
        return
    monkeypatch.delenv("PYMOE_GEMM", raising=False)
    assert env.gemm_variant() == "auto"                  # settled per device and weights
    fc1_key = caps.launch_keys("packed", 8)[1]
    assert fc1_key.gemm == "mma"                         # auto seen from no device
    assert caps.launch_keys("packed", 8, "wgmma")[1].gemm == "wgmma"
    assert activation_code(fc1_key) == "u4[]"
    assert caps.launch_keys("decode", None)[0].gemm == ""      # decode has no block GEMM
    monkeypatch.setenv("PYMOE_GEMM", "fma")
    fma_key = caps.launch_keys("packed", 8)[1]
    assert fma_key.gemm == "fma" and activation_code(fma_key) == "u2[]"
    assert launch.disk_key(fma_key, (9, 0)) != launch.disk_key(fc1_key, (9, 0))
    monkeypatch.setenv("PYMOE_GEMM", "wgmma")
    wg_key = caps.launch_keys("packed", 8)[1]
    assert wg_key.gemm == "wgmma" and activation_code(wg_key) == "u4[]"
    monkeypatch.setenv("PYMOE_GEMM", "hgmma")
    with pytest.raises(ValueError, match="PYMOE_GEMM='hgmma'"):
        caps.launch_keys("packed", 8)
    with pytest.raises(ValueError, match="LaunchKey.gemm=''"):
        launch.compile_ptx(LaunchKey("fc1", format="mxfp4", activation="silu",
                                     dtype="bfloat16", hidden_size=64, intermediate_size=32,
                                     block=8, tile_n=32), (9, 0))
