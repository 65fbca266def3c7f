"""pymoe.io: the safetensors reader/writer and the gpt-oss / ModelOpt /
compressed-tensors layouts, checked against decodes written here (ml_dtypes)."""
import json
import os
import struct
import subprocess
import sys
from dataclasses import replace

import ml_dtypes
import numpy as np
import pytest

import pymoe
import pymoe.io
from pymoe.io import (GPT_OSS, MODELOPT, LayoutNames, load_model_layers,
                      load_moe_layer, open_checkpoint, save_safetensors, save_sharded)
from pymoe.ref.dequant import dequant
from pymoe.testing import assert_close
from tests.io.layout_writers import (bf16_bits, gpt_oss_expected, gpt_oss_layer, nvfp4_expected,
                            nvfp4_expert_tensors)
from tests.oracle import moe_forward

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PFX = "model.layers.0.mlp.experts."


def write(tmp_path, tensors, name="model.safetensors"):
    path = tmp_path / name
    save_safetensors(path, tensors)
    return path


def memmap_backed(a) -> bool:
    while a is not None:
        if isinstance(a, np.memmap):
            return True
        a = getattr(a, "base", None)
    return False


def assert_same_experts(a: pymoe.ExpertWeights, b: pymoe.ExpertWeights):
    for f in ("format", "activation", "w13_layout", "num_experts", "hidden_size",
              "intermediate_size", "swiglu_limit", "swiglu_alpha"):
        assert getattr(a, f) == getattr(b, f), f
    aa, bb = a.arrays(), b.arrays()
    assert aa.keys() == bb.keys()
    for k in aa:
        assert aa[k].dtype == bb[k].dtype and aa[k].shape == bb[k].shape, k
        np.testing.assert_array_equal(aa[k].view(np.uint8), bb[k].view(np.uint8), err_msg=k)


# ----------------------------------------------------------------------------- reader

def test_dtypes_round_trip_and_views(tmp_path):
    rng = np.random.default_rng(0)
    f32 = rng.standard_normal((3, 5)).astype(np.float32)
    t = {
        "u8": rng.integers(0, 256, (4, 7), dtype=np.uint8),
        "i32": np.arange(-6, 6, dtype=np.int32).reshape(3, 4),
        "i64": np.arange(5, dtype=np.int64),
        "f32": f32, "f16": f32.astype(np.float16), "f64": f32.astype(np.float64),
        "bool": np.array([True, False, True]),
        "bf16": (bf16_bits(f32), "BF16"),
        "bf16_ml": f32.astype(ml_dtypes.bfloat16),                 # dtype inferred
        "e4m3": (rng.integers(0, 256, (2, 8), dtype=np.uint8), "F8_E4M3"),
        "e4m3_ml": f32.astype(ml_dtypes.float8_e4m3fn),
        "e8m0": (np.arange(256, dtype=np.uint8), "F8_E8M0"),
        "e5m2": (np.arange(4, dtype=np.uint8), "F8_E5M2"),
        "scalar": np.float32(3.5).reshape(()),
        "empty": np.zeros((0, 4), np.float32),
    }
    ck = open_checkpoint(write(tmp_path, t))
    assert sorted(ck.keys()) == sorted(t)
    want_dtype = {"bf16": "BF16", "bf16_ml": "BF16", "e4m3": "F8_E4M3", "e4m3_ml": "F8_E4M3",
                  "e8m0": "F8_E8M0", "e5m2": "F8_E5M2", "bool": "BOOL"}
    for name, v in t.items():
        arr = v[0] if isinstance(v, tuple) else v
        got = ck.get(name)
        assert got.shape == arr.shape, name
        assert got.dtype.itemsize == arr.dtype.itemsize, name
        assert got.tobytes() == arr.tobytes(), name
        if name in want_dtype:
            assert ck.info(name).dtype == want_dtype[name]
        if arr.size:
            assert memmap_backed(got) and not got.flags.writeable, name
    assert ck.get("bf16").dtype == np.uint16 and ck.get("e4m3").dtype == np.uint8
    # BF16 widens exactly to float32; F16 too
    for name, dt in (("bf16", ml_dtypes.bfloat16), ("f16", np.float16)):
        np.testing.assert_array_equal(ck.get_float32(name), f32.astype(dt).astype(np.float32))
    with pytest.raises(ValueError, match=r"tensor 'u8': dtype U8, expected one of"):
        ck.get_float32("u8")
    # every tensor is a view of one memmap of the data region
    f = ck._file(ck.weight_map["u8"])
    assert np.shares_memory(ck.get("u8"), f.data) and np.shares_memory(ck.get("f32"), f.data)


