// qdqrt.quantization: ONNX Runtime's quantize_static with its enums and CalibrationDataReader, so
// an ORT PTQ script switches by its imports. The work is qdqrt.calibrate's (tools/calibration/):
// ORT's arguments map onto its method, placement, activation type, per-channel weights and
// excluded nodes. Written in Python (ORT's API is Python classes and enums), run at import.
#include <pybind11/eval.h>

#include "python/bindings.h"

namespace qdqrt::python {

namespace {

constexpr const char* kQuantizationSource = R"PY(
import abc as _abc
import enum as _enum
import os as _os


class QuantFormat(_enum.Enum):
    QOperator = 0
    QDQ = 1


class QuantType(_enum.Enum):
    QInt8 = 0
    QUInt8 = 1
    QFLOAT8E4M3FN = 2
    QInt16 = 3
    QUInt16 = 4
    QInt4 = 5
    QUInt4 = 6


class CalibrationMethod(_enum.Enum):
    MinMax = 0
    Entropy = 1
    Percentile = 2
    Distribution = 3


class CalibrationDataReader(metaclass=_abc.ABCMeta):
    """ONNX Runtime's base class: get_next() returns a feed dict {input name: ndarray}, then None."""

    @classmethod
    def __subclasshook__(cls, subclass):
        return hasattr(subclass, "get_next") and callable(subclass.get_next) or NotImplemented

    @_abc.abstractmethod
    def get_next(self) -> dict:
        raise NotImplementedError

    def __iter__(self):
        return self

    def __next__(self):
        result = self.get_next()
        if result is None:
            raise StopIteration
        return result

    def __len__(self):
        raise NotImplementedError

    def set_range(self, start_index: int, end_index: int):
        raise NotImplementedError


_METHODS = {CalibrationMethod.MinMax: "max", CalibrationMethod.Entropy: "entropy",
            CalibrationMethod.Percentile: "percentile"}


def quantize_static(model_input, model_output, calibration_data_reader, quant_format=QuantFormat.QDQ,
                    op_types_to_quantize=None, per_channel=False, reduce_range=False,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8, nodes_to_include=None,
                    nodes_to_exclude=None, use_external_data_format=False,
                    calibrate_method=CalibrationMethod.MinMax, calibration_providers=None, extra_options=None):
    """ONNX Runtime's quantize_static, done by qdqrt.calibrate: writes a QDQ model to model_output.

    Symmetric quantization: int8 activations with zero-point 0 (TensorRT's placement: Conv, MatMul,
    Gemm inputs and residual Adds) or uint8 with zero-point 128 (ONNX Runtime's placement: also
    pools, Concat, Add/Mul and activations); int8 weights, per channel or per tensor.
    extra_options: CalibPercentile (99.999), QdqrtPlacement ("tensorrt" or "all") and
    QdqrtCalibrateInputs; other ORT keys are accepted. reduce_range and use_external_data_format
    change nothing here (VNNI needs no reduced range; models are written whole)."""
    from qdqrt import calibrate as _calibrate

    extra_options = dict(extra_options or {})
    if QuantFormat(quant_format) != QuantFormat.QDQ:
        raise ValueError("qdqrt runs QDQ models: quant_format must be QuantFormat.QDQ, not QuantFormat.QOperator")
    if QuantType(weight_type) != QuantType.QInt8:
        raise ValueError(f"weight_type {QuantType(weight_type).name}: qdqrt quantizes weights to QInt8")
    activation_type = QuantType(activation_type)
    if activation_type not in (QuantType.QInt8, QuantType.QUInt8):
        raise ValueError(f"activation_type {activation_type.name}: qdqrt quantizes activations to QInt8 or QUInt8")
    if extra_options.get("WeightSymmetric", True) is False:
        raise ValueError("extra_options WeightSymmetric=False: qdqrt quantizes weights symmetrically (zero-point 0)")
    method = CalibrationMethod(calibrate_method)
    if method not in _METHODS:
        raise ValueError(f"calibrate_method {method.name}: qdqrt calibrates with MinMax, Entropy or Percentile")
    percentile = float(extra_options.get("CalibPercentile", 99.999)) if method == CalibrationMethod.Percentile else None
    placement = extra_options.get("QdqrtPlacement", "tensorrt" if activation_type == QuantType.QInt8 else "all")
    if hasattr(model_input, "SerializeToString"):  # an onnx.ModelProto, as ORT also takes
        model_input = model_input.SerializeToString()
    _calibrate(model_input, calibration_data_reader, method=_METHODS[method], percentile=percentile,
               placement=placement, output=_os.fspath(model_output), exclude=nodes_to_exclude,
               include=nodes_to_include, op_types=op_types_to_quantize,
               activation_type="uint8" if activation_type == QuantType.QUInt8 else "int8",
               per_channel=bool(per_channel), calibrate_inputs=bool(extra_options.get("QdqrtCalibrateInputs", False)))
)PY";

}  // namespace

void bind_quantization(py::module_& module) {
  py::module_ quantization =
      module.def_submodule("quantization", "ONNX Runtime's quantize_static over qdqrt.calibrate");
  py::exec(kQuantizationSource, quantization.attr("__dict__"));
  // `import qdqrt.quantization` and `from qdqrt.quantization import ...` find it like a package's module.
  py::module_::import("sys").attr("modules")["qdqrt.quantization"] = quantization;
}

}  // namespace qdqrt::python
