"""Inline-PTX intrinsics (docs/gpu.md section 4): tensor-core mma.sync, byte permutes,
packed 16-bit multiplies and fp16 bit conversions.

Each is a Numba ``@intrinsic`` that emits one PTX instruction through llvmlite's
``InlineAsm``.  Numba's CUDA simulator cannot run inline PTX, so kernels using
these run on a GPU only (the simulator runs the plain GEMM, see gemm.py).

    prmt(a, b, sel)            prmt.b32: bytes of the 8-byte pool {b:a} picked by
                               the low 4 selector nibbles of sel
    min_u16x2(a, b)            min.u16x2: each 16-bit half the unsigned minimum
                               (sm_90; VIMNMX.U16x2)
    mul2(a, b, dtype)          exact-product packed multiply (bf16x2 via fma with
                               -0, f16x2 via mul.rn); a, b, result: uint32
    mul2_bf16_lo / _hi(a, b)   the bf16 / f16 one by b's low / high half on both
    mul2_f16_lo / _hi(a, b)    halves of a
    inf_nan_f16x2(a)           fma.rn.f16x2 a x 0 + a: each half a, or NaN where
                               it is +-inf
    e4m3x2_f16x2(a)            cvt.rn.f16x2.e4m3x2: the two E4M3 bytes of a's low
                               half as an fp16 pair, exact (sm_89+)
    mma(a0..a3, b0, b1, c0..c3, dtype) -> (d0, d1, d2, d3)
                               mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}
    h2f(bits) / f2h(f)         fp16 bits <-> float32 (cvt, round to nearest even)
    ld_nc2(arr, i)             8 bytes at &arr[i] (any element type) as 2 uint32:
                               ld.global.nc.v2 (activations, cached); ld_nc4 16
                               bytes as 4, ld_nc1 4 bytes, ld_nc_u8 one byte
                               (zero-extended); no wraparound or bounds checks
    smem_u32(arr)              the 32-bit shared-window address of a shared array
    gaddr(arr, i)              the global address (int64) of arr[i]
    cp_async16/8/4_g(s, g)     cp.async.cg (16 B) / .ca (8, 4 B) from global
                               address g to shared address s; cp_commit() commits
                               the group, make_cp_wait(n)() waits until <= n of
                               the thread's groups pend
    cp_async16_z(s, g, n)      16 bytes to s: the first n (0 or 16) from g, the rest
                               zeros (cp.async src-size; g not read when n = 0)
    lds4/2/1(s)                4 / 2 / 1 uint32 at shared address s (volatile)
    sts2(s, w0, w1)            2 uint32 to shared address s (volatile; GPU only)
    sts4(s, w0, w1, w2, w3)    4 uint32 to shared address s (16-byte aligned; GPU only)
    stg2(arr, i, w0, w1)       8 bytes (2 uint32) to &arr[i] (any element type,
                               8-byte aligned); stg4 16 bytes (4 uint32, 16-byte
                               aligned): st.global.v2 / .v4
    pack_bf16x2(lo, hi)        two float32 rounded to nearest even and packed
    pack_f16x2(lo, hi)         (lo in the low 16 bits): cvt.rn.{bf16x2,f16x2}.f32
    pdl_wait()                 griddepcontrol.wait: in a grid launched as a
                               programmatic dependent (launch.PreparedLaunch
                               .dependent), block until the grid before it in the
                               stream has completed and its writes are visible
    pdl_trigger()              griddepcontrol.launch_dependents: this CTA lets the
                               dependent grid after it be scheduled now
The two griddepcontrol instructions exist from sm_90; launch._compile removes
them from PTX built for an older target (where nothing is launched dependent and
both would be no-ops).  Under the simulator both are no-ops.
The caller guarantees the alignment (16 / 8 / 4 bytes) and that the data is not
written while the kernel runs (the .nc path is not coherent with stores).
"""
from __future__ import annotations

from llvmlite import ir
from numba import config, types
from numba.cuda.extending import intrinsic

