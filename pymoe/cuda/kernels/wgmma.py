"""Hopper warpgroup MMA (wgmma, sm_90a) from Numba: the intrinsics Speed II's
prefill main loop is built from.  GPU only (no simulator twin); the layouts
they read and write are pymoe/ref/wgmma.py, their NumPy twin.

    wgmma_fence()              wgmma.fence: register / shared writes before it are
                               seen by the next mma_async
    wgmma_commit()             wgmma.commit_group
    make_wgmma_wait(n)         -> wait(): wgmma.wait_group n
    fence_proxy_async()        fence.proxy.async.shared::cta: ordinary shared
                               stores made visible to the tensor cores
    make_acc_fill(n)           -> fill(v): n/2 float32 accumulators set to v by ONE
                               volatile asm (no register moves land between the
                               fence and the first mma)
    make_wgmma_rs(n, dtype)    -> mma(acc, a0, a1, a2, a3, desc, scale_d): D (64 x n,
                               fp32, n/2 per thread) = A (64 x 16 from registers,
                               4 packed pairs per thread) x B (16 x n from shared
                               memory through the 64-bit descriptor desc) + D
                               (scale_d != 0) or + 0 (scale_d == 0); B K-major
    wgmma_desc_sw32(saddr, sbo)   the 32-byte-swizzle descriptor (K-major: 8-row
                                  groups sbo apart, a row's 32 bytes whole, its
                                  16-byte halves swapped where address bit 7 is set;
                                  pymoe.ref.wgmma.descriptor_sw32 / b_image_sw32 are
                                  its twins)
    wgmma_desc(saddr, lbo, sbo)   the no-swizzle descriptor of a B image at shared
                               address saddr (pymoe.ref.wgmma.descriptor is its twin)
    store_acc(arr, base, acc)  arr[base + i] = acc[i] (float32 array, every i)
    store_acc_t(arr, base, stride, mult, acc)
                               D stored transposed, columns as rows: acc[4j + v]
                               * mult -> arr[base + (8j + v % 2) stride + 8 (v // 2)];
                               with base = 2q stride + 16w + g that is arr[col *
                               stride + row] for the thread's (row, col) of D
    make_store_acc_t(hi)       -> the same with row g + 8 of D at + hi, not + 8

Kernels that use them compile for sm_90a (KernelSpec.arch_specific).  The
accumulator tuple is tied to the asm's outputs, so it stays in registers; every
asm here is volatile with a memory clobber, which keeps program order.
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.cuda.extending import intrinsic

from .ptx import _asm, _u32, _void_asm

__all__ = ["wgmma_fence", "wgmma_commit", "make_wgmma_wait", "fence_proxy_async",
           "make_acc_fill", "make_wgmma_rs", "wgmma_desc", "wgmma_desc_sw32", "store_acc",
           "store_acc_t", "make_store_acc_t", "WGMMA_N", "mbar_init", "fence_mbar_init",
           "mbar_try_wait", "mbar_arrive", "cp_mbar_arrive", "mbar_expect_tx", "make_setmaxnreg"]

WGMMA_N = tuple(range(8, 257, 8))        # the n of m64nNk16 (dense bf16 / f16)
_F32 = ir.FloatType()
_I64 = ir.IntType(64)


def _void(text):
    @intrinsic
    def f(typingctx):
        def codegen(context, builder, signature, args):
            _void_asm(builder, text, "~{memory}", [])
            return context.get_dummy_value()
        return types.void(), codegen
    return f


wgmma_fence = _void("wgmma.fence.sync.aligned;")
wgmma_commit = _void("wgmma.commit_group.sync.aligned;")
fence_proxy_async = _void("fence.proxy.async.shared::cta;")
fence_mbar_init = _void("fence.mbarrier_init.release.cluster;")   # init -> async proxy


def make_setmaxnreg(inc: bool, n: int):
    """setmaxnreg.{inc,dec}.sync.aligned.u32 n (a whole warpgroup, n % 8 == 0)."""
    if not (24 <= n <= 256 and n % 8 == 0):
        raise ValueError(f"setmaxnreg: n={n}, expected a multiple of 8 in 24..256")
    return _void(f"setmaxnreg.{'inc' if inc else 'dec'}.sync.aligned.u32 {n};")


# ---- mbarriers in shared memory (8 bytes, 8-byte aligned; 32-bit shared addresses)
def _mbar_op(text: str, nops: int = 1):
    """An intrinsic f(mbar[, x]) -> None emitting ``text`` with $0 the mbarrier's
    shared address and, when nops == 2, $1 a 32-bit operand."""
    def codegen(context, builder, signature, args):
        vals = [_u32(context, builder, t, a) for t, a in zip(signature.args, args)]
        _void_asm(builder, text, ",".join(["r"] * nops + ["~{memory}"]), vals)
        return context.get_dummy_value()

    if nops == 1:
        @intrinsic
        def f(typingctx, mbar):
            return types.void(mbar), codegen
    else:
        @intrinsic
        def f(typingctx, mbar, x):
            return types.void(mbar, x), codegen
    return f


# mbar_arrive(mbar): this thread's arrival (count 1; release of its prior
# shared-memory accesses).  cp_mbar_arrive(mbar): an arrival once every cp.async
# this thread issued before it has landed (noinc: counted in mbar's init count).
# mbar_init(mbar, count): one thread, before any use.  mbar_expect_tx(mbar,
# nbytes): this thread's arrival, announcing nbytes of bulk copies to complete.
mbar_arrive = _mbar_op("mbarrier.arrive.shared::cta.b64 _, [$0];")
cp_mbar_arrive = _mbar_op("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [$0];")
mbar_init = _mbar_op("mbarrier.init.shared::cta.b64 [$0], $1;", 2)
mbar_expect_tx = _mbar_op("mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", 2)


@intrinsic
def mbar_try_wait(typingctx, mbar, parity):
    """1 when mbar's phase of this parity has completed (one bounded wait), else 0."""
    sig = types.uint32(mbar, parity)

    def codegen(context, builder, signature, args):
        m = _u32(context, builder, signature.args[0], args[0])
        p = _u32(context, builder, signature.args[1], args[1])
        return _asm(builder, ir.IntType(32),
                    "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2; "
                    "selp.u32 $0, 1, 0, p; }", "=r,r,r,~{memory}", [m, p])
    return sig, codegen


