// numpy arrays in and out of ExecutionContext::run: inputs bound in place (C-contiguous, the
// engine's dtype, native byte order), outputs allocated as numpy arrays the engine writes into.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <cstring>

#include "core/file_reading.h"
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

// Does the array hold `dtype`, in any byte order? Compared by kind and size, so int64 arrays made
// as 'l' or 'q' both match.
bool dtype_kind_matches(const py::dtype& array_dtype, DataType dtype) {
  char kind = array_dtype.kind();
  size_t size = static_cast<size_t>(array_dtype.itemsize());
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

bool native_byte_order(const py::dtype& array_dtype) {
  return py::detail::array_descriptor_proxy(array_dtype.ptr())->byteorder != '>';  // x86: '<', '=' and '|' are native
}

Shape shape_of(const py::array& array) {
  Shape shape(static_cast<size_t>(array.ndim()));
  for (size_t axis = 0; axis < shape.size(); ++axis) shape[axis] = array.shape(static_cast<py::ssize_t>(axis));
  return shape;
}

}  // namespace

py::array input_array(const std::string& name, const py::handle& value, const engine::IoTensorInfo* info) {
  py::module_ numpy = py::module_::import("numpy");
  if (info == nullptr) {
    return py::isinstance<py::array>(value) ? py::reinterpret_borrow<py::array>(value)
                                            : py::array(numpy.attr("asarray")(value));
  }
  const py::dtype dtype = numpy_dtype(info->dtype);
  if (!py::isinstance<py::array>(value)) {
    // A list or scalar: numpy reads it as the input's dtype (as ONNX Runtime converts it).
    try {
      return py::array(numpy.attr("ascontiguousarray")(value, dtype));
    } catch (py::error_already_set& error) {
      throw DtypeError{fmt::format("input '{}': cannot convert a {} to {}: {}", name,
                                   py::str(py::type::of(value).attr("__name__")).cast<std::string>(),
                                   onnx_type_string(info->dtype), error.what())};
    }
  }
  py::array array = py::reinterpret_borrow<py::array>(value);
  if (!dtype_kind_matches(array.dtype(), info->dtype)) {
    throw DtypeError{fmt::format("input '{}': expected a numpy array of {} ({}), got {}", name,
                                 dtype_name(info->dtype), onnx_type_string(info->dtype),
                                 py::str(array.dtype()).cast<std::string>())};
  }
  if ((array.flags() & py::array::c_style) && native_byte_order(array.dtype())) return array;  // read in place
  return py::array(numpy.attr("ascontiguousarray")(array, dtype));  // one copy: C order, native bytes
}

PreparedRun prepare_run(const EngineHandle& handle, const py::dict& feeds, const std::vector<std::string>& output_names,
                        const std::map<std::string, py::array>& bound_outputs) {
  PreparedRun prepared;
  prepared.feeds.reserve(feeds.size());
  prepared.input_bindings.reserve(feeds.size());
  for (auto [key, value] : feeds) {
    if (!py::isinstance<py::str>(key)) throw StatusError{invalid_argument("feed names must be str")};
    std::string name = py::cast<std::string>(key);
    const engine::IoTensorInfo* info = handle.find_input(name);
    py::array array = input_array(name, value, info);
    if (info != nullptr && info->batched && array.ndim() > 0 && prepared.batch < 0) prepared.batch = array.shape(0);
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
    py::array array;
    if (auto bound = bound_outputs.find(info.name); bound != bound_outputs.end()) {
      array = bound->second;
      if (!dtype_kind_matches(array.dtype(), info.dtype) || !native_byte_order(array.dtype())) {
        throw DtypeError{fmt::format("output '{}': the bound array is {}, the output is {}", info.name,
                                     py::str(array.dtype()).cast<std::string>(), onnx_type_string(info.dtype))};
      }
      if (shape_of(array) != shape) {
        throw StatusError{invalid_argument("output '{}': the bound array has shape {}, this run writes {}", info.name,
                                           shape_to_string(shape_of(array)), shape_to_string(shape))};
      }
      if (!(array.flags() & py::array::c_style) || !array.writeable()) {
        throw StatusError{invalid_argument("output '{}': the bound array must be C-contiguous and writable", info.name)};
      }
    } else {
      array = py::array(numpy_dtype(info.dtype), std::vector<py::ssize_t>(shape.begin(), shape.end()));
    }
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
    // The checked reader: a FIFO or device is refused (an ifstream would block on a FIFO holding
    // the GIL, or read /dev/zero), and a missing file is named as such.
    Result<RegularFile> file = internal_error("unreachable");
    {
      py::gil_scoped_release release;
      file = open_regular_file(source.path, "model");
    }
    if (!file.ok()) throw StatusError{file.status()};
    if (file->size() < sizeof(magic)) return false;
    throw_if_error(file->read_at(magic, sizeof(magic), 0, "model", source.path));
  }
  return std::memcmp(magic, engine::file_format::kMagic, sizeof(magic)) == 0;
}

}  // namespace qdqrt::python