__all__ = ["prmt", "min_u16x2", "mul2_bf16", "mul2_bf16_lo", "mul2_bf16_hi", "mul2_f16",
           "mul2_f16_lo", "mul2_f16_hi", "inf_nan_f16x2", "e4m3x2_f16x2",
           "mma_bf16", "mma_f16", "h2f", "f2h",
           "ld_nc2", "ld_nc4", "ld_nc1", "ld_nc_u8", "ld_g4", "smem_u32", "gaddr", "cp_async16_g",
           "cp_async8_g", "cp_async4_g",
           "cp_commit", "make_cp_wait", "cp_async16_z", "lds4", "lds2", "lds1", "sts2", "sts4",
           "stg2", "stg4", "make_stg_f32_if", "pack_bf16x2", "pack_f16x2", "pdl_wait",
           "pdl_trigger", "PDL_OPS"]

_I32 = ir.IntType(32)
_I16 = ir.IntType(16)
_F32 = ir.FloatType()


def _u32(context, builder, typ, val):
    """Any integer argument as an i32 register value."""
    return context.cast(builder, val, typ, types.uint32)


def _elem_addr(context, builder, aryty, ary, idxty, idx):
    """The address (i64) of element idx of a 1-D array value."""
    a = context.make_array(aryty)(context, builder, value=ary)
    i = context.cast(builder, idx, idxty, types.int64)
    return builder.ptrtoint(builder.gep(a.data, [i]), ir.IntType(64))


def _words(context, builder, res, ret, n):
    """An asm result of n i32 words as what the intrinsic returns (a tuple, or
    the word itself when n == 1)."""
    if n == 1:
        return res
    return context.make_tuple(builder, ret, [builder.extract_value(res, k) for k in range(n)])


@intrinsic
def prmt(typingctx, a, b, sel):
    sig = types.uint32(types.uint32, types.uint32, types.uint32)

    def codegen(context, builder, signature, args):
        vals = [_u32(context, builder, t, v) for t, v in zip(signature.args, args)]
        fnty = ir.FunctionType(_I32, [_I32, _I32, _I32])
        asm = ir.InlineAsm(fnty, "prmt.b32 $0, $1, $2, $3;", "=r,r,r,r")
        return builder.call(asm, vals)

    return sig, codegen


@intrinsic
def min_u16x2(typingctx, a, b):
    sig = types.uint32(types.uint32, types.uint32)

    def codegen(context, builder, signature, args):
        vals = [_u32(context, builder, t, v) for t, v in zip(signature.args, args)]
        fnty = ir.FunctionType(_I32, [_I32, _I32])
        return builder.call(ir.InlineAsm(fnty, "min.u16x2 $0, $1, $2;", "=r,r,r"), vals)

    return sig, codegen


def _asm_codegen(text, extra=()):
    """codegen of an intrinsic whose uint32 arguments, then the constant i32
    inputs ``extra`` (PTX takes no packed immediates), feed one asm statement
    returning a 32-bit register."""
    def codegen(context, builder, signature, args):
        vals = [_u32(context, builder, t, v) for t, v in zip(signature.args, args)]
        vals += [ir.Constant(_I32, c) for c in extra]
        fnty = ir.FunctionType(_I32, [_I32] * len(vals))
        cons = ",".join(["=r"] + ["r"] * len(vals))
        return builder.call(ir.InlineAsm(fnty, text, cons), vals)
    return codegen


def _make_mul2(text, extra=()):
    """@intrinsic f(a, b) -> uint32 (_asm_codegen)."""
    @intrinsic
    def mul2(typingctx, a, b):
        return types.uint32(types.uint32, types.uint32), _asm_codegen(text, extra)
    return mul2


# a*b exactly when the product fits (it does for FP4 x E4M3): fma with -0.0 keeps
# the sign of a zero product, as a multiply would (mul.bf16x2 is sm_90 only).
_NEG0 = (0x80008000 - (1 << 32),)                 # -0.0 twice, as an i32 constant
mul2_bf16 = _make_mul2("fma.rn.bf16x2 $0, $1, $2, $3;", extra=_NEG0)
mul2_f16 = _make_mul2("mul.rn.f16x2 $0, $1, $2;")