def test_interop_with_the_safetensors_package(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    rng = np.random.default_rng(1)
    t = {"a": rng.integers(0, 256, (3, 9), dtype=np.uint8),
         "b": rng.random((2, 3)).astype(np.float32),
         "c": np.arange(6, dtype=np.int32), "d": rng.random(5).astype(np.float16)}
    st.save_file(t, str(tmp_path / "theirs.safetensors"), metadata={"format": "np"})
    ck = open_checkpoint(tmp_path / "theirs.safetensors")
    for k in t:
        np.testing.assert_array_equal(ck.get(k), t[k])
    assert ck._file(ck.weight_map["a"]).metadata == {"format": "np"}
    save_safetensors(tmp_path / "ours.safetensors", t, metadata={"k": "v"})
    back = st.load_file(str(tmp_path / "ours.safetensors"))
    for k in t:
        np.testing.assert_array_equal(back[k], t[k])


def _raw_file(path, header: dict, data: bytes = b""):
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)
    return path


@pytest.mark.parametrize("header,data,match", [
    (None, b"\x01\x02", r"too short for a safetensors header"),
    ({"x": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}}, b"\0\0", r"tensor 'x': "
     r"data_offsets \[0, 4\] outside the data region of 2 bytes"),
    ({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}, b"\0" * 4,
     r"tensor 'x': 4 bytes for dtype F32 shape \[2\] \(expected 8\)"),
    ({"x": {"dtype": "U8", "shape": "oops", "data_offsets": [0, 1]}}, b"\0",
     r"tensor 'x': malformed header entry"),
], ids=["short", "offsets", "size", "malformed"])
def test_bad_files(tmp_path, header, data, match):
    p = tmp_path / "bad.safetensors"
    if header is None:
        p.write_bytes(data)
    else:
        _raw_file(p, header, data)
    with pytest.raises(ValueError, match=match):
        open_checkpoint(p)


def test_bad_header_length_and_json(tmp_path):
    p = tmp_path / "a.safetensors"
    p.write_bytes(struct.pack("<Q", 1 << 40) + b"{}")
    with pytest.raises(ValueError, match="header length 1099511627776 exceeds the file"):
        open_checkpoint(p)
    p.write_bytes(struct.pack("<Q", 3) + b"{x}")
    with pytest.raises(ValueError, match="header is not valid JSON"):
        open_checkpoint(p)


def test_unknown_dtype_is_named_on_read(tmp_path):
    p = _raw_file(tmp_path / "f4.safetensors", {
        "packed.f4": {"dtype": "F4", "shape": [8], "data_offsets": [0, 4]},
        "ok": {"dtype": "U8", "shape": [2], "data_offsets": [4, 6]}}, bytes(range(6)))
    ck = open_checkpoint(p)
    assert ck.get("ok").tolist() == [4, 5]              # the rest of the file stays readable
    with pytest.raises(ValueError, match=r"tensor 'packed.f4' in .*: dtype 'F4' is not supported"):
        ck.get("packed.f4")
    with pytest.raises(ValueError, match=r"missing tensor 'nope'"):
        ck.get("nope")
    with pytest.raises(ValueError, match=r"tensor 'w': dtype 'F4' cannot be written"):
        save_safetensors(tmp_path / "x.safetensors", {"w": (np.zeros(2, np.uint8), "F4")})
    with pytest.raises(ValueError, match=r"tensor 'w': array dtype float32 has 4-byte items, BF16"):
        save_safetensors(tmp_path / "x.safetensors", {"w": (np.zeros(2, np.float32), "BF16")})


