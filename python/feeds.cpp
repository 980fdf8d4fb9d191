// numpy arrays in and out of ExecutionContext::run: inputs bound in place (C-contiguous, the
// engine's dtype, native byte order), outputs allocated as numpy arrays the engine writes into.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <cstring>
#include <fstream>

#include "engine/engine_file_format.h"
#include "python/bindings.h"

namespace qdqrt::python {

py::dtype numpy_dtype(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat: return py::dtype::of<float>();
    case DataType::kDouble: return py::dtype::of<double>();
    case DataType::kUint8: return py::dtype::of<uint8_t>();
    case DataType::kInt8: return py::dtype::of<int8_t>();
    case DataType::kUint16: return py::dtype::of<uint16_t>();
    case DataType::kInt16: return py::dtype::of<int16_t>();
    case DataType::kInt32: return py::dtype::of<int32_t>();
    case DataType::kInt64: return py::dtype::of<int64_t>();
    case DataType::kUint32: return py::dtype::of<uint32_t>();
    case DataType::kUint64: return py::dtype::of<uint64_t>();
    case DataType::kBool: return py::dtype::of<bool>();
    case DataType::kFloat16: return py::dtype("float16");
    default: throw StatusError{unsupported("no numpy dtype for {}", dtype_name(dtype))};
  }
}

std::string onnx_type_string(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat: return "tensor(float)";
    case DataType::kDouble: return "tensor(double)";
    case DataType::kFloat16: return "tensor(float16)";
    case DataType::kBFloat16: return "tensor(bfloat16)";
    default: return fmt::format("tensor({})", dtype_name(dtype));  // int8, uint8, int64, bool, ...
  }
}

EngineHandle::EngineHandle(std::shared_ptr<const engine::Engine> built)
    : engine(std::move(built)), inputs(engine->inputs()), outputs(engine->outputs()) {}