def _by_half(op: str, half: str) -> str:
    """op with its b operand (t) one half of $2 on both halves: the half moved
    into both by mov, which ptxas folds into the multiply as an operand selector
    (HFMA2.BF16_V2 / HMUL2 ... R.H0_H0 / R.H1_H1)."""
    return ("{ .reg .b16 l, h; .reg .b32 t; mov.b32 {l, h}, $2; "
            f"mov.b32 t, {{{half}, {half}}}; {op} }}")


# The same multiplies by one half of b (a pair of two rows' scales) on both
# halves of a.
mul2_bf16_lo = _make_mul2(_by_half("fma.rn.bf16x2 $0, $1, t, $3;", "l"), extra=_NEG0)
mul2_bf16_hi = _make_mul2(_by_half("fma.rn.bf16x2 $0, $1, t, $3;", "h"), extra=_NEG0)
mul2_f16_lo = _make_mul2(_by_half("mul.rn.f16x2 $0, $1, t;", "l"))
mul2_f16_hi = _make_mul2(_by_half("mul.rn.f16x2 $0, $1, t;", "h"))


def _make_unary(text, extra=()):
    """@intrinsic f(a) -> uint32 (_asm_codegen)."""
    @intrinsic
    def unary(typingctx, a):
        return types.uint32(types.uint32), _asm_codegen(text, extra)
    return unary


# fma(a, 0, a) on each fp16 half: a where finite, NaN where a is +-inf (inf x 0).
inf_nan_f16x2 = _make_unary("fma.rn.f16x2 $0, $1, $2, $1;", extra=(0,))
# The two E4M3 bytes of a's low half as an fp16 pair, exactly (every E4M3 value,
# subnormals and NaN included, is an fp16 value; sm_89+).
e4m3x2_f16x2 = _make_unary("{ .reg .b16 lo, hi; mov.b32 {lo, hi}, $1; "
                           "cvt.rn.f16x2.e4m3x2 $0, lo; }")