# ----------------------------------------------------------------------------- gpt-oss

E, H, I = 4, 96, 64          # H != I catches transposed blocks; 3 and 2 MXFP4 groups


def test_gpt_oss_round_trip(tmp_path):
    t = gpt_oss_layer(np.random.default_rng(2), E, H, I, special_scales=True)
    with pytest.warns(pymoe.NaNScaleWarning, match=r"w13_scales: 1 NaN scale byte"):
        ew = load_moe_layer(write(tmp_path, t), 0, layout="gpt-oss")
    want = gpt_oss_expected(t)
    assert (ew.format, ew.activation, ew.w13_layout) == ("mxfp4", "swigluoai", "interleaved")
    assert (ew.num_experts, ew.hidden_size, ew.intermediate_size) == (E, H, I)
    assert (ew.swiglu_alpha, ew.swiglu_limit) == (1.702, 7.0)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(dequant(ew, "w13"), want["w13"].astype(np.float32))
        np.testing.assert_array_equal(dequant(ew, "w2"), want["w2"].astype(np.float32))
    # biases: bf16 bits widened exactly, gate rows then up rows
    np.testing.assert_array_equal(ew.w13_bias, want["b13"].astype(np.float32))
    np.testing.assert_array_equal(ew.w2_bias, want["b2"].astype(np.float32))
    # expert 0, row 0 (gate): groups with bytes 0 (2^-127), 127 (1.0), 255 (NaN)
    row = dequant(ew, "w13", 0)[0]
    assert np.isnan(row[64:96]).all() and not np.isnan(row[:64]).any()


def test_gpt_oss_forward_matches_float64(tmp_path):
    rng = np.random.default_rng(3)
    t = gpt_oss_layer(rng, E, H, I, layer=1)
    ew = load_moe_layer(write(tmp_path, t), 1)               # layout="auto"
    T, k = 24, 2
    x = (rng.standard_normal((T, H)) * 2).astype(ml_dtypes.bfloat16)
    router = t["model.layers.1.mlp.router.weight"][0].view(ml_dtypes.bfloat16).astype(np.float32)
    w, ids = pymoe.route_topk(x.astype(np.float32) @ router.T, k=k)
    y = pymoe.fused_moe(x, ew, w, ids, backend="ref")
    want = gpt_oss_expected(t, layer=1)
    y64 = moe_forward(x.astype(np.float64), want["w13"], want["w2"], w.astype(np.float64), ids,
                      activation="swigluoai", b13=want["b13"], b2=want["b2"], limit=7.0,
                      alpha=1.702)
    # the clamp must bite somewhere, or this test says nothing about it
    h1 = np.einsum("th,eoh->teo", x.astype(np.float64), want["w13"]) + want["b13"]
    assert (np.abs(h1) > 7.0).any()
    assert_close(y.astype(np.float32), y64, dtype="bfloat16", what="gpt-oss layer vs float64")


def test_gpt_oss_views_reach_prepare_weights(tmp_path, monkeypatch):
    t = gpt_oss_layer(np.random.default_rng(4), E, H, I)
    seen = {}
    real = pymoe.io.layouts.prepare_weights

    def spy(w13, w2, **kw):
        seen.update(w13=w13, w2=w2, w13_scales=kw["w13_scales"], w2_scales=kw["w2_scales"])
        return real(w13, w2, **kw)

    monkeypatch.setattr(pymoe.io.layouts, "prepare_weights", spy)
    ck = open_checkpoint(write(tmp_path, t))
    load_moe_layer(ck, 0)
    data = ck._file(ck.weight_map[PFX + "down_proj_blocks"]).data
    for k, a in seen.items():       # packed bytes and scales: no copy before prepare_weights
        assert memmap_backed(a) and np.shares_memory(a, data), k