def make_wgmma_wait(n: int):
    """wait(): wgmma.wait_group n (at most n committed groups still pending)."""
    if not 0 <= n <= 7:
        raise ValueError(f"wgmma wait_group: n={n}, expected 0..7")
    return _void(f"wgmma.wait_group.sync.aligned {n};")


def _check_n(n: int) -> int:
    if n not in WGMMA_N:
        raise ValueError(f"wgmma m64nNk16: n={n}, expected a multiple of 8 in 8..256")
    return n // 2


def make_acc_fill(n: int):
    """fill(v) -> a UniTuple of n/2 float32, every one v."""
    nacc = _check_n(n)
    tup = types.UniTuple(types.float32, nacc)

    @intrinsic
    def fill(typingctx, value):
        if not isinstance(value, types.Float):
            return None

        def codegen(context, builder, signature, args):
            v = context.cast(builder, args[0], signature.args[0], types.float32)
            text = "\n".join(f"mov.b32 ${i}, ${nacc};" for i in range(nacc))
            cons = ",".join(["=f"] * nacc + ["f", "~{memory}"])
            r = _asm(builder, ir.LiteralStructType([_F32] * nacc), text, cons, [v])
            return context.make_tuple(builder, tup, [builder.extract_value(r, i)
                                                     for i in range(nacc)])
        return tup(value), codegen
    return fill


def make_wgmma_rs(n: int, dtype: str):
    """mma(acc, a0, a1, a2, a3, desc, scale_d) -> acc: one
    wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ab}.{ab} with A from registers
    and a K-major B (imm-trans-b 0); scale_d == 0 drops the old acc."""
    nacc = _check_n(n)
    ab = {"bfloat16": "bf16", "float16": "f16"}.get(dtype)
    if ab is None:
        raise ValueError(f"wgmma: dtype {dtype!r}, expected 'bfloat16' or 'float16'")
    ia, idesc, isd = nacc, nacc + 4, nacc + 5
    dlist = ", ".join(f"${i}" for i in range(nacc))
    text = ("{\n.reg .pred p;\n"
            f"setp.ne.b32 p, ${isd}, 0;\n"
            f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ab}.{ab} "
            f"{{{dlist}}}, {{${ia}, ${ia + 1}, ${ia + 2}, ${ia + 3}}}, ${idesc}, p, 1, 1, 0;\n}}")
    cons = ",".join(["=f"] * nacc + ["r"] * 4 + ["l", "r"] + [str(i) for i in range(nacc)]
                    + ["~{memory}"])

    @intrinsic
    def mma(typingctx, acc, a0, a1, a2, a3, desc, scale_d):
        if not (isinstance(acc, types.UniTuple) and acc.count == nacc):
            return None
        sig = acc(acc, a0, a1, a2, a3, desc, scale_d)

        def codegen(context, builder, signature, args):
            accv = [builder.extract_value(args[0], i) for i in range(nacc)]
            a = [context.cast(builder, args[1 + i], signature.args[1 + i], types.uint32)
                 for i in range(4)]
            d = context.cast(builder, args[5], signature.args[5], types.int64)
            sd = context.cast(builder, args[6], signature.args[6], types.int32)
            r = _asm(builder, ir.LiteralStructType([_F32] * nacc), text, cons, a + [d, sd] + accv)
            return context.make_tuple(builder, signature.return_type,
                                      [builder.extract_value(r, i) for i in range(nacc)])
        return sig, codegen
    return mma