def _make_mma(ab: str):
    text = (f"mma.sync.aligned.m16n8k16.row.col.f32.{ab}.{ab}.f32 "
            "{$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};")
    ret = types.UniTuple(types.float32, 4)

    @intrinsic
    def mma(typingctx, a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
        sig = ret(*([types.uint32] * 6 + [types.float32] * 4))

        def codegen(context, builder, signature, args):
            vals = [context.cast(builder, v, t, s)
                    for v, t, s in zip(args, signature.args, sig.args)]
            fnty = ir.FunctionType(ir.LiteralStructType([_F32] * 4), [_I32] * 6 + [_F32] * 4)
            cons = ",".join(["=f"] * 4 + ["r"] * 6 + ["f"] * 4)
            res = builder.call(ir.InlineAsm(fnty, text, cons), vals)
            outs = [builder.extract_value(res, i) for i in range(4)]
            return context.make_tuple(builder, ret, outs)

        return sig, codegen
    return mma


mma_bf16 = _make_mma("bf16")
mma_f16 = _make_mma("f16")


@intrinsic
def h2f(typingctx, bits):
    sig = types.float32(types.uint32)

    def codegen(context, builder, signature, args):
        v = builder.trunc(_u32(context, builder, signature.args[0], args[0]), _I16)
        fnty = ir.FunctionType(_F32, [_I16])
        return builder.call(ir.InlineAsm(fnty, "cvt.f32.f16 $0, $1;", "=f,h"), [v])

    return sig, codegen


@intrinsic
def f2h(typingctx, f):
    sig = types.uint32(types.float32)

    def codegen(context, builder, signature, args):
        v = context.cast(builder, args[0], signature.args[0], types.float32)
        fnty = ir.FunctionType(_I16, [_F32])
        h = builder.call(ir.InlineAsm(fnty, "cvt.rn.f16.f32 $0, $1;", "=h,f"), [v])
        return builder.zext(h, _I32)

    return sig, codegen


def _make_ld(n: int, opcode: str):
    """@intrinsic ld(arr, i): n uint32 words from the address of element i of the
    1-D array arr (pointer arithmetic in int64, no wraparound checks)."""
    ret = types.UniTuple(types.uint32, n) if n > 1 else types.uint32
    regs = ", ".join(f"${k}" for k in range(n))
    text = f"{opcode} {{{regs}}}, [${n}];" if n > 1 else f"{opcode} $0, [$1];"
    cons = ",".join(["=r"] * n + ["l"])

    @intrinsic
    def ld(typingctx, arr, idx):
        if not isinstance(arr, types.Array) or not isinstance(idx, types.Integer):
            return None
        sig = ret(arr, idx)

        def codegen(context, builder, signature, args):
            addr = _elem_addr(context, builder, signature.args[0], args[0],
                              signature.args[1], args[1])
            rty = ir.LiteralStructType([_I32] * n) if n > 1 else _I32
            res = builder.call(ir.InlineAsm(ir.FunctionType(rty, [ir.IntType(64)]), text,
                                            cons, side_effect=False), [addr])
            return _words(context, builder, res, ret, n)

        return sig, codegen
    return ld


ld_nc2 = _make_ld(2, "ld.global.nc.v2.u32")
ld_nc4 = _make_ld(4, "ld.global.nc.v4.u32")
ld_nc1 = _make_ld(1, "ld.global.nc.u32")
ld_nc_u8 = _make_ld(1, "ld.global.nc.u8")        # zero-extended into a 32-bit register
# A coherent 16-byte load (through L1, not the read-only path): for data another
# grid wrote, read after pdl_wait (the combine's route rows).
ld_g4 = _make_ld(4, "ld.global.v4.u32")


# ---- cp.async rings (decode kernels): shared addresses are 32-bit shared-window
# addresses (smem_u32).  Every asm below that touches shared memory is volatile
# with a memory clobber, so LLVM keeps them in program order around the waits.
def _asm(builder, ret, text, cons, vals):
    """A volatile inline asm of result type ret (the probes' intrinsics use it too)."""
    fnty = ir.FunctionType(ret, [v.type for v in vals])
    return builder.call(ir.InlineAsm(fnty, text, cons, side_effect=True), vals)


def _void_asm(builder, text, cons, vals):
    _asm(builder, ir.VoidType(), text, cons, vals)


@intrinsic
def _smem_u32(typingctx, arr):
    """The shared-window address (uint32) of a cuda.shared.array's first element."""
    if not isinstance(arr, types.Array):
        return None
    sig = types.uint32(arr)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, value=args[0])
        data = builder.bitcast(ary.data, ir.IntType(8).as_pointer())
        sptr = builder.addrspacecast(data, ir.IntType(8).as_pointer(3))
        return builder.ptrtoint(sptr, _I32)

    return sig, codegen


@intrinsic
def _gaddr(typingctx, arr, idx):
    """The global address (int64) of element idx of a 1-D array."""
    if not isinstance(arr, types.Array) or not isinstance(idx, types.Integer):
        return None
    sig = types.int64(arr, idx)

    def codegen(context, builder, signature, args):
        return _elem_addr(context, builder, signature.args[0], args[0], signature.args[1],
                          args[1])

    return sig, codegen


def _make_cp_async_g(nbytes: int):
    cache = "cg" if nbytes == 16 else "ca"          # .cg takes 16 bytes only
    text = f"cp.async.{cache}.shared.global [$0], [$1], {nbytes};"

    @intrinsic
    def cp_async_g(typingctx, saddr, g):
        """Copy nbytes from global address g (an int64 from gaddr) to shared
        address saddr, async."""
        if not (isinstance(saddr, types.Integer) and isinstance(g, types.Integer)):
            return None
        sig = types.void(saddr, g)

        def codegen(context, builder, signature, args):
            st, gt = signature.args
            sa = _u32(context, builder, st, args[0])
            ga = context.cast(builder, args[1], gt, types.int64)
            _void_asm(builder, text, "r,l,~{memory}", [sa, ga])
            return context.get_dummy_value()

        return sig, codegen
    return cp_async_g


cp_async16_g = _make_cp_async_g(16)
cp_async8_g = _make_cp_async_g(8)
cp_async4_g = _make_cp_async_g(4)