def test_sharded_index_and_directory(tmp_path):
    rng = np.random.default_rng(5)
    t0, t1 = gpt_oss_layer(rng, E, H, I, layer=0), gpt_oss_layer(rng, E, H, I, layer=1)
    single = write(tmp_path, {**t0, **t1}, "single.safetensors")
    names = sorted({**t0, **t1})
    shards = [{n: {**t0, **t1}[n] for n in names[i::3]} for i in range(3)]   # layers split
    index = save_sharded(tmp_path / "sharded", shards)
    assert os.path.basename(index) == "model.safetensors.index.json"
    ck = open_checkpoint(tmp_path / "sharded")
    assert len(set(ck.weight_map.values())) == 3 and len(ck) == len(names)
    for layer in (0, 1):
        ref = load_moe_layer(single, layer)
        assert_same_experts(load_moe_layer(tmp_path / "sharded", layer), ref)
        assert_same_experts(load_moe_layer(index, layer), ref)
    # a directory without an index: the union of its files
    os.remove(index)
    assert_same_experts(load_moe_layer(tmp_path / "sharded", 1), load_moe_layer(single, 1))
    # an index naming a shard that is gone
    save_sharded(tmp_path / "broken", shards)
    os.remove(tmp_path / "broken" / "model-00002-of-00003.safetensors")
    with pytest.raises(ValueError,
                       match=r"shard .*model-00002-of-00003.safetensors .* does not exist"):
        load_moe_layer(tmp_path / "broken", 0)


def test_load_model_layers_progress(tmp_path, capsys, monkeypatch):
    rng = np.random.default_rng(6)
    t = {**gpt_oss_layer(rng, E, 64, 64, layer=0), **gpt_oss_layer(rng, E, 64, 64, layer=2)}
    p = write(tmp_path, t)
    layers = load_model_layers(p)                            # layers found from the names
    assert list(layers) == [0, 2]
    assert "8/8" in capsys.readouterr().err                  # tqdm counts experts
    one = load_model_layers(p, [2], layout=GPT_OSS, progress=False)
    assert list(one) == [2] and capsys.readouterr().err == ""
    assert_same_experts(one[2], layers[2])
    monkeypatch.setitem(sys.modules, "tqdm", None)            # tqdm missing: no bar, no error
    assert list(load_model_layers(p)) == [0, 2] and capsys.readouterr().err == ""


# ----------------------------------------------------------------------------- NVFP4

EN, HN, IN = 3, 80, 48       # prime E; H = 80 is not a multiple of 32 (prepared K pads)


@pytest.mark.parametrize("projs,pad,input_scale", [
    (("w1", "w3", "w2"), (0, 0), True),
    (("gate_proj", "up_proj", "down_proj"), (16, 3), False),     # padded scale grids, W4A16
], ids=["w1w3w2", "gate_up_down-padded"])
def test_modelopt_round_trip(tmp_path, projs, pad, input_scale):
    rng = np.random.default_rng(7)
    t = nvfp4_expert_tensors(rng, EN, HN, IN, projs=projs, pad=pad, input_scale=input_scale)
    ew = load_moe_layer(write(tmp_path, t), 0, layout="modelopt", num_experts=EN)
    assert (ew.format, ew.activation, ew.num_experts, ew.hidden_size,
            ew.intermediate_size) == ("nvfp4", "silu", EN, HN, IN)
    want = nvfp4_expected(t, EN, HN, IN, projs=projs)
    np.testing.assert_array_equal(dequant(ew, "w13"), want["w13"].astype(np.float32))
    np.testing.assert_array_equal(dequant(ew, "w2"), want["w2"].astype(np.float32))
    g = np.array([[t[f"{PFX}{e}.{p}.weight_scale_2"][0] for p in projs] for e in range(EN)])
    np.testing.assert_array_equal(ew.w13_global, g[:, :2])          # gate and up kept apart
    np.testing.assert_array_equal(ew.w2_global, g[:, 2])
    assert pymoe.io.detect_layout(tmp_path / "model.safetensors").name == "modelopt"