const engine::IoTensorInfo* EngineHandle::find_input(const std::string& name) const {
  for (const engine::IoTensorInfo& info : inputs) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

const engine::IoTensorInfo* EngineHandle::find_output(const std::string& name) const {
  for (const engine::IoTensorInfo& info : outputs) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

namespace {

// Does the array hold `dtype` as stored by the engine? Compared by kind and size, so int64 arrays
// made as 'l' or 'q' both match.
bool dtype_matches(const py::dtype& array_dtype, DataType dtype) {
  char kind = array_dtype.kind();
  size_t size = static_cast<size_t>(array_dtype.itemsize());
  if (py::detail::array_descriptor_proxy(array_dtype.ptr())->byteorder == '>') return false;
  switch (dtype) {
    case DataType::kFloat:
    case DataType::kDouble:
    case DataType::kFloat16: return kind == 'f' && size == dtype_size(dtype);
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64: return kind == 'i' && size == dtype_size(dtype);
    case DataType::kUint8:
    case DataType::kUint16:
    case DataType::kUint32:
    case DataType::kUint64: return kind == 'u' && size == dtype_size(dtype);
    case DataType::kBool: return kind == 'b';
    default: return false;
  }
}

py::array as_array(const py::handle& value) {
  if (py::isinstance<py::array>(value)) return py::reinterpret_borrow<py::array>(value);
  return py::array(py::reinterpret_borrow<py::object>(value));  // lists, scalars: numpy picks the dtype
}

Shape shape_of(const py::array& array) {
  Shape shape(static_cast<size_t>(array.ndim()));
  for (size_t axis = 0; axis < shape.size(); ++axis) shape[axis] = array.shape(static_cast<py::ssize_t>(axis));
  return shape;
}

}  // namespace

PreparedRun prepare_run(const EngineHandle& handle, const py::dict& feeds,
                        const std::vector<std::string>& output_names) {
  PreparedRun prepared;
  prepared.feeds.reserve(feeds.size());
  prepared.input_bindings.reserve(feeds.size());
  for (auto [key, value] : feeds) {
    if (!py::isinstance<py::str>(key)) throw StatusError{invalid_argument("feed names must be str")};
    std::string name = py::cast<std::string>(key);
    py::array array = as_array(value);
    const engine::IoTensorInfo* info = handle.find_input(name);
    if (info != nullptr) {
      if (!dtype_matches(array.dtype(), info->dtype)) {
        throw DtypeError{fmt::format("input '{}': expected a numpy array of {} ({}), got {}", name,
                                     dtype_name(info->dtype), onnx_type_string(info->dtype),
                                     py::str(array.dtype()).cast<std::string>())};
      }
      if (info->batched && array.ndim() > 0 && prepared.batch < 0) prepared.batch = array.shape(0);
    }
    if (!(array.flags() & py::array::c_style)) {
      throw StatusError{
          invalid_argument("input '{}': the array is not C-contiguous (use numpy.ascontiguousarray)", name)};
    }
    prepared.input_bindings.push_back({std::move(name), array.data(), shape_of(array)});
    prepared.feeds.push_back(std::move(array));
  }
  // Outputs at the batch the inputs carry; the engine checks that batch against what it can run.
  const int64_t batch = prepared.batch >= 0 ? prepared.batch : handle.engine->max_batch();
  auto add_output = [&](const engine::IoTensorInfo& info) {
    for (size_t i = 0; i < prepared.output_bindings.size(); ++i) {
      if (prepared.output_bindings[i].name == info.name) {  // asked twice: one buffer, returned twice
        prepared.output_arrays.push_back(prepared.bound_arrays[i]);
        prepared.output_names.push_back(info.name);
        return;
      }
    }
    Shape shape = info.shape_at_batch(batch);
    py::array array(numpy_dtype(info.dtype), std::vector<py::ssize_t>(shape.begin(), shape.end()));
    prepared.output_bindings.push_back({info.name, array.mutable_data(), std::move(shape)});
    prepared.output_arrays.push_back(array);
    prepared.output_names.push_back(info.name);
    prepared.bound_arrays.push_back(std::move(array));
  };
  if (output_names.empty()) {
    for (const engine::IoTensorInfo& info : handle.outputs) add_output(info);
  } else {
    for (const std::string& name : output_names) {
      const engine::IoTensorInfo* info = handle.find_output(name);
      if (info == nullptr) {
        std::string known;
        for (const engine::IoTensorInfo& output : handle.outputs) known += (known.empty() ? "" : ", ") + output.name;
        throw StatusError{invalid_argument("'{}' is not an output of the model (outputs: {})", name, known)};
      }
      add_output(*info);
    }
  }
  return prepared;
}

void run_prepared(engine::ExecutionContext& context, const PreparedRun& prepared) {
  Status status;
  {
    py::gil_scoped_release release;
    status = context.run(prepared.input_bindings, prepared.output_bindings);
  }
  throw_if_error(status);
}

std::vector<std::string> names_from(const py::object& names) {
  if (names.is_none()) return {};
  if (py::isinstance<py::str>(names)) return {names.cast<std::string>()};
  return names.cast<std::vector<std::string>>();
}

ModelSource model_source_from(const py::object& model) {
  ModelSource source;
  if (py::isinstance<py::bytes>(model) || py::isinstance<py::bytearray>(model) ||
      py::isinstance<py::memoryview>(model)) {
    std::string bytes = py::bytes(model).cast<std::string>();
    source.bytes.assign(bytes.begin(), bytes.end());
    return source;
  }
  py::object path = py::module_::import("os").attr("fspath")(model);  // str or os.PathLike
  source.path = path.cast<std::string>();
  return source;
}

bool is_engine_file(const ModelSource& source) {
  char magic[sizeof(engine::file_format::kMagic)] = {};
  if (source.path.empty()) {
    if (source.bytes.size() < sizeof(magic)) return false;
    std::memcpy(magic, source.bytes.data(), sizeof(magic));
  } else {
    std::ifstream file(source.path, std::ios::binary);
    if (!file.read(magic, sizeof(magic))) return false;
  }
  return std::memcmp(magic, engine::file_format::kMagic, sizeof(magic)) == 0;
}

}  // namespace qdqrt::python