@intrinsic
def _cp_async16_z(typingctx, saddr, g, nbytes):
    """16 bytes to shared address saddr: the first nbytes (0 or 16) from global
    address g, the rest zeros (cp.async's src-size; g is not read when 0)."""
    if not all(isinstance(t, types.Integer) for t in (saddr, g, nbytes)):
        return None
    sig = types.void(saddr, g, nbytes)

    def codegen(context, builder, signature, args):
        st, gt, nt = signature.args
        sa = _u32(context, builder, st, args[0])
        ga = context.cast(builder, args[1], gt, types.int64)
        nb = _u32(context, builder, nt, args[2])
        _void_asm(builder, "cp.async.cg.shared.global [$0], [$1], 16, $2;",
                  "r,l,r,~{memory}", [sa, ga, nb])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _cp_commit(typingctx):
    sig = types.void()

    def codegen(context, builder, signature, args):
        _void_asm(builder, "cp.async.commit_group;", "~{memory}", [])
        return context.get_dummy_value()

    return sig, codegen


# ---- programmatic dependent launch (sm_90+): the only text of these two asm
# statements, which launch._compile strips for targets before sm_90
PDL_OPS = ("griddepcontrol.wait;", "griddepcontrol.launch_dependents;")


def _make_void(text):
    @intrinsic
    def fn(typingctx):
        sig = types.void()

        def codegen(context, builder, signature, args):
            _void_asm(builder, text, "~{memory}", [])
            return context.get_dummy_value()

        return sig, codegen
    return fn


def _make_cp_wait(n: int):
    """cp_wait(): cp.async.wait_group n (at most n of this thread's groups pending)."""
    @intrinsic
    def cp_wait(typingctx):
        sig = types.void()

        def codegen(context, builder, signature, args):
            _void_asm(builder, f"cp.async.wait_group {n};", "~{memory}", [])
            return context.get_dummy_value()

        return sig, codegen
    return cp_wait


def _make_lds(n: int):
    ret = types.UniTuple(types.uint32, n) if n > 1 else types.uint32
    regs = ", ".join(f"${k}" for k in range(n))
    text = (f"ld.shared.v{n}.u32 {{{regs}}}, [${n}];" if n > 1
            else "ld.shared.u32 $0, [$1];")
    cons = ",".join(["=r"] * n + ["r", "~{memory}"])

    @intrinsic
    def lds(typingctx, saddr):
        """n uint32 words at shared address saddr (aligned to 4n bytes)."""
        if not isinstance(saddr, types.Integer):
            return None
        sig = ret(saddr)

        def codegen(context, builder, signature, args):
            s = _u32(context, builder, signature.args[0], args[0])
            rty = ir.LiteralStructType([_I32] * n) if n > 1 else _I32
            res = builder.call(ir.InlineAsm(ir.FunctionType(rty, [_I32]), text, cons,
                                            side_effect=True), [s])
            return _words(context, builder, res, ret, n)

        return sig, codegen
    return lds


lds4 = _make_lds(4)
lds2 = _make_lds(2)
lds1 = _make_lds(1)


@intrinsic
def sts2(typingctx, saddr, w0, w1):
    """st.shared.v2.u32 [saddr], {w0, w1} (saddr aligned to 8 bytes; volatile)."""
    if not all(isinstance(t, types.Integer) for t in (saddr, w0, w1)):
        return None
    sig = types.void(saddr, w0, w1)

    def codegen(context, builder, signature, args):
        v = [_u32(context, builder, t, a) for t, a in zip(signature.args, args)]
        _void_asm(builder, "st.shared.v2.u32 [$0], {$1, $2};", "r,r,r,~{memory}", v)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def sts4(typingctx, saddr, w0, w1, w2, w3):
    """st.shared.v4.u32 [saddr], {w0..w3} (saddr aligned to 16 bytes; volatile)."""
    if not all(isinstance(t, types.Integer) for t in (saddr, w0, w1, w2, w3)):
        return None
    sig = types.void(saddr, w0, w1, w2, w3)

    def codegen(context, builder, signature, args):
        v = [_u32(context, builder, t, a) for t, a in zip(signature.args, args)]
        _void_asm(builder, "st.shared.v4.u32 [$0], {$1, $2, $3, $4};",
                  "r,r,r,r,r,~{memory}", v)
        return context.get_dummy_value()

    return sig, codegen