@pytest.mark.parametrize("power_of_two", [True, False], ids=["g=2^n", "general-g"])
def test_compressed_tensors_equals_modelopt_with_reciprocal(tmp_path, power_of_two):
    rng = np.random.default_rng(8)
    if power_of_two:
        g = np.ldexp(1.0, rng.integers(-3, 4, (EN, 3))).astype(np.float32)
    else:
        g = rng.uniform(0.3, 3.0, (EN, 3)).astype(np.float32)
    ct_names = dict(projs=("gate_proj", "up_proj", "down_proj"), weight="weight_packed",
                    glob="weight_global_scale")
    ct = nvfp4_expert_tensors(np.random.default_rng(9), EN, HN, IN, globals_=g, pad=(0, 2),
                              **ct_names)
    recip = (np.float32(1.0) / g).astype(np.float32)       # as the loader inverts: float32
    mo = nvfp4_expert_tensors(np.random.default_rng(9), EN, HN, IN, globals_=recip, pad=(0, 2),
                              projs=ct_names["projs"])
    ew_ct = load_moe_layer(write(tmp_path, ct, "ct.safetensors"), 0)          # auto
    ew_mo = load_moe_layer(write(tmp_path, mo, "mo.safetensors"), 0, layout=MODELOPT)
    assert pymoe.io.detect_layout(tmp_path / "ct.safetensors").name == "compressed-tensors"
    assert_same_experts(ew_ct, ew_mo)                       # bit for bit
    # against an independent decode: e2m1 * e4m3 / g
    want = nvfp4_expected(ct, EN, HN, IN, reciprocal=True, **ct_names)
    for which in ("w13", "w2"):
        if power_of_two:    # 1/g exact: equal element for element
            np.testing.assert_array_equal(dequant(ew_ct, which), want[which].astype(np.float32))
        else:               # fl(1/g) then one product: within 1 ulp of e2m1 * e4m3 / g
            np.testing.assert_allclose(dequant(ew_ct, which), want[which], rtol=2.5e-7, atol=0)


def test_custom_layouts(tmp_path):
    """Mixtral's prefix (found by auto), a relu2 per-expert layout, a stacked NVFP4 one."""
    rng = np.random.default_rng(10)
    mix = "model.layers.{layer}.block_sparse_moe.experts."
    t = nvfp4_expert_tensors(rng, 2, 64, 32, prefix=mix)
    ew = load_moe_layer(write(tmp_path, t, "mix.safetensors"), 0)
    want = nvfp4_expected(t, 2, 64, 32, prefix=mix)
    np.testing.assert_array_equal(dequant(ew, "w13"), want["w13"].astype(np.float32))
    # relu2 (Nemotron-H style): up_proj and down_proj only
    relu2 = replace(MODELOPT, name="relu2", activation="relu2", gate=(), up=("up_proj",),
                    down=("down_proj",))
    t = nvfp4_expert_tensors(rng, 2, 64, 32, projs=("up_proj", "up_proj", "down_proj"))
    ew = load_moe_layer(write(tmp_path, t, "relu2.safetensors"), 0, layout=relu2)
    assert ew.fc1_rows == 32
    want = nvfp4_expected(t, 2, 64, 32, projs=("up_proj", "up_proj", "down_proj"))
    np.testing.assert_array_equal(dequant(ew, "w13"), want["w13"][:, 32:].astype(np.float32))
    # stacked NVFP4 with one global per expert and projection
    stacked = LayoutNames(name="stacked-nv", format="nvfp4", w13="w13", w13_scales="s13",
                          w13_global="g13", w2="w2", w2_scales="s2", w2_global="g2")
    q13, s13, g13 = pymoe.quantize_nvfp4(rng.standard_normal((2, 64, 64)).astype(np.float32))
    q2, s2, g2 = pymoe.quantize_nvfp4(rng.standard_normal((2, 64, 32)).astype(np.float32))
    st = {PFX + "w13": q13, PFX + "s13": (s13, "F8_E4M3"), PFX + "g13": g13,
          PFX + "w2": q2, PFX + "s2": (s2, "F8_E4M3"), PFX + "g2": g2}
    ew = load_moe_layer(write(tmp_path, st, "st.safetensors"), 0, layout=stacked)
    assert_same_experts(ew, pymoe.prepare_weights(q13, q2, format="nvfp4", w13_scales=s13,
                                                  w2_scales=s2, w13_global=g13, w2_global=g2))
    with pytest.raises(ValueError, match=r"w13_global, w2_global must be set"):
        LayoutNames(format="nvfp4", w13="a", w13_scales="b", w2="c", w2_scales="d")
    with pytest.raises(ValueError, match=r"gate must be set for a per-expert"):
        replace(MODELOPT, gate=())