def _desc_codegen(shifts, fixed: int = 0):
    """Codegen of a 64-bit matrix descriptor: each argument (a byte address or
    offset) in 16-byte units, 14 bits, at its bit position in ``shifts``, OR'd
    with the constant fields ``fixed``."""
    def codegen(context, builder, signature, args):
        v = [context.cast(builder, x, t, types.int64) for x, t in zip(args, signature.args)]
        m14 = ir.Constant(_I64, 0x3FFF)
        d = None
        for x, sh in zip(v, shifts):
            f = builder.and_(builder.lshr(x, ir.Constant(_I64, 4)), m14)
            f = builder.shl(f, ir.Constant(_I64, sh)) if sh else f
            d = f if d is None else builder.or_(d, f)
        return builder.or_(d, ir.Constant(_I64, fixed)) if fixed else d
    return codegen


@intrinsic
def wgmma_desc(typingctx, saddr, lbo, sbo):
    """int64 descriptor: start address (bits 0-13), leading byte offset (16-29),
    stride byte offset (32-45), all in 16-byte units; base offset 0, no swizzle."""
    if not all(isinstance(t, types.Integer) for t in (saddr, lbo, sbo)):
        return None
    return types.int64(saddr, lbo, sbo), _desc_codegen((0, 16, 32))


@intrinsic
def wgmma_desc_sw32(typingctx, saddr, sbo):
    """int64 descriptor of a K-major image in the 32-byte swizzle: start address
    (bits 0-13) and stride byte offset (32-45) in 16-byte units, leading byte
    offset 1 (unused by a K-major swizzled image), base offset 0 (the image
    starts 256-byte aligned), layout 3 (32-byte swizzle) in bits 62-63.  A
    route's 32 bytes of a k-step are one row; in shared address A the hardware
    reads 16-byte unit bit 4 of A XOR bit 7."""
    if not all(isinstance(t, types.Integer) for t in (saddr, sbo)):
        return None
    return types.int64(saddr, sbo), _desc_codegen((0, 32), (3 << 62) | (1 << 16))


@intrinsic
def store_acc(typingctx, arr, base, acc):
    """arr[base + i] = acc[i] for every i of a float32 accumulator tuple (constant
    indices: the tuple stays in registers)."""
    if not (isinstance(arr, types.Array) and arr.dtype == types.float32
            and isinstance(base, types.Integer) and isinstance(acc, types.UniTuple)):
        return None
    count = acc.count

    def codegen(context, builder, signature, args):
        a = context.make_array(signature.args[0])(context, builder, value=args[0])
        b = context.cast(builder, args[1], signature.args[1], types.int64)
        for i in range(count):
            p = builder.gep(a.data, [builder.add(b, ir.Constant(_I64, i))])
            builder.store(builder.extract_value(args[2], i), p)
        return context.get_dummy_value()
    return types.void(arr, base, acc), codegen


def make_store_acc_t(hi: int = 8):
    """store(arr, base, stride, mult, acc): arr[base + (8j + v % 2) stride +
    hi (v // 2)] = acc[4j + v] * mult (constant offsets times a runtime stride;
    the tuple stays in registers).  hi is where the thread's second row (g + 8
    of D) goes: 8 for D's own rows, 32 for a gated v2 tile (gate rows 0..31 of
    the CTA's tile, up rows 32..63).  mult = 1.0 folds away."""
    @intrinsic
    def store(typingctx, arr, base, stride, mult, acc):
        if not (isinstance(arr, types.Array) and arr.dtype == types.float32
                and isinstance(base, types.Integer) and isinstance(stride, types.Integer)
                and isinstance(mult, types.Float) and isinstance(acc, types.UniTuple)):
            return None
        count = acc.count

        def codegen(context, builder, signature, args):
            a = context.make_array(signature.args[0])(context, builder, value=args[0])
            b = context.cast(builder, args[1], signature.args[1], types.int64)
            st = context.cast(builder, args[2], signature.args[2], types.int64)
            f = context.cast(builder, args[3], signature.args[3], types.float32)
            for i in range(count):
                j, v = divmod(i, 4)
                off = builder.add(builder.mul(st, ir.Constant(_I64, 8 * j + v % 2)),
                                  ir.Constant(_I64, hi * (v // 2)))
                p = builder.gep(a.data, [builder.add(b, off)])
                builder.store(builder.fmul(builder.extract_value(args[4], i), f), p)
            return context.get_dummy_value()
        return types.void(arr, base, stride, mult, acc), codegen
    return store


store_acc_t = make_store_acc_t(8)