def _make_stg(n: int):
    """@intrinsic stg(arr, i, w0 .. w{n-1}): st.global.v{n}.u32 at &arr[i]."""
    regs = ", ".join(f"${k + 1}" for k in range(n))
    text = f"st.global.v{n}.u32 [$0], {{{regs}}};"
    cons = ",".join(["l"] + ["r"] * n + ["~{memory}"])

    def typer(arr, idx, ws):
        if not isinstance(arr, types.Array) or not isinstance(idx, types.Integer) \
                or not all(isinstance(t, types.Integer) for t in ws):
            return None
        sig = types.void(arr, idx, *ws)

        def codegen(context, builder, signature, args):
            addr = _elem_addr(context, builder, signature.args[0], args[0],
                              signature.args[1], args[1])
            v = [_u32(context, builder, t, a) for t, a in zip(signature.args[2:], args[2:])]
            _void_asm(builder, text, cons, [addr] + v)
            return context.get_dummy_value()

        return sig, codegen

    if n == 2:
        @intrinsic
        def stg(typingctx, arr, idx, w0, w1):
            return typer(arr, idx, (w0, w1))
    else:
        @intrinsic
        def stg(typingctx, arr, idx, w0, w1, w2, w3):
            return typer(arr, idx, (w0, w1, w2, w3))
    return stg


def _make_stg_f32_if(off: int):
    """@intrinsic stg_if(addr, val, ok): st.global.f32 at global address addr +
    off (bytes) where ok, a predicated store (no branch around it)."""
    text = f"{{ .reg .pred p; setp.ne.b32 p, $2, 0; @p st.global.f32 [$0+{off}], $1; }}"
    cons = "l,f,r,~{memory}"

    @intrinsic
    def stg_if(typingctx, addr, val, ok):
        if not (isinstance(addr, types.Integer) and isinstance(val, types.Float)
                and isinstance(ok, (types.Boolean, types.Integer))):
            return None
        sig = types.void(addr, val, ok)

        def codegen(context, builder, signature, args):
            a = context.cast(builder, args[0], signature.args[0], types.uint64)
            v = context.cast(builder, args[1], signature.args[1], types.float32)
            p = context.cast(builder, args[2], signature.args[2], types.uint32)
            _void_asm(builder, text, cons, [a, v, p])
            return context.get_dummy_value()

        return sig, codegen
    return stg_if


def _make_pack(kind: str):
    """@intrinsic pack(lo, hi) -> uint32: cvt.rn.{kind}x2.f32 (hi in the high half)."""
    @intrinsic
    def pack(typingctx, lo, hi):
        sig = types.uint32(types.float32, types.float32)

        def codegen(context, builder, signature, args):
            v = [context.cast(builder, a, t, types.float32)
                 for t, a in zip(signature.args, args)]
            fnty = ir.FunctionType(_I32, [_F32, _F32])
            return builder.call(ir.InlineAsm(fnty, f"cvt.rn.{kind}x2.f32 $0, $2, $1;",
                                             "=r,f,f"), v)

        return sig, codegen
    return pack