# ----------------------------------------------------------------------------- bad checkpoints

def _gpt(mutate):
    t = gpt_oss_layer(np.random.default_rng(11), E, 64, 64)
    mutate(t)
    return t


def _mo(mutate, E_=3):
    t = nvfp4_expert_tensors(np.random.default_rng(12), E_, 64, 32)
    mutate(t)
    return t


def _set(name, value):
    return lambda t: t.__setitem__(PFX + name, value)


def _drop(name):
    return lambda t: t.pop(PFX + name)


def _reshape(name, fn):
    return lambda t: t.__setitem__(PFX + name, (fn(t[PFX + name][0]), t[PFX + name][1]))


BAD = [
    ("gpt-oss", _gpt(_drop("down_proj_scales")), {},
     r"missing tensor 'model.layers.0.mlp.experts.down_proj_scales'"),
    ("gpt-oss", _gpt(_reshape("gate_up_proj_bias", lambda a: a[:, :-1])), {},
     r"tensor '.*gate_up_proj_bias': shape \[4, 127\], expected \[4, 128\]"),
    ("gpt-oss", _gpt(_reshape("gate_up_proj_blocks", lambda a: a[:, :, :1])), {},
     r"tensor '.*gate_up_proj_blocks': shape \[4, 128, 1, 16\], expected \[4, 128, 2, 16\]"),
    ("gpt-oss", _gpt(_reshape("down_proj_scales", lambda a: a[..., :1])), {},
     r"tensor '.*down_proj_scales': shape \[4, 64, 1\], expected \[4, 64, 2\]"),
    ("gpt-oss", _gpt(_set("gate_up_proj_blocks", np.zeros((4, 128, 2, 16), np.float32))), {},
     r"tensor '.*gate_up_proj_blocks': dtype F32, expected U8"),
    ("gpt-oss", _gpt(_reshape("down_proj_blocks", lambda a: a[0, 0])), {},
     r"tensor '.*down_proj_blocks': shape \[2, 16\], expected 3 or 4 dims"),
    ("gpt-oss", _gpt(_set("down_proj_bias", np.zeros((4, 64), np.int32))), {},
     r"tensor '.*down_proj_bias': dtype I32, expected BF16 or F16 or F32"),
    ("gpt-oss", _gpt(_reshape("down_proj_blocks", lambda a: a[:3])), {},
     r"tensor '.*down_proj_blocks': 3 experts .* but '.*gate_up_proj_blocks' has 4: "
     r"inconsistent expert count"),
    ("gpt-oss", _gpt(_reshape("down_proj_bias", lambda a: a[:3])), {},
     r"tensor '.*down_proj_bias': 3 experts .*inconsistent expert count"),
    ("gpt-oss", _gpt(lambda t: None), dict(num_experts=8),
     r"tensor '.*gate_up_proj_blocks': 4 experts \(shape \[4, 128, 2, 16\]\), "
     r"expected num_experts=8"),
    ("modelopt", _mo(_drop("2.w3.weight")), {},
     r"missing tensor 'model.layers.0.mlp.experts.2.w3.weight'"),
    ("modelopt", _mo(_drop("1.w2.weight_scale_2")), {},
     r"missing tensor '.*experts.1.w2.weight_scale_2'"),
    ("modelopt", _mo(_set("1.w1.weight_scale", (np.zeros((32, 4), np.float32)))), {},
     r"tensor '.*experts.1.w1.weight_scale': dtype F32, expected F8_E4M3 or U8"),
    ("modelopt", _mo(_reshape("0.w2.weight_scale", lambda a: a[:, :1])), {},
     r"tensor '.*experts.0.w2.weight_scale': shape \[64, 1\], expected \[64, 2\] \(or larger"),
    ("modelopt", _mo(_reshape("2.w1.weight", lambda a: a[:16])), {},
     r"tensor '.*experts.2.w1.weight': shape \[16, 32\], expected \[32, 32\]"),
    ("modelopt", _mo(_reshape("1.w3.weight_scale_2", lambda a: np.stack([a, a]))), {},
     r"tensor '.*experts.1.w3.weight_scale_2': shape \[2\], expected a scalar"),
    ("modelopt", _mo(lambda t: None, E_=4), dict(num_experts=3),
     r"tensor '.*experts.3\..*': expert 3, but num_experts=3: inconsistent expert count"),
    ("modelopt", _mo(lambda t: None), dict(num_experts=4),
     r"missing tensor '.*experts.3.w1.weight'"),
    ("modelopt", _mo(lambda t: [t.pop(k) for k in list(t) if ".1." in k]), {},
     r"missing tensor '.*experts.1.w1.weight'"),                # a gap in the expert ids
    ("compressed-tensors", nvfp4_expert_tensors(
        np.random.default_rng(13), 2, 64, 32, weight="weight_packed",
        glob="weight_global_scale", globals_=np.zeros((2, 3), np.float32)), {},
     r"tensor '.*experts.0.w1.weight_global_scale': global scale \[0.0\] cannot be inverted"),
    ("auto", {"model.layers.0.mlp.gate_proj.weight": np.zeros((4, 4), np.float32)}, {},
     r"layer 0: no known layout \(gpt-oss, modelopt, compressed-tensors\) under prefix"),
]


