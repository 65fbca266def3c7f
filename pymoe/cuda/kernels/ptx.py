"""Inline-PTX intrinsics (docs/gpu.md section 4): tensor-core mma.sync, byte permutes,
packed 16-bit multiplies and fp16 bit conversions.

Each is a Numba ``@intrinsic`` that emits one PTX instruction through llvmlite's
``InlineAsm``.  Numba's CUDA simulator cannot run inline PTX, so kernels using
these run on a GPU only (the simulator runs the plain GEMM, see gemm.py).

    prmt(a, b, sel)            prmt.b32: bytes of the 8-byte pool {b:a} picked by
                               the low 4 selector nibbles of sel
    mul2(a, b, dtype)          exact-product packed multiply (bf16x2 via fma with
                               -0, f16x2 via mul.rn); a, b, result: uint32
    mma(a0..a3, b0, b1, c0..c3, dtype) -> (d0, d1, d2, d3)
                               mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}
    h2f(bits) / f2h(f)         fp16 bits <-> float32 (cvt, round to nearest even)
    ld_stream4(arr, i)         16 bytes at &arr[i] (any element type) as 4 uint32:
                               ld.global.nc.L1::no_allocate.v4 (weights, read once)
    ld_nc2(arr, i) / ld_nc1    8 / 4 bytes at &arr[i]: ld.global.nc.v2 / .u32
                               (activations and scales, cached)
The caller guarantees the alignment (16 / 8 / 4 bytes) and that the data is not
written while the kernel runs (the .nc path is not coherent with stores).
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.cuda.extending import intrinsic

__all__ = ["prmt", "mul2_bf16", "mul2_f16", "mma_bf16", "mma_f16", "h2f", "f2h",
           "ld_stream4", "ld_nc2", "ld_nc1"]

_I32 = ir.IntType(32)
_I16 = ir.IntType(16)
_F32 = ir.FloatType()


def _u32(context, builder, typ, val):
    """Any integer argument as an i32 register value."""
    return context.cast(builder, val, typ, types.uint32)


@intrinsic
def prmt(typingctx, a, b, sel):
    sig = types.uint32(types.uint32, types.uint32, types.uint32)

    def codegen(context, builder, signature, args):
        vals = [_u32(context, builder, t, v) for t, v in zip(signature.args, args)]
        fnty = ir.FunctionType(_I32, [_I32, _I32, _I32])
        asm = ir.InlineAsm(fnty, "prmt.b32 $0, $1, $2, $3;", "=r,r,r,r")
        return builder.call(asm, vals)

    return sig, codegen


def _make_mul2(text, extra=()):
    """extra: constant i32 inputs appended after a and b (PTX takes no packed
    immediates)."""
    @intrinsic
    def mul2(typingctx, a, b):
        sig = types.uint32(types.uint32, types.uint32)

        def codegen(context, builder, signature, args):
            vals = [_u32(context, builder, t, v) for t, v in zip(signature.args, args)]
            vals += [ir.Constant(_I32, c) for c in extra]
            fnty = ir.FunctionType(_I32, [_I32] * len(vals))
            cons = ",".join(["=r"] + ["r"] * len(vals))
            return builder.call(ir.InlineAsm(fnty, text, cons), vals)

        return sig, codegen
    return mul2


# a*b exactly when the product fits (it does for FP4 x E4M3): fma with -0.0 keeps
# the sign of a zero product, as a multiply would (mul.bf16x2 is sm_90 only).
mul2_bf16 = _make_mul2("fma.rn.bf16x2 $0, $1, $2, $3;", extra=(0x80008000 - (1 << 32),))
mul2_f16 = _make_mul2("mul.rn.f16x2 $0, $1, $2;")


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
            aryty, idxty = signature.args
            ary = context.make_array(aryty)(context, builder, value=args[0])
            i = context.cast(builder, args[1], idxty, types.int64)
            addr = builder.ptrtoint(builder.gep(ary.data, [i]), ir.IntType(64))
            rty = ir.LiteralStructType([_I32] * n) if n > 1 else _I32
            res = builder.call(ir.InlineAsm(ir.FunctionType(rty, [ir.IntType(64)]), text,
                                            cons, side_effect=False), [addr])
            if n == 1:
                return res
            return context.make_tuple(builder, ret,
                                      [builder.extract_value(res, k) for k in range(n)])

        return sig, codegen
    return ld


ld_stream4 = _make_ld(4, "ld.global.nc.L1::no_allocate.v4.u32")
ld_nc2 = _make_ld(2, "ld.global.nc.v2.u32")
ld_nc1 = _make_ld(1, "ld.global.nc.u32")
