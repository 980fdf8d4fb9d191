// qdqrt.build / qdqrt.load -> Engine -> create_context -> Context.run: engine/engine.h in Python.
#include <pybind11/stl.h>

#include <mutex>

#include "core/file_reading.h"
#include "engine/context_threads.h"
#include "engine/engine_file.h"
#include "kernels/cpu_features.h"
#include "python/bindings.h"

namespace qdqrt::python {

namespace {

// A Python Context: one ExecutionContext, run by one thread at a time (runs from several Python
// threads on the same Context wait for each other; give each thread its own Context to run at once).
struct PyContext {
  std::shared_ptr<EngineHandle> handle;
  std::unique_ptr<engine::ExecutionContext> context;
  std::mutex run_mutex;
};

engine::Precision precision_from(const std::string& text) {
  if (text == "int8") return engine::Precision::kInt8;
  if (text == "fp32") return engine::Precision::kFp32;
  throw StatusError{invalid_argument("precision must be 'int8' or 'fp32', got '{}'", text)};
}

}  // namespace

engine::BuildOptions build_options(const std::string& precision, const py::object& input_shapes,
                                   const py::object& max_isa) {
  engine::BuildOptions options;
  options.precision = precision_from(precision);
  if (!input_shapes.is_none()) options.input_shapes = input_shapes.cast<std::map<std::string, Shape>>();
  if (!max_isa.is_none()) {
    std::string name = max_isa.cast<std::string>();
    std::optional<kernels::Isa> isa = kernels::parse_isa(name);
    if (!isa)
      throw StatusError{invalid_argument("max_isa: unknown ISA '{}' (scalar, avx2, avxvnni, avx512vnni, amxint8)", name)};
    options.max_isa = *isa;
  }
  return options;
}

std::shared_ptr<EngineHandle> build_engine_handle(const ModelSource& source, const engine::BuildOptions& options) {
  Result<std::shared_ptr<const engine::Engine>> built = internal_error("unreachable");
  {
    py::gil_scoped_release release;
    if (source.path.empty()) {
      built = engine::Engine::build_from_bytes(source.bytes, options);
    } else {
      built = engine::Engine::build_from_file(source.path, options);
    }
  }
  return std::make_shared<EngineHandle>(value_or_throw(std::move(built)));
}

std::shared_ptr<EngineHandle> load_engine_handle(const ModelSource& source) {
  Result<std::shared_ptr<const engine::Engine>> loaded = internal_error("unreachable");
  // Engine::load_bytes keeps views into the bytes: they live as long as the handle.
  std::shared_ptr<const std::vector<uint8_t>> storage;
  if (source.path.empty()) storage = std::make_shared<const std::vector<uint8_t>>(source.bytes);
  {
    py::gil_scoped_release release;
    loaded = storage ? engine::Engine::load_bytes(*storage) : engine::Engine::load(source.path);
  }
  if (!loaded.ok()) {
    // A range engine's file: the Engine API runs one shape; the session runs them all.
    bool range = storage && engine::is_range_engine_file(*storage);
    if (!storage) {
      auto file = open_regular_file(source.path, "engine file");
      uint8_t header[16] = {};
      range = file.ok() && file->size() >= sizeof(header) &&
              file->read_at(header, sizeof(header), 0, "engine file", source.path).is_ok() &&
              engine::is_range_engine_file(header);
    }
    if (range) {
      throw StatusError{invalid_argument("{}: it holds a range engine (optimization profiles); open it with "
                                         "qdqrt.InferenceSession(path), which runs every shape of its profiles",
                                         source.path.empty() ? std::string("the engine bytes") : source.path)};
    }
  }
  auto handle = std::make_shared<EngineHandle>(value_or_throw(std::move(loaded)));
  handle->storage = std::move(storage);
  return handle;
}

namespace {

py::list shape_list(const Shape& shape) {
  py::list list;
  for (int64_t dim : shape) list.append(dim);
  return list;
}

}  // namespace

void bind_engine(py::module_& module) {
  py::class_<engine::IoTensorInfo>(module, "TensorInfo", "An engine input or output.")
      .def_readonly("name", &engine::IoTensorInfo::name)
      .def_property_readonly(
          "shape", [](const engine::IoTensorInfo& info) { return shape_list(info.shape); },
          "The shape at the engine's maximum batch.")
      .def_property_readonly("dtype", [](const engine::IoTensorInfo& info) { return numpy_dtype(info.dtype); })
      .def_property_readonly("type", [](const engine::IoTensorInfo& info) { return onnx_type_string(info.dtype); })
      .def_readonly("batched", &engine::IoTensorInfo::batched)
      .def_readonly("batch_axis", &engine::IoTensorInfo::batch_axis)
      .def_readonly("batch_factor", &engine::IoTensorInfo::batch_factor)
      .def("shape_at_batch",
           [](const engine::IoTensorInfo& info, int64_t batch) { return shape_list(info.shape_at_batch(batch)); })
      .def("__repr__", [](const engine::IoTensorInfo& info) {
        return fmt::format("TensorInfo(name='{}', type='{}', shape={})", info.name, onnx_type_string(info.dtype),
                           shape_to_string(info.shape));
      });

  py::class_<PyContext>(module, "Context",
                        "An execution context: its own activation memory and thread pool. Run one per Python thread.")
      .def(
          "run",
          [](PyContext& self, const py::dict& feeds, const py::object& output_names) {
            std::vector<std::string> names = names_from(output_names);
            PreparedRun prepared = prepare_run(*self.handle, feeds, names);
            {
              py::gil_scoped_release release;  // wait for another thread's run on this context without the GIL
              std::lock_guard<std::mutex> lock(self.run_mutex);
              py::gil_scoped_acquire acquire;
              run_prepared(*self.context, prepared);
            }
            py::dict outputs;
            for (size_t i = 0; i < prepared.output_arrays.size(); ++i) {
              outputs[py::str(prepared.output_names[i])] = prepared.output_arrays[i];
            }
            return outputs;
          },
          py::arg("feeds"), py::arg("output_names") = py::none(),
          "Runs the engine on {name: ndarray}; returns {name: ndarray} for output_names (default: every output).")
      .def_property(
          "profiling", [](const PyContext& self) { return self.context->profiling(); },
          [](PyContext& self, bool enabled) { self.context->set_profiling(enabled); })
      .def_property_readonly("threads", [](const PyContext& self) { return self.context->threads(); })
      .def(
          "profile",
          [](const PyContext& self) {
            py::list layers;
            std::vector<engine::LayerProfileEntry> entries = self.handle->engine->layers();
            const std::vector<double>& times = self.context->last_layer_times_ms();
            for (size_t i = 0; i < entries.size() && i < times.size(); ++i) {
              py::dict layer;
              layer["name"] = entries[i].name;
              layer["kind"] = entries[i].kind;
              layer["kernel"] = entries[i].kernel;
              layer["time_ms"] = times[i];
              layers.append(layer);
            }
            return layers;
          },
          "Per layer (plan order) of the last run with profiling on: {name, kind, kernel, time_ms}.");

  py::class_<EngineHandle, std::shared_ptr<EngineHandle>>(
      module, "Engine", "A built or loaded engine: immutable, shared by its contexts.")
      .def_readonly("inputs", &EngineHandle::inputs)
      .def_readonly("outputs", &EngineHandle::outputs)
      .def_property_readonly("layers",
                             [](const EngineHandle& self) {
                               py::list layers;
                               for (const engine::PlanLayer& entry : self.engine->plan().layers) {
                                 py::dict layer;
                                 layer["name"] = entry.name;
                                 layer["kind"] = entry.kind;
                                 layer["kernel"] = entry.kernel;
                                 // A slow fallback says why no native layer took its node.
                                 if (entry.kind == "reference") layer["reason"] = engine::reference_layer_reason(entry);
                                 layers.append(layer);
                               }
                               return layers;
                             },
                             "Per layer (plan order): {name, kind, kernel}, and `reason` for kind 'reference'.")
      .def_property_readonly("max_batch", [](const EngineHandle& self) { return self.engine->max_batch(); })
      .def_property_readonly("precision", [](const EngineHandle& self) { return self.engine->plan().precision; })
      .def_property_readonly("isa", [](const EngineHandle& self) { return self.engine->plan().isa; })
      .def_property_readonly(
          "version", [](const EngineHandle& self) { return self.engine->plan().qdqrt_version; },
          "The qdqrt version that built the engine (stored in the engine file).")
      .def_property_readonly("source_model", [](const EngineHandle& self) { return self.engine->plan().source_model; })
      .def_property_readonly("fixed_batch_reason",
                             [](const EngineHandle& self) { return self.engine->plan().fixed_batch_reason; })
      .def(
          "save",
          [](const EngineHandle& self, const py::object& path) {
            std::string file = py::module_::import("os").attr("fspath")(path).cast<std::string>();
            Status status;
            {
              py::gil_scoped_release release;
              status = self.engine->save(file);
            }
            throw_if_error(status);
          },
          py::arg("path"), "Writes the engine file (.qdqrt).")
      .def(
          "create_context",
          [](const std::shared_ptr<EngineHandle>& self, int threads, bool profiling) {
            throw_if_error(engine::check_context_threads(threads).with_context("threads"));
            auto context = std::make_unique<PyContext>();
            context->handle = self;
            context->context = self->engine->create_context({.threads = threads, .profiling = profiling});
            return context;
          },
          py::arg("threads") = 0, py::arg("profiling") = false,
          "A new execution context with `threads` worker threads (0 = all hardware threads).");

  module.def(
      "build",
      [](const py::object& model, const std::string& precision, const py::object& input_shapes,
         const py::object& max_isa, bool bf16) {
        engine::BuildOptions options = build_options(precision, input_shapes, max_isa);
        options.bf16 = bf16;
        return build_engine_handle(model_source_from(model), options);
      },
      py::arg("onnx"), py::arg("precision") = "int8", py::arg("input_shapes") = py::none(),
      py::arg("max_isa") = py::none(), py::arg("bf16") = false,
      "Builds an engine from an ONNX model (path or bytes). input_shapes: {name: shape at the maximum batch}; "
      "bf16: float MatMul/Gemm layers with constant weights in bf16 where the CPU can.");
  module.def(
      "load", [](const py::object& path) { return load_engine_handle(model_source_from(path)); }, py::arg("path"),
      "Loads an engine file (.qdqrt), from a path or its bytes.");
}

}  // namespace qdqrt::python