# ---- Under Numba's simulator the ring intrinsics are plain Python over a
# per-thread dict (shared address -> uint32 word): a copy lands at once, and a
# thread reads back only what it copied itself (a KeyError otherwise), which is
# how the decode kernels use them; the simulator thus runs their real
# producer / consumer code (kernels/decode.py checks every slot it reads).
if config.ENABLE_CUDASIM:
    import itertools
    import threading

    import numpy as _np

    _TLS = threading.local()
    _BASES: dict = {}
    _NEXT = itertools.count(1)

    def _mem() -> dict:
        m = getattr(_TLS, "mem", None)
        if m is None:
            m = _TLS.mem = {}
        return m

    def _sim_smem_u32(arr):
        # keyed by the memory, not the array object: each thread's view of the
        # dynamic shared memory (cuda.shared.array(0, ...)) is a new object
        k = arr.__array_interface__["data"][0]
        b = _BASES.get(k)
        if b is None:
            b = _BASES[k] = next(_NEXT) << 24              # disjoint 16 MB windows
        return _np.uint32(b)

    def _sim_copy(words):
        def cp(saddr, arr, idx):
            m = _mem()
            for q in range(words):
                m[int(saddr) + 4 * q] = _np.uint32(arr[int(idx) + q])
        return cp

    _ARRS: dict = {}
    _GWIN: dict = {}

    def _sim_gaddr(arr, idx):
        """A fake address: the array's window (bits 40 and up) and the byte offset."""
        w = _GWIN.get(id(arr))
        if w is None:
            w = _GWIN[id(arr)] = next(_NEXT)
        _ARRS[w] = arr
        return _np.int64((w << 40) + int(idx) * arr.dtype.itemsize)

    def _sim_at(g, off=0):
        """_sim_gaddr's inverse: the array and element index at fake address g +
        off bytes (element-aligned)."""
        arr = _ARRS[int(g) >> 40]
        byte = (int(g) & ((1 << 40) - 1)) + off
        assert byte % arr.dtype.itemsize == 0
        return arr, byte // arr.dtype.itemsize

    def _sim_copy_g(words):
        def cp(saddr, g):
            _sim_copy(words)(saddr, *_sim_at(g))
        return cp

    def _sim_copy_z(saddr, g, nbytes):
        if int(nbytes):
            _sim_copy_g(4)(saddr, g)
        else:
            m = _mem()
            for q in range(4):
                m[int(saddr) + 4 * q] = _np.uint32(0)

    def _sim_commit():
        pass

    def _sim_make_wait(n: int):
        def cp_wait():
            pass
        return cp_wait

    def _sim_lds(words):
        def lds(saddr):
            m = _mem()
            v = tuple(m[int(saddr) + 4 * q] for q in range(words))
            return v if words > 1 else v[0]
        return lds

    def _sim_noop():
        pass

    def _sim_ld(words):
        def ld(arr, idx):
            """words elements of arr from element idx on, as their uint32 bits."""
            v = tuple(int(_np.array([arr[int(idx) + q]], arr.dtype).view(_np.uint32)[0])
                      for q in range(words))
            return v if words > 1 else v[0]
        return ld

    def _sim_stg(arr, idx, *ws):
        """The words' bytes as arr's elements, from element idx on."""
        vals = _np.array([int(w) & 0xFFFFFFFF for w in ws], _np.uint32).view(arr.dtype)
        for q, v in enumerate(vals):
            arr[int(idx) + q] = v

    def _sim_make_stg_if(off: int):
        def stg_if(addr, val, ok):
            if ok:
                arr, i = _sim_at(addr, off)
                arr[i] = val
        return stg_if

    def _sim_pack(to16):
        def pack(lo, hi):
            return int(to16(lo)) | (int(to16(hi)) << 16)
        return pack

    def _sim_bf16(f):
        u = int(_np.array([f], _np.float32).view(_np.uint32)[0])
        if f != f:
            return ((u >> 16) | 0x40) & 0xFFFF
        return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF

    def _sim_f16(f):
        return int(_np.array([f], _np.float32).astype(_np.float16).view(_np.uint16)[0])

    stg2 = stg4 = _sim_stg
    make_stg_f32_if = _sim_make_stg_if
    pack_bf16x2, pack_f16x2 = _sim_pack(_sim_bf16), _sim_pack(_sim_f16)
    smem_u32, cp_commit, make_cp_wait = _sim_smem_u32, _sim_commit, _sim_make_wait
    pdl_wait = pdl_trigger = _sim_noop
    cp_async16_g, cp_async8_g, cp_async4_g = _sim_copy_g(4), _sim_copy_g(2), _sim_copy_g(1)
    cp_async16_z = _sim_copy_z
    gaddr = _sim_gaddr
    lds4, lds2, lds1 = _sim_lds(4), _sim_lds(2), _sim_lds(1)
    ld_g4 = _sim_ld(4)
else:
    stg2, stg4 = _make_stg(2), _make_stg(4)
    make_stg_f32_if = _make_stg_f32_if
    pack_bf16x2, pack_f16x2 = _make_pack("bf16"), _make_pack("f16")
    smem_u32, cp_commit, make_cp_wait, gaddr = _smem_u32, _cp_commit, _make_cp_wait, _gaddr
    cp_async16_z = _cp_async16_z
    pdl_wait, pdl_trigger = _make_void(PDL_OPS[0]), _make_void(PDL_OPS[1])