@pytest.mark.parametrize("layout,tensors,kw,match", BAD, ids=[
    f"{i}-{b[0]}" for i, b in enumerate(BAD)])
def test_bad_checkpoints(tmp_path, layout, tensors, kw, match):
    p = write(tmp_path, tensors)
    with pytest.raises(ValueError, match=match):
        load_moe_layer(p, 0, layout=layout, **kw)


def test_bad_arguments(tmp_path):
    p = write(tmp_path, gpt_oss_layer(np.random.default_rng(14), E, 64, 64))
    with pytest.raises(ValueError, match=r"layout='mxfp4': expected 'auto', one of"):
        load_moe_layer(p, 0, layout="mxfp4")
    with pytest.raises(ValueError,
                       match=r"missing tensor 'model.layers.5.mlp.experts.gate_up_proj_blocks'"):
        load_moe_layer(p, 5, layout="gpt-oss")
    with pytest.raises(ValueError, match=r"no such file or directory"):
        load_moe_layer(tmp_path / "nope.safetensors", 0)
    with pytest.raises(TypeError, match=r"checkpoint: int, expected a path"):
        load_moe_layer(3, 0)


# ----------------------------------------------------------------------------- example

def test_example_load_gpt_oss_layer():
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "load_gpt_oss_layer.py")],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "rel_l2" in r.stdout and "OK" in r.stdout


# ---------------------------------------------------------------- hardening (issue 13)

def _config(path, **cfg):
    import json
    (path / "config.json").write_text(json.dumps(cfg))


