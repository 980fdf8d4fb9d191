# The builder underneath: qdqrt.build / load, Engine, Context.run and profile().
import numpy as np
import pytest

import qdqrt
from conftest import QDQ_MODEL


@pytest.fixture(scope="module")
def engine():
    return qdqrt.build(str(QDQ_MODEL), precision="int8", input_shapes={"input": [8, 1, 28, 28]})


def test_engine_properties(engine):
    assert engine.precision == "int8" and engine.max_batch == 8
    [model_input] = engine.inputs
    assert (model_input.name, model_input.shape, model_input.dtype, model_input.batched) == (
        "input", [8, 1, 28, 28], np.dtype(np.float32), True)
    assert engine.outputs[0].shape_at_batch(3) == [3, 10]
    assert engine.layers and {"name", "kind", "kernel"} <= set(engine.layers[0])
    assert any(layer["kind"].startswith("q") for layer in engine.layers)  # INT8 layers


def test_context_run_and_profile(engine, images):
    context = engine.create_context(threads=1, profiling=True)
    assert context.threads == 1 and context.profiling
    outputs = context.run({"input": images[:5]})
    assert list(outputs) == ["output"] and outputs["output"].shape == (5, 10)
    profile = context.profile()
    assert len(profile) == len(engine.layers)
    assert all(layer["time_ms"] >= 0 for layer in profile)
    assert context.run({"input": images[:5]}, ["output"])["output"].shape == (5, 10)


def test_fp32_engine_agrees_mostly(engine, images):
    fp32 = qdqrt.build(QDQ_MODEL, precision="fp32", input_shapes={"input": [8, 1, 28, 28]})
    assert fp32.precision == "fp32"
    int8_logits = engine.create_context().run({"input": images[:8]})["output"]
    fp32_logits = fp32.create_context().run({"input": images[:8]})["output"]
    assert (int8_logits.argmax(1) == fp32_logits.argmax(1)).mean() >= 0.75


def test_save_load_round_trip(engine, images, tmp_path):
    path = tmp_path / "engine.qdqrt"
    engine.save(str(path))
    for loaded in (qdqrt.load(str(path)), qdqrt.load(path.read_bytes())):
        assert loaded.max_batch == 8 and loaded.version == qdqrt.__version__
        np.testing.assert_array_equal(loaded.create_context().run({"input": images[:2]})["output"],
                                      engine.create_context().run({"input": images[:2]})["output"])


def test_build_errors():
    with pytest.raises(ValueError, match="precision"):
        qdqrt.build(str(QDQ_MODEL), precision="int4")
    with pytest.raises(ValueError, match="max_isa"):
        qdqrt.build(str(QDQ_MODEL), max_isa="sse2")
    with pytest.raises(qdqrt.Error):
        qdqrt.load(b"QDQRTENG but nothing else")
    scalar = qdqrt.build(str(QDQ_MODEL), max_isa="scalar")
    assert scalar.isa == "scalar"
