"""wgmma (Hopper warpgroup MMA, sm_90a) from Numba: the intrinsics of
pymoe/cuda/kernels/wgmma.py against their NumPy layouts (pymoe/ref/wgmma.py).
The layouts are checked on the CPU (every element lands once), the kernel's PTX
with no GPU (sm_90a, wgmma, no local memory, the local ptxas accepts it), and one
m64nNk16 chain on the H200 against NumPy, exactly (small integers: every sum is
exact in fp32)."""
import re

import numpy as np
import pytest

from pymoe.ref import wgmma as lay
from tests.cuda.ptxas import assemble

numba = pytest.importorskip("numba")

KS = 4                                   # k-steps a test kernel chains (K = 64)


def _operands(n, seed):
    rng = np.random.default_rng(seed)
    A = rng.integers(-4, 5, (64, 16 * KS)).astype(np.float32)
    B = rng.integers(-4, 5, (16 * KS, n)).astype(np.float32)
    return A, B


def _emulate(afrag, img, desc_lbo, desc_sbo, n, dtype, off=None):
    """D from the fragments and the image alone, as the PTX ISA reads them
    (off: byte(k, n) of a k-step's image; default the no-swizzle layout of
    desc_lbo / desc_sbo)."""
    def val(bits):
        bits = np.asarray(bits, np.uint32)
        if dtype == "bfloat16":
            return (bits << 16).view(np.float32).astype(np.float64)
        return bits.astype(np.uint16).view(np.float16).astype(np.float64)
    A = np.full((64, 16 * KS), np.nan)
    t = np.arange(128)
    w, g, q = t // 32, (t % 32) // 4, t % 4
    for s in range(KS):
        for r, (dr, dk) in enumerate(((0, 0), (8, 0), (0, 8), (8, 8))):
            A[16 * w + g + dr, 16 * s + 2 * q + dk] = val(afrag[s, :, r] & 0xFFFF)
            A[16 * w + g + dr, 16 * s + 2 * q + dk + 1] = val(afrag[s, :, r] >> 16)
    B = np.full((16 * KS, n), np.nan)
    if off is None:
        kk, nn = np.meshgrid(np.arange(16), np.arange(n), indexing="ij")
        off = (nn // 8) * desc_sbo + (kk // 8) * desc_lbo + (nn % 8) * 16 + (kk % 8) * 2
    for s in range(KS):
        B[16 * s:16 * s + 16] = val(img[s][off // 2])
    D = A @ B
    raw = np.zeros((128, n // 2))
    for i in range(n // 2):
        j, v = divmod(i, 4)
        raw[:, i] = D[16 * w + g + 8 * (v // 2), 8 * j + 2 * q + v % 2]
    return raw


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("n", [8, 64, 256])
def test_layouts_place_every_element_once(dtype, n):
    A, B = _operands(n, n)
    raw = _emulate(lay.a_fragments(A, dtype), lay.b_image(B, dtype), 128, 256, n, dtype)
    np.testing.assert_array_equal(lay.d_unpack(raw, n), A.astype(np.float64) @ B)
    assert lay.descriptor(0x1230, 128, 256) == (0x123 | (8 << 16) | (16 << 32))
    with pytest.raises(ValueError, match="lbo"):
        lay.b_image(B, dtype, lbo=16, sbo=256)                   # cores overlap


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("n", [8, 64, 256])
def test_sw32_image_places_every_element_once(dtype, n):
    """The 32-byte-swizzle image (the cp.async rings' B): every value of a k-step
    once, a route's 16 values in one 32-byte row (halves swapped in rows 4..7 of
    each 8-route group), and the descriptor's fields."""
    A, B = _operands(n, n + 1)
    off = lay.sw32_offsets(n)
    assert len(np.unique(off)) == off.size and off.max() < 32 * n
    assert np.all(off // 32 == np.arange(n)[None, :])              # route n: row n
    assert off[0, 4] == 4 * 32 + 16 and off[8, 4] == 4 * 32         # swapped halves
    img = lay.b_image_sw32(B, dtype)
    raw = _emulate(lay.a_fragments(A, dtype), img, 0, 0, n, dtype, off=off)
    np.testing.assert_array_equal(lay.d_unpack(raw, n), A.astype(np.float64) @ B)
    d = lay.descriptor_sw32(0x1200, 256)
    assert d == (0x120 | (1 << 16) | (16 << 32) | (3 << 62))
    with pytest.raises(ValueError, match="sbo"):
        lay.sw32_offsets(n, 128)


@pytest.mark.parametrize("fmt,dtype", [("mxfp4", "bfloat16"), ("mxfp4", "float16"),
                                       ("nvfp4", "bfloat16"), ("nvfp4", "float16")])
@pytest.mark.parametrize("which,act,k", [("w13", "silu", 64), ("w13", "relu2", 40),
                                         ("w2", "silu", 64)])
def test_v2_tiles_are_wgmma_a_fragments(fmt, dtype, which, act, k):
    """The data path of a block GEMM on weight layout v2 (pymoe/ref/wgmma.py):
    four v2 row tiles decoded lane by lane (decode_pairs, scales folded) are the
    warpgroup's A registers as they are, and activations staged in their natural
    K order (v2 holds each k-step in the fragment's own order, so v2_b_image is
    b_image: two 16-byte core rows a route and k-step, each a contiguous run of
    the route's row) make the chain compute the 64 tiles' rows x X exactly, K tail
    (k = 40) included."""
    n = 16
    words, sw, _, _, W, Xv = _v2_case(fmt, dtype, which, act, k, n, k)
    sb = np.ascontiguousarray(sw).view(np.uint8)
    afrag = lay.v2_a_fragments(words, sb, fmt, dtype)
    raw = _emulate(afrag, lay.v2_b_image(Xv, dtype), 128, 256, n, dtype)
    np.testing.assert_array_equal(lay.d_unpack(raw, n), W @ Xv)
    assert list(lay.v2_k_order(4)) == list(range(64))
    np.testing.assert_array_equal(lay.v2_b_image(Xv, dtype), lay.b_image(Xv, dtype))


def _kernel(n, dtype, lbo, sbo, sw32=False):
    """A chain of KS wgmma on one CTA; ``sw32``: the image in the 32-byte
    swizzle (256-byte aligned, wgmma_desc_sw32), else no swizzle (lbo, sbo)."""
    from numba import cuda, int32, int64, uint32
    from pymoe.cuda.kernels.ptx import smem_u32
    from pymoe.cuda.kernels.wgmma import (fence_proxy_async, make_acc_fill, make_wgmma_rs,
                                          make_wgmma_wait, store_acc, wgmma_commit,
                                          wgmma_desc, wgmma_desc_sw32, wgmma_fence)
    from pymoe.cuda.launch import KernelSpec
    nacc = n // 2
    tile_b = 32 * n                                  # one k-step's image, bytes
    words = KS * tile_b // 4
    smem_words = words + 64                          # + 256 B to align the image
    amask = uint32(0xFFFFFF00 if sw32 else 0xFFFFFF80)
    aadd = uint32(255 if sw32 else 127)

    @cuda.jit(device=True, inline=True)
    def desc(a):
        if sw32:
            return wgmma_desc_sw32(a, sbo)
        return wgmma_desc(a, lbo, sbo)

    fill = make_acc_fill(n)
    mma = make_wgmma_rs(n, dtype)
    wait0 = make_wgmma_wait(0)

    def k(afrag, img, out, scale_d, init):
        sm = cuda.shared.array(smem_words, uint32)
        t = cuda.threadIdx.x
        base = smem_u32(sm)
        sb = (base + aadd) & amask
        o = (sb - base) // uint32(4)
        for i in range(t, words, 128):
            sm[o + i] = img[i]
        fence_proxy_async()
        cuda.syncthreads()
        a = afrag
        a0, a1, a2, a3 = a[4 * t], a[4 * t + 1], a[4 * t + 2], a[4 * t + 3]
        b0, b1, b2, b3 = (a[512 + 4 * t], a[512 + 4 * t + 1], a[512 + 4 * t + 2],
                          a[512 + 4 * t + 3])
        c0, c1, c2, c3 = (a[1024 + 4 * t], a[1024 + 4 * t + 1], a[1024 + 4 * t + 2],
                          a[1024 + 4 * t + 3])
        e0, e1, e2, e3 = (a[1536 + 4 * t], a[1536 + 4 * t + 1], a[1536 + 4 * t + 2],
                          a[1536 + 4 * t + 3])
        acc = fill(init)
        wgmma_fence()
        acc = mma(acc, a0, a1, a2, a3, desc(sb), int32(scale_d))
        acc = mma(acc, b0, b1, b2, b3, desc(sb + uint32(tile_b)), int32(1))
        acc = mma(acc, c0, c1, c2, c3, desc(sb + uint32(2 * tile_b)), int32(1))
        acc = mma(acc, e0, e1, e2, e3, desc(sb + uint32(3 * tile_b)), int32(1))
        wgmma_commit()
        wait0()
        store_acc(out, int64(t) * nacc, acc)

    return KernelSpec(k, ("u4[]", "u4[]", "f4[]", "i8", "f4"), 128, arch_specific=True)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("n,sw32", [(64, False), (256, False), (64, True)])
def test_wgmma_kernel_ptx(dtype, n, sw32):
    """sm_90a PTX with 4 wgmma.mma_async, no local memory; the local ptxas (when
    there is one) assembles it without a stack frame.  The 32-byte-swizzle
    descriptor carries layout 3 (bits 62-63) and lbo 1."""
    from pymoe.cuda import launch
    ptx = launch._compile(_kernel(n, dtype, 128, 256, sw32=sw32), (9, 0))
    if sw32:                     # the fixed fields, folded with the constant sbo
        fixed = lay.descriptor_sw32(0, 256) - (1 << 64)          # as PTX's signed b64
        assert ptx.count("or.b64  \t%rd") >= KS and ptx.count(f", {fixed};") == KS
    ab = "bf16" if dtype == "bfloat16" else "f16"
    assert ".target sm_90a" in ptx
    assert ptx.count(f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ab}.{ab}") == KS
    assert "wgmma.fence.sync.aligned" in ptx and "wgmma.wait_group.sync.aligned 0" in ptx
    assert ".local" not in ptx
    rep = assemble(ptx, arch="sm_90a")
    if rep is not None:
        assert "0 bytes stack frame" in rep, rep
        assert "serializ" not in rep.lower(), rep                # ptxas kept them async


def _mbar_kernel():
    """A producer / consumer pair of warpgroups on one mbarrier slot, the shape
    the warp-specialized GEMM uses: warpgroup 1 copies by cp.async and arrives
    through cp.async.mbarrier.arrive.noinc, warpgroup 0 waits on the phase and
    arrives back; setmaxnreg moves registers between them."""
    from numba import cuda, int64, uint32
    from pymoe.cuda.kernels.ptx import cp_async16_g, gaddr, lds1, smem_u32
    from pymoe.cuda.kernels.wgmma import (cp_mbar_arrive, fence_mbar_init, make_setmaxnreg,
                                          mbar_arrive, mbar_init, mbar_try_wait)
    from pymoe.cuda.launch import KernelSpec
    dec, inc = make_setmaxnreg(False, 40), make_setmaxnreg(True, 232)

    def k(src, out):
        t = cuda.threadIdx.x
        bar = cuda.shared.array(2, int64)               # full, empty
        buf = cuda.shared.array(512, uint32)
        full = smem_u32(bar)
        if t == 0:
            mbar_init(full, 128)
            mbar_init(full + uint32(8), 128)
            fence_mbar_init()
        cuda.syncthreads()
        if t >= 128:
            dec()
            p = t - 128
            cp_async16_g(smem_u32(buf) + uint32(16 * p), gaddr(src, 4 * p))
            cp_mbar_arrive(full)
        else:
            inc()
            while mbar_try_wait(full, uint32(0)) == uint32(0):
                pass
            out[t] = lds1(smem_u32(buf) + uint32(4 * t))
            mbar_arrive(full + uint32(8))

    return KernelSpec(k, ("u4[]", "u4[]"), 256, arch_specific=True, max_regs=128)


def test_mbarrier_and_setmaxnreg_intrinsics_ptx():
    """kernels/wgmma.py's mbarrier and setmaxnreg intrinsics emit their PTX for
    sm_90a, and the local ptxas (when there is one) assembles the pair."""
    from pymoe.cuda import launch
    ptx = launch._compile(_mbar_kernel(), (9, 0))
    for text in ("mbarrier.init.shared::cta.b64", "fence.mbarrier_init.release.cluster",
                 "cp.async.mbarrier.arrive.noinc.shared::cta.b64",
                 "mbarrier.try_wait.parity.shared::cta.b64", "mbarrier.arrive.shared::cta.b64",
                 "setmaxnreg.dec.sync.aligned.u32 40", "setmaxnreg.inc.sync.aligned.u32 232"):
        assert text in ptx, text
    rep = assemble(ptx, arch="sm_90a")
    if rep is not None:
        assert "0 bytes stack frame" in rep, rep
    from pymoe.cuda.kernels.wgmma import make_setmaxnreg
    with pytest.raises(ValueError, match="setmaxnreg: n=36"):
        make_setmaxnreg(True, 36)


def test_sm90a_kernels_refuse_other_devices():
    from pymoe.cuda import launch
    with pytest.raises(ValueError, match="compute capability 9.0 only"):
        launch._compile(_kernel(64, "bfloat16", 128, 256), (8, 0))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("n", [64, 128, 256])
@pytest.mark.parametrize("scale_d", [0, 1])
def test_wgmma_matches_numpy(dtype, n, scale_d):
    """D = A @ B (+ init when scale_d) exactly, through pymoe's launch path, with
    NaN-poisoned output."""
    import cupy as cp
    from pymoe.cuda.launch import load_spec
    A, B = _operands(n, 7 * n + scale_d)
    afrag = lay.a_fragments(A, dtype)
    img = lay.b_image(B, dtype)
    out = cp.full(128 * (n // 2), np.nan, cp.float32)
    init = np.float32(3.0)
    load_spec(_kernel(n, dtype, 128, 256)).launch(
        (1,), (cp.asarray(afrag.ravel()), cp.asarray(img.view(np.uint32).ravel()), out,
               np.int64(scale_d), init))
    got = lay.d_unpack(out.get().reshape(128, n // 2), n)
    want = A.astype(np.float64) @ B + (float(init) if scale_d else 0.0)
    np.testing.assert_array_equal(got, want)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("n", [8, 64, 256])
def test_wgmma_sw32_matches_numpy(dtype, n):
    """The 32-byte-swizzle image (lay.b_image_sw32) read through wgmma_desc_sw32:
    D = A @ B exactly, NaN-poisoned output."""
    import cupy as cp
    from pymoe.cuda.launch import load_spec
    A, B = _operands(n, 5 * n + 3)
    afrag = lay.a_fragments(A, dtype)
    img = lay.b_image_sw32(B, dtype)
    out = cp.full(128 * (n // 2), np.nan, cp.float32)
    load_spec(_kernel(n, dtype, 0, 256, sw32=True)).launch(
        (1,), (cp.asarray(afrag.ravel()), cp.asarray(img.view(np.uint32).ravel()), out,
               np.int64(0), np.float32(0.0)))
    got = lay.d_unpack(out.get().reshape(128, n // 2), n)
    np.testing.assert_array_equal(got, A.astype(np.float64) @ B)


# ---- the v2 data path on the GPU: one CTA, four v2 row tiles (one a warp) read
# with one 16-byte load a lane and k-tile, decoded by the decode kernels' decoder,
# the scale folded by two packed multiplies (the decoder's 2^126 / 2^14, then the
# scale pair), activations staged as two 16-byte core rows a route and k-step
# (pymoe/ref/wgmma.py v2_b_image), 4 wgmma a k-tile.  The building block of a
# block GEMM on layout v2 (docs/performance.md, Speed II step 4).

def _v2_kernel(n, dtype, fmt, kt):
    from numba import cuda, float32, int32, int64, uint32
    from pymoe.cuda.kernels.common import make_decoder
    from pymoe.cuda.kernels.ptx import ld_nc1, ld_nc4, mul2_bf16, mul2_f16, smem_u32, sts4
    from pymoe.cuda.kernels.wgmma import (fence_proxy_async, make_acc_fill, make_wgmma_rs,
                                          make_wgmma_wait, store_acc, wgmma_commit,
                                          wgmma_desc, wgmma_fence)
    from pymoe.cuda.launch import KernelSpec
    nacc = n // 2
    step_b = 32 * n                                  # one k-step's B image, bytes
    smem_words = kt * 4 * step_b // 4 + 32         # + 128 B to align the image
    decode = make_decoder(dtype)
    mul2 = mul2_bf16 if dtype == "bfloat16" else mul2_f16
    bias16 = uint32(0x7E807E80 if dtype == "bfloat16" else 0x74007400)
    fill = make_acc_fill(n)
    mma = make_wgmma_rs(n, dtype)
    wait0 = make_wgmma_wait(0)
    nv = fmt == "nvfp4"
    sw = 16 if nv else 8                             # scale words a tile
    kw = kt * 32                                     # activation words a route

    def k(words, swords, s2g, x, out):
        sm = cuda.shared.array(smem_words, uint32)
        s2 = cuda.shared.array(256, uint32)
        t = cuda.threadIdx.x
        warp = t // 32
        lane = t % 32
        g = lane // 4
        for i in range(t, 256, 128):
            s2[i] = s2g[i]
        base = smem_u32(sm)
        sb = (base + uint32(127)) & uint32(0xFFFFFF80)
        # stage B: task (route m, k-tile c, k-step s) = 8 words x0..x7 -> two rows,
        # in their natural K order (layout v2 keeps the fragment's own)
        for task in range(t, n * kt * 4, 128):
            m = task // (kt * 4)
            cs = task % (kt * 4)
            src = m * kw + cs * 8
            x0, x1, x2, x3 = ld_nc4(x, src)
            x4, x5, x6, x7 = ld_nc4(x, src + 4)
            row = sb + uint32(cs * step_b + (m // 8) * 256 + (m % 8) * 16)
            sts4(row, x0, x1, x2, x3)
            sts4(row + uint32(128), x4, x5, x6, x7)
        fence_proxy_async()
        cuda.syncthreads()
        acc = fill(float32(0.0))
        for c in range(kt):
            w0, w1, w2, w3 = ld_nc4(words, ((warp * kt + c) * 32 + lane) * 4)
            if nv:
                sa = ld_nc1(swords, (warp * kt + c) * sw + 2 * g)      # row g: 4 groups
                sc = ld_nc1(swords, (warp * kt + c) * sw + 2 * g + 1)  # row g + 8
            else:
                sa = ld_nc1(swords, (warp * kt + c) * sw + g)          # (g, grp), (g+8, grp)
                sc = sa >> uint32(16)
            for st in range(4):
                ww = w0 if st == 0 else w1 if st == 1 else w2 if st == 2 else w3
                if nv:
                    fg = s2[(sa >> uint32(8 * st)) & uint32(255)]
                    fu = s2[(sc >> uint32(8 * st)) & uint32(255)]
                else:
                    fg = s2[(sa >> uint32(8 * (st // 2))) & uint32(255)]
                    fu = s2[(sc >> uint32(8 * (st // 2))) & uint32(255)]
                d0, d1, d2, d3 = decode(ww)
                a0 = mul2(mul2(d0, bias16), fg)
                a1 = mul2(mul2(d1, bias16), fu)
                a2 = mul2(mul2(d2, bias16), fg)
                a3 = mul2(mul2(d3, bias16), fu)
                wgmma_fence()
                acc = mma(acc, a0, a1, a2, a3,
                          wgmma_desc(sb + uint32((4 * c + st) * step_b), 128, 256), int32(1))
                wgmma_commit()
                wait0()                               # the A registers are written next
        store_acc(out, int64(t) * nacc, acc)

    return KernelSpec(k, ("u4[]", "u4[]", "u4[]", "u4[]", "f4[]"), 128, arch_specific=True)


def _v2_case(fmt, dtype, which, act, k, n, seed):
    """(words [4, KT, 32, 4], scale words, s2 table, x words [n, KT * 32], W, Xv)."""
    from pymoe import formats
    from pymoe.geometry import scale_group
    from pymoe.ref import layout
    rng = np.random.default_rng(seed)
    inter = (32 if act != "relu2" else 64) if which == "w13" else 48   # >= 64 rows
    n_rows = (2 * inter if act != "relu2" else inter) if which == "w13" else 64
    grp = scale_group(fmt)
    kp = -(-k // grp) * grp
    codes = rng.integers(0, 16, (1, n_rows, kp), dtype=np.uint8)
    codes[:, :, k:] = 0
    w = formats.pack_fp4(codes)
    if fmt == "mxfp4":                                  # bytes whose fold is exact
        lo, hi = (112, 140) if dtype == "bfloat16" else (118, 134)
        sc = rng.integers(lo, hi + 1, (1, n_rows, kp // grp), dtype=np.uint8)
    else:                                               # E4M3 0.125 .. 4, no NaN
        sc = rng.integers(0x20, 0x48, (1, n_rows, kp // grp), dtype=np.uint8)
    words, sb = layout.pack(w, sc, fmt=fmt, which=which, activation=act, k_dim=k,
                            intermediate_size=inter)
    rows = layout.tile_rows(which, act, n_rows, inter)
    assert rows.shape[0] >= 4
    rows = rows[:4].reshape(-1)                          # the CTA's 64 weight rows
    dec = formats.decode_e8m0 if fmt == "mxfp4" else formats.decode_e4m3
    wf = (formats.decode_fp4(codes[0]).astype(np.float64)
          * np.repeat(dec(sc[0]).astype(np.float64), grp, axis=1))
    kt = words.shape[2]
    W = np.zeros((64, 64 * kt))
    W[rows >= 0, :kp] = wf[rows[rows >= 0]]
    xs = rng.standard_normal((64 * kt, n)).astype(np.float32)
    xs[k:] = 0
    X = lay.bits16(xs, dtype)                            # activations on the dtype's grid
    Xv = ((X.astype(np.uint32) << 16).view(np.float32) if dtype == "bfloat16"
          else X.view(np.float16)).astype(np.float64)
    b = np.arange(256, dtype=np.uint8)
    vals = (formats.decode_e8m0(b) if fmt == "mxfp4" else formats.decode_e4m3(b))
    vals = np.where(np.isfinite(vals), vals, 0).astype(np.float32)
    if dtype == "float16":                               # out-of-range bytes are unused
        vals = np.clip(vals, 0, 65504)
    h = lay.bits16(vals, dtype).astype(np.uint32)
    s2 = h | (h << 16)
    xw = np.ascontiguousarray(X.T).view(np.uint32)       # [n, K / 2] words
    return (words[0, :4], sb[0, :4].view(np.uint32), s2, xw, W, Xv)


@pytest.mark.parametrize("fmt,dtype", [("mxfp4", "bfloat16"), ("nvfp4", "float16")])
def test_v2_chain_kernel_ptx(fmt, dtype):
    """The v2 chain compiles for sm_90a: 4 wgmma a k-tile, 16-byte global loads
    for the weights and 16-byte shared stores for B, no local memory."""
    from pymoe.cuda import launch
    ptx = launch._compile(_v2_kernel(64, dtype, fmt, 2), (9, 0))
    assert ".target sm_90a" in ptx and ".local" not in ptx
    assert "ld.global.nc.v4.u32" in ptx and "st.shared.v4.u32" in ptx
    assert "wgmma.mma_async.sync.aligned.m64n64k16" in ptx
    rep = assemble(ptx, arch="sm_90a")
    if rep is not None:
        assert "0 bytes stack frame" in rep, rep


@pytest.mark.gpu
@pytest.mark.parametrize("fmt,dtype", [("mxfp4", "bfloat16"), ("mxfp4", "float16"),
                                       ("nvfp4", "bfloat16"), ("nvfp4", "float16")])
@pytest.mark.parametrize("which,act,k,n", [("w13", "silu", 128, 64), ("w13", "relu2", 104, 16),
                                           ("w2", "silu", 64, 128)])
def test_v2_chain_kernel_matches_numpy(fmt, dtype, which, act, k, n):
    """The v2 data path on the H200 equals W @ X up to fp32 accumulation (NaN-
    poisoned output): within K * 2^-23 * (|W| @ |X|) of the float64 product, far
    below what a misplaced weight, activation or scale would give."""
    import cupy as cp
    from pymoe.cuda.launch import load_spec
    words, sw, s2, xw, W, Xv = _v2_case(fmt, dtype, which, act, k, n, k + n)
    kt = words.shape[1]
    out = cp.full(128 * (n // 2), np.nan, cp.float32)
    load_spec(_v2_kernel(n, dtype, fmt, kt)).launch(
        (1,), tuple(cp.asarray(np.ascontiguousarray(a).ravel())
                    for a in (words, sw, s2, xw)) + (out,))
    got = lay.d_unpack(out.get().reshape(128, n // 2), n)
    assert not np.isnan(got).any()
    bound = W.shape[1] * 2.0 ** -23 * (np.abs(W) @ np.abs(Xv))
    err = np.abs(got - W @ Xv)
    assert (err <= bound).all(), float((err / np.maximum(bound, 1e-300)).max())


# ---- the block GEMM on wgmma (PYMOE_GEMM=wgmma; kernels/gemm_wgmma_v2.py)

@pytest.mark.parametrize("fmt,dtype,block", [("mxfp4", "bfloat16", 64), ("nvfp4", "float16", 8),
                                             ("mxfp4", "float16", 32), ("nvfp4", "bfloat16", 128),
                                             ("mxfp4", "bfloat16", 16), ("mxfp4", "float16", 16),
                                             ("mxfp4", "float16", 144)])
def test_wgmma_block_gemm_ptx(fmt, dtype, block):
    """fc1 / fc2 with gemm='wgmma': sm_90a, m64nBk16 in fours (four a 64-K v2 k-tile and
    m-tile; 16-byte cp.async for weights and activations, its ring's slots - 3
    groups pending; 16-byte B stores where the router weight scales fc1's
    input), the async-proxy
    fence and a barrier a k-tile, no local memory; blocks of 128 (the wide loop)
    with the n64 fallback on padded halves and wait_group 1 between the m-tiles;
    the local ptxas keeps the wgmma asynchronous (no serialization warning) with no
    stack frame or spills (fc1 takes the router weight on its input here: at
    blocks of 16 / 32 it needs geometry.WGMMA_V2_ROI_MIN_REGS not to serialize);
    scales made in registers but bf16 NVFP4's."""
    from pymoe import geometry as geo
    from pymoe.cuda import launch
    from pymoe.cuda.kernels.gemm_wgmma_v2 import ring_slots
    if launch.SIM:
        pytest.skip("the simulator replaces the compiler")
    keys = geo.launch_keys("packed", block, format=fmt, activation="swigluoai", dtype=dtype,
                           hidden_size=72, intermediate_size=40, has_bias=True,
                           router_on_input=True, swiglu_limit=7.0, swiglu_alpha=1.702,
                           gemm="wgmma")
    ab = "bf16" if dtype == "bfloat16" else "f16"
    for key in keys[1:3]:
        ptx, _ = launch.compile_ptx(key, (9, 0))
        assert ".target sm_90a" in ptx
        n = ptx.count(f"wgmma.mma_async.sync.aligned.m64n{block}k16.f32.{ab}.{ab}")
        assert geo.gemm_reads_v2("wgmma", block)
        assert n >= 4 and n % 4 == 0, n                  # a k-tile (LLVM may peel)
        assert "fence.proxy.async.shared::cta" in ptx and "bar.sync" in ptx
        assert "wgmma.wait_group.sync.aligned 0" in ptx
        if geo.gemm_m_tiles("wgmma", block) > geo.gemm_warpgroups("wgmma", block):
            assert "wgmma.wait_group.sync.aligned 1" in ptx     # the wide loop, and
            n64 = ptx.count(f"m64n64k16.f32.{ab}.{ab}")          # its padded halves
            assert n64 >= 4 and n64 % 4 == 0, n64
        assert "st.shared.v4.u32" in ptx
        assert ".local" not in ptx
        # MXFP4 makes its E8M0 scale pairs in registers (e8m0_rows / f16_rows, a
        # clamp each; fp16's inf -> NaN by fma), fp16 NVFP4 by cvt (e4m3_rows),
        # each pair rows g and g + 8 taken by half (operand selectors); only bf16
        # NVFP4 reads the shared scale table, a pair a row
        assert ("min.u16x2" in ptx) == (fmt == "mxfp4"), key
        table = fmt == "nvfp4" and dtype == "bfloat16"
        assert ("mov.b32 t, {h, h}" in ptx) == (not table), key
        assert ("mov.b32 t, {l, l}" in ptx) == (not table), key
        assert ("cvt.rn.f16x2.e4m3x2" in ptx) == (fmt == "nvfp4" and dtype == "float16"), key
        assert ("fma.rn.f16x2" in ptx) == (fmt == "mxfp4" and dtype == "float16"), key
        # weights by 16-byte cp.async, and the activations too (zero-filled) unless
        # scaled (the router weight on fc1's input)
        assert "cp.async.cg.shared.global" in ptx
        assert f"cp.async.wait_group {ring_slots(block) - 3}" in ptx
        zfill = re.search(r"cp\.async\.cg\.shared\.global \[%r\d+\], \[%rd\d+\], 16, %r", ptx)
        assert (zfill is None) == (key.kernel == "fc1"), key
        rep = assemble(ptx, arch="sm_90a")
        if rep is not None:
            assert "0 bytes stack frame, 0 bytes spill" in rep, rep
            assert "serializ" not in rep.lower(), rep
        with pytest.raises(ValueError, match="compute capability 9.0 only"):
            launch.compile_ptx(key, (8, 9))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_wgmma_fold_range_is_where_every_product_is_exact(dtype):
    """geometry.WGMMA_FOLD_BYTES against ml_dtypes (an independent oracle): an
    E8M0 byte folds exactly iff every E2M1 value times 2^(byte - 127) survives
    the round trip through the dtype, and for bf16 also the v2 GEMM's one
    multiply: the decoder's FP4 x 2^-126 (a bf16 value) times the table's
    2^(byte - 9), rounded once to bf16, is FP4 x 2^(byte - 135) exactly, with
    a finite table value."""
    ml = pytest.importorskip("ml_dtypes")
    from pymoe import geometry as geo
    np_dt = ml.bfloat16 if dtype == "bfloat16" else np.float16
    e2m1 = np.arange(16, dtype=np.uint8).view(ml.float4_e2m1fn).astype(np.float64)

    def exact(v, want):
        with np.errstate(over="ignore"):
            return np.array_equal(np.asarray(v).astype(np_dt).astype(np.float64), want)

    def v2_fold(byte):
        if dtype != "bfloat16":       # FP4 x 2^-14 times 2^(byte - 113), a normal fp16
            d = (e2m1 * 2.0 ** -14).astype(np_dt).astype(np.float64)
            t = 2.0 ** (byte - 113)
            return (exact([t], [t]) and t >= 2.0 ** -14
                    and exact(d * t, e2m1 * 2.0 ** (byte - 127)))
        d = (e2m1 * 2.0 ** -126).astype(np_dt).astype(np.float64)
        t = 2.0 ** (byte - 9)
        return exact([t], [t]) and exact(d * t, e2m1 * 2.0 ** (byte - 135))
    ok = [byte for byte in range(255)
          if exact(e2m1 * 2.0 ** (byte - 127), e2m1 * 2.0 ** (byte - 127)) and v2_fold(byte)]
    lo, hi = geo.WGMMA_FOLD_BYTES[dtype]
    assert ok == list(range(lo, hi + 1))
    assert geo.wgmma_scale_fold_ok("mxfp4", dtype, lo, hi)
    assert not geo.wgmma_scale_fold_ok("mxfp4", dtype, lo - 1, hi) if lo else True
    assert not geo.wgmma_scale_fold_ok("mxfp4", dtype, lo, hi + 1)
    assert geo.wgmma_scale_fold_ok("nvfp4", dtype, 0, 254)


def test_wgmma_gemm_refuses_scales_it_cannot_fold():
    """Weights' scale bytes are recorded at upload (255 = NaN excluded); the
    fc1 / fc2 launch path raises, naming the range and the way out, before any
    launch when the wgmma GEMM's folding would not be exact."""
    from types import SimpleNamespace
    from pymoe import geometry as geo
    from pymoe.cuda.device_weights import _scale_bytes, check_gemm_scales
    ew = SimpleNamespace(w13_scales=np.array([[120, 255]], np.uint8),
                         w2_scales=np.array([[129, 127]], np.uint8))
    assert _scale_bytes(ew) == (120, 129)
    key = geo.launch_keys("packed", 8, format="mxfp4", activation="silu", dtype="float16",
                          hidden_size=64, intermediate_size=32, has_bias=False,
                          router_on_input=False, swiglu_limit=None, swiglu_alpha=None,
                          gemm="wgmma")[1]
    with pytest.raises(ValueError, match=r"PYMOE_GEMM=wgmma .* bytes 104\.\.128 .* span "
                                         r"120\.\.129.*PYMOE_GEMM=mma"):
        check_gemm_scales(SimpleNamespace(scale_bytes=(120, 129)), key)
    check_gemm_scales(SimpleNamespace(scale_bytes=(104, 128)), key)
    from dataclasses import replace
    check_gemm_scales(SimpleNamespace(scale_bytes=(120, 136)), replace(key, dtype="bfloat16"))
    with pytest.raises(ValueError, match=r"bytes 3\.\.136 .* span 120\.\.141"):
        check_gemm_scales(SimpleNamespace(scale_bytes=(120, 141)), replace(key, dtype="bfloat16"))
    check_gemm_scales(SimpleNamespace(scale_bytes=(0, 254)), replace(key, gemm="mma"))


@pytest.mark.gpu
@pytest.mark.parametrize("case", [
    "201-256-144-8-2-bfloat16-mxfp4-silu-gate_up",
    "101-2048-768-16-8-bfloat16-mxfp4-silu-gate_up",
    "65-256-144-8-2-float16-nvfp4-relu2-gate_up",
    "100-272-80-6-3-float16-mxfp4-swigluoai-interleaved",
    "129-512-224-128-8-bfloat16-nvfp4-silu-up_gate",
    "180-704-208-8-2-bfloat16-nvfp4-swigluoai-up_gate",     # blocks of 64, NVFP4: K of
    "180-640-336-8-2-float16-nvfp4-relu2-gate_up",          # 11 / 4 and 10 / 6 k-tiles
    "140-272-80-8-2-float16-nvfp4-swigluoai-interleaved",   # blocks of 48 (n48 wgmma),
    "150-704-208-8-2-bfloat16-mxfp4-silu-up_gate",          # K tails; and on mma (CTAs
    "140-272-80-8-2-bfloat16-mxfp4-relu2-gate_up-mma",      # of 48 routes)
])
def test_wgmma_block_gemm_matches_reference(case, monkeypatch):
    """PYMOE_GEMM=wgmma (or the case's GEMM) end to end against the reference
    (NaN-poisoned scratch and output, every buffer; tests/cuda/diff.py), blocks of
    8-64 routes (asserted), both formats and dtypes, K tails (H = 272, I = 80 are
    not multiples of 32)."""
    from pymoe import geometry as geo
    from tests.cuda.diff import check_case
    from tests.problems import Case
    t, h, i, e, k, dt, fmt, act, lay, *gemm = case.split("-")
    monkeypatch.setenv("PYMOE_GEMM", gemm[0] if gemm else "wgmma")
    assert geo.select_block_size(int(t), int(k), int(e)) <= 64
    check_case(Case(int(t), int(h), int(i), int(e), int(k), dtype=dt, format=fmt,
                    activation=act, layout=lay, bias=True, seed=int(t)), device=True)


@pytest.mark.gpu
@pytest.mark.parametrize("case", [
    "420-256-144-8-2-bfloat16-mxfp4-silu-gate_up-wgmma",
    "200-2048-768-16-8-bfloat16-mxfp4-silu-gate_up-wgmma",
    "220-272-80-6-3-float16-mxfp4-swigluoai-interleaved-wgmma",
    "220-512-224-8-4-bfloat16-nvfp4-silu-up_gate-wgmma",
    "210-256-144-4-2-float16-nvfp4-relu2-gate_up-wgmma",
    "420-256-144-8-2-bfloat16-mxfp4-silu-gate_up-mma",
    "220-272-80-6-3-float16-nvfp4-swigluoai-interleaved-mma",
])
def test_block_gemm_b128_matches_reference(case, monkeypatch):
    """Blocks of 128 routes, the automatic B from a mean of 57 to 120 routes an
    expert (asserted): on wgmma the wide loop (two m64 x n128 accumulators a
    warpgroup, the cp.async ring in the epilogue's tile), on mma CTAs of
    64-route sub-blocks (a padding-only one exits; T = 420 on 8 experts leaves
    some)."""
    from pymoe import geometry as geo
    from tests.cuda.diff import check_case
    from tests.problems import Case
    t, h, i, e, k, dt, fmt, act, lay, gemm = case.split("-")
    monkeypatch.setenv("PYMOE_GEMM", gemm)
    assert geo.select_block_size(int(t), int(k), int(e)) == 128
    check_case(Case(int(t), int(h), int(i), int(e), int(k), dtype=dt, format=fmt,
                    activation=act, layout=lay, bias=True, seed=int(t)), device=True)


@pytest.mark.gpu
@pytest.mark.parametrize("case", [
    "440-256-144-8-2-bfloat16-mxfp4-silu-gate_up-wgmma",
    "560-272-80-8-2-float16-nvfp4-relu2-gate_up-wgmma",
    "520-512-224-4-1-bfloat16-mxfp4-swigluoai-interleaved-wgmma",
    "440-256-144-8-2-bfloat16-mxfp4-silu-gate_up-mma",
    "460-272-80-8-2-float16-mxfp4-silu-gate_up-wgmma-on_input",
])
def test_block_gemm_b144_matches_reference(case, monkeypatch):
    """Blocks of 144 routes (BLOCK_MAX_MEAN patched to 128 up to a mean of 100, so
    the mean of 110 takes 144 too; asserted): on wgmma the wide loop at n144
    (routes 128..143 copied a 16-byte chunk a thread by warpgroup 1, or, with
    the router weight on the input, staged through registers by threads below
    64; the n64 copy on blocks whose routes 64.. are padding), K tails at 272 /
    80; on mma CTAs of 48-route sub-blocks."""
    from pymoe import geometry as geo
    from tests.cuda.diff import check_case
    from tests.problems import Case
    t, h, i, e, k, dt, fmt, act, lay, gemm, *on_input = case.split("-")
    monkeypatch.setenv("PYMOE_GEMM", gemm)
    monkeypatch.setattr(geo, "BLOCK_MAX_MEAN", {**geo.BLOCK_MAX_MEAN, 128: 100, 144: None})
    assert geo.select_block_size(int(t), int(k), int(e)) == 144
    check_case(Case(int(t), int(h), int(i), int(e), int(k), dtype=dt, format=fmt,
                    activation=act, layout=lay, bias=True, seed=int(t),
                    on_input=bool(on_input)), device=True)


@pytest.mark.gpu
@pytest.mark.parametrize("t, blk", [(150, 48), (180, 64), (460, 144)])
def test_block_gemm_x_not_16_byte_aligned_gives_the_same_bits(t, blk, monkeypatch):
    """x 4-byte but not 16-byte aligned: fc1 stages every route through registers
    (4-byte loads) in the chunks cp.async copies otherwise (the ring loop's two
    a thread at 48 / 64, blocks of 144's routes 128..143 a chunk a thread), and
    gives the aligned run's bits; a K tail (H = 272)."""
    import cupy as cp
    import pymoe
    from pymoe import geometry as geo
    from tests.cuda.diff import x_4_not_16
    from tests.problems import Case, make_problem
    monkeypatch.setenv("PYMOE_GEMM", "wgmma")
    if blk == 144:
        monkeypatch.setattr(geo, "BLOCK_MAX_MEAN", {**geo.BLOCK_MAX_MEAN, 128: 100, 144: None})
    h, i, e, k = 272, 80, 8, 2
    assert geo.select_block_size(t, k, e) == blk
    prob = make_problem(Case(t, h, i, e, k, seed=11))
    plan = pymoe.plan(pymoe.Caps.for_weights(prob.experts, max_tokens=t, top_k=k))
    kw = dict(scratch=pymoe.cuda.allocate_scratch(plan),
              experts=pymoe.cuda.to_device(prob.experts),
              topk_weights=cp.asarray(prob.topk_weights), topk_ids=cp.asarray(prob.topk_ids))
    aligned = cp.asarray(prob.x.view(np.uint16))
    assert aligned.data.ptr % 16 == 0
    y = pymoe.run(plan.bind(x=aligned, **kw)).get()
    bits = y.view(np.uint16)                 # bf16 (x went in as its 16-bit words)
    assert ((bits & 0x7FFF) < 0x7F80).all() and (bits & 0x7FFF).any()   # no NaN, not 0
    np.testing.assert_array_equal(pymoe.run(plan.bind(x=x_4_not_16(aligned), **kw)).get(), y)


@pytest.mark.gpu
@pytest.mark.parametrize("case", ["400-512-224-128-8-32-bfloat16", "201-256-144-8-2-64-bfloat16",
                                  "150-512-224-8-2-48-float16",     # ring at 48
                                  "420-256-144-8-2-128-bfloat16",   # ring at 32 / 64, wide
                                  "400-512-224-128-8-32-float16", "420-256-144-8-2-128-float16"])
def test_wgmma_nan_scale_stays_nan(case, monkeypatch):
    """E8M0 bytes 255 (NaN; the fold's range check leaves them out) in w13: the wgmma
    GEMM, whose MXFP4 scales are made in registers (e8m0_rows; fp16's f16_rows
    clamps 255 to +inf and turns it into NaN), gives NaN in fc1's intermediate
    exactly where the reference does, and matches it elsewhere (blocks of 32, 48,
    64 and 128 routes: both main loops)."""
    from pymoe import geometry as geo
    from pymoe.testing import assert_close
    from tests.cuda.diff import run_problem, to_f32
    from tests.problems import Case, make_problem
    *dims, dtype = case.split("-")
    t, h, i, e, k, blk = (int(v) for v in dims)
    monkeypatch.setenv("PYMOE_GEMM", "wgmma")
    p = make_problem(Case(t, h, i, e, k, dtype=dtype, format="mxfp4",
                          activation="silu", layout="gate_up", bias=True, seed=t))
    assert geo.select_block_size(t, k, e) == blk
    p.experts.w13_scales[1, 3, 2] = 255                  # expert 1, gate row 3, K 64..95
    p.experts.w13_scales[1, i + 5, 1] = 255              # and up row 5, K 32..63: the
    #   gate and up rows of a column share a scale pair (e8m0_rows / f16_rows: its halves)
    _, b, ref, runs = run_problem(p, device=True)
    assert b.regime == "packed" and {key.gemm for key in b.keys[1:3]} == {"wgmma"}
    got = to_f32(runs[0]["intermediate"], dtype)
    want = to_f32(ref["intermediate"], dtype)
    nan = np.isnan(want)
    assert nan.any() and not nan.all()
    np.testing.assert_array_equal(np.isnan(got), nan)
    assert_close(got[~nan], want[~nan], dtype=dtype, what="intermediate")


@pytest.mark.gpu
@pytest.mark.parametrize("case", ["65-256-144-8-2", "700-256-144-4-2"])   # ring, wide
def test_wgmma_fp16_nvfp4_scales_over_every_e4m3_code(case, monkeypatch):
    """fp16 NVFP4 makes its scale pairs by cvt (e4m3_rows: rows g and g + 8 in
    one pair, each multiply taking its half): w13's and w2's scale
    bytes redrawn over every finite E4M3 code (zero, the subnormals 0x01..0x07,
    the negatives, up to 448), the wgmma GEMM (blocks of 8 .. 64 and the wide
    loop's 144) still matches the reference on every buffer."""
    from pymoe import geometry as geo
    from tests.cuda.diff import check_problem
    from tests.problems import Case, make_problem
    t, h, i, e, k = (int(v) for v in case.split("-"))
    monkeypatch.setenv("PYMOE_GEMM", "wgmma")
    p = make_problem(Case(t, h, i, e, k, dtype="float16", format="nvfp4",
                          activation="relu2", layout="gate_up", bias=True, seed=t))
    rng = np.random.default_rng(t)
    finite = np.setdiff1d(np.arange(256), [0x7F, 0xFF]).astype(np.uint8)
    for s in (p.experts.w13_scales, p.experts.w2_scales):
        s[...] = rng.choice(finite, s.shape)
        s.reshape(-1)[:finite.size] = finite                 # every code at least once
    assert (geo.select_block_size(t, k, e) >= 128) == (t == 700)      # 144 there
    check_problem(p, device=True)


@pytest.mark.gpu
def test_auto_gemm_takes_wgmma_on_sm90_and_mma_where_scales_do_not_fold(monkeypatch):
    """PYMOE_GEMM unset (auto): on the H200 bind picks wgmma for the packed
    GEMMs; fp16 weights with one MXFP4 scale byte below the fold range (100 <
    104) get mma instead, and both match the reference.  prewarm without the
    weights resolves both GEMMs' keys, with them only the one bind picks."""
    import cupy as cp
    import pymoe
    from pymoe.plan import device_cc
    from tests.cuda.diff import check_problem
    from tests.problems import Case, make_problem
    monkeypatch.delenv("PYMOE_GEMM", raising=False)
    if device_cc(cp.zeros(1)) != (9, 0):
        pytest.skip("auto picks wgmma on sm_90 only")
    for low in (False, True):
        p = make_problem(Case(200, 256, 144, 8, 2, dtype="float16", format="mxfp4",
                              activation="silu", layout="gate_up", bias=True, seed=7))
        if low:
            p.experts.w13_scales[0, 0, 0] = 100
        ew = pymoe.cuda.to_device(p.experts)
        assert (ew.scale_bytes[0] == 100) == low
        caps = pymoe.Caps.for_weights(p.experts, max_tokens=200, top_k=2, dtype="float16")
        plan = pymoe.plan(caps)
        b = plan.bind(scratch=pymoe.cuda.allocate_scratch(plan), x=cp.asarray(p.x),
                      experts=ew, topk_weights=cp.asarray(p.topk_weights),
                      topk_ids=cp.asarray(p.topk_ids))
        want = "mma" if low else "wgmma"
        assert b.regime == "packed" and {k.gemm for k in b.keys[1:3]} == {want}
        both = pymoe.cuda.prewarm(plan, progress=False)
        exact = pymoe.cuda.prewarm(plan, experts=ew, progress=False)
        assert exact.memory == exact.keys < both.keys
        check_problem(p, device=True)


@pytest.mark.gpu
def test_v2_only_upload_runs_the_wgmma_gemm(monkeypatch):
    """to_device(packed_rows=False) on the H200: half the weights' GPU bytes; the
    decode regime and the wgmma GEMM (every block, 128 pinned too) run from
    layout v2 alone and give the full upload's bits; PYMOE_GEMM=mma is refused at
    bind, before any launch."""
    import cupy as cp
    import pymoe
    from pymoe.plan import device_cc
    from tests.problems import Case, make_problem
    monkeypatch.delenv("PYMOE_GEMM", raising=False)
    if device_cc(cp.zeros(1)) != (9, 0):
        pytest.skip("the v2 GEMM is sm_90's wgmma")
    case = Case(257, 256, 144, 8, 2, seed=11)
    p_full, p_lean = make_problem(case), make_problem(case)   # two host objects
    full = pymoe.cuda.to_device(p_full.experts)
    lean = pymoe.cuda.to_device(p_lean.experts, packed_rows=False)
    assert not lean.has_packed_rows
    assert lean.device_nbytes < 0.6 * full.device_nbytes
    caps = pymoe.Caps.for_weights(p_full.experts, max_tokens=257, top_k=2)
    plan = pymoe.plan(caps)
    scratch = pymoe.cuda.allocate_scratch(plan)

    def run(ew, t, pl=plan, sc=scratch):
        return pymoe.run(pl.bind(scratch=sc, x=cp.asarray(p_full.x[:t]), experts=ew,
                                 topk_weights=cp.asarray(p_full.topk_weights[:t]),
                                 topk_ids=cp.asarray(p_full.topk_ids[:t]))).get()
    for t in (5, 257):                                   # decode, packed (wgmma, B <= 64)
        np.testing.assert_array_equal(run(lean, t), run(full, t))
    from dataclasses import replace
    pin = pymoe.plan(replace(caps, block_size_m=128))
    pin_scratch = pymoe.cuda.allocate_scratch(pin)
    np.testing.assert_array_equal(run(lean, 257, pin, pin_scratch),
                                  run(full, 257, pin, pin_scratch))
    monkeypatch.setenv("PYMOE_GEMM", "mma")
    with pytest.raises(ValueError, match="packed_rows=False .* runs the mma GEMM"):
        run(lean, 257)