def test_config_json_names_the_expert_count(tmp_path):
    """A checkpoint whose last expert is missing does not load one expert short."""
    t = nvfp4_expert_tensors(np.random.default_rng(21), 4, 64, 32)
    for k in [k for k in t if ".3." in k]:
        t.pop(k)                                            # expert 3 of 4 is gone
    write(tmp_path, t)
    _config(tmp_path, num_local_experts=4)
    with pytest.raises(ValueError, match=r"missing tensor '.*experts.3.w1.weight': .*"
                                         r"config.json: num_local_experts=4 but the "
                                         r"checkpoint holds experts up to 2 only"):
        load_moe_layer(tmp_path, 0, layout="modelopt")
    _config(tmp_path, text_config={"n_routed_experts": 3})        # DeepSeek's key, nested
    assert load_moe_layer(tmp_path, 0, layout="modelopt").num_experts == 3
    assert load_moe_layer(tmp_path, 0, layout="modelopt", num_experts=3).num_experts == 3


def test_config_json_checks_stacked_layouts_too(tmp_path):
    write(tmp_path, gpt_oss_layer(np.random.default_rng(22), E, 64, 64))
    _config(tmp_path, num_experts=E + 1)                    # Qwen3-MoE's key
    with pytest.raises(ValueError, match=rf"{E} experts .*expected .*config.json: "
                                         rf"num_experts={E + 1}"):
        load_moe_layer(tmp_path, 0, layout="gpt-oss")
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(ValueError, match="config.json: not a readable JSON config"):
        load_moe_layer(tmp_path, 0, layout="gpt-oss")


def test_transposed_gpt_oss_down_proj_is_blamed_on_down_proj(tmp_path):
    t = gpt_oss_layer(np.random.default_rng(23), E, H, I)        # H != I
    k = PFX + "down_proj_blocks"
    t[k] = (np.zeros((E, I, H // 32, 16), np.uint8), "U8")     # [E, I, H/32, 16]
    with pytest.raises(ValueError, match=r"tensor '.*down_proj_blocks': shape "
                                         rf"\[{E}, {I}, {H // 32}, 16\], expected "
                                         rf"\[{E}, {H}, {I // 32}, 16\].*looks transposed"):
        load_moe_layer(write(tmp_path, t), 0, layout="gpt-oss")


def test_int32_packed_weight_is_a_dtype_error(tmp_path):
    t = nvfp4_expert_tensors(np.random.default_rng(24), 2, 64, 32)
    k = PFX + "0.w3.weight"
    t[k] = (t[k][0].view(np.int32), "I32")                   # 4 bytes per element
    with pytest.raises(ValueError, match=r"tensor '.*experts.0.w3.weight': dtype I32, "
                                         r"expected U8 \(packed FP4 pairs\)"):
        load_moe_layer(write(tmp_path, t), 0, layout="modelopt")


@pytest.mark.parametrize("fmt,byte", [("mxfp4", 255), ("nvfp4", 0x7F), ("nvfp4", 0xFF)])
def test_nan_scale_in_a_used_group_warns(fmt, byte):
    rng = np.random.default_rng(25)
    g = 32 if fmt == "mxfp4" else 16
    q13 = rng.integers(0, 256, (2, 128, 32), dtype=np.uint8)      # H = 64, I = 64
    q2 = rng.integers(0, 256, (2, 64, 32), dtype=np.uint8)
    s13 = np.full((2, 128, 64 // g), 0x38 if fmt == "nvfp4" else 120, np.uint8)
    s2 = np.full((2, 64, 64 // g), 0x38 if fmt == "nvfp4" else 120, np.uint8)
    kw = dict(format=fmt, w13_scales=s13, w2_scales=s2)
    if fmt == "nvfp4":
        kw.update(w13_global=np.ones(2, np.float32), w2_global=np.ones(2, np.float32))
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pymoe.prepare_weights(q13, q2, **kw)                # clean scales: no warning
    s2[1, 5, 1] = byte
    with pytest.warns(pymoe.NaNScaleWarning, match=r"w2_scales: 1 NaN scale byte.*\[1, 5, 1\]"):
        ew = pymoe.prepare_weights(q13, q2, **kw)
    from pymoe.ref.dequant import dequant as deq
    assert np.isnan(deq(ew, "w2", 1)[5, g:2 * g]).all()        # the policy: NaN per spec
