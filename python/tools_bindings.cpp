// qdqrt.calibrate (tools/calibration/calibrate_model.h, fed by a Python iterable the way ONNX
// Runtime's CalibrationDataReader is) and qdqrt.inspect (tools/inspect_report.h).
#include <onnx/onnx_pb.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <fstream>

#include "parser/onnx_loader.h"
#include "parser/onnx_writer.h"
#include "python/bindings.h"
#include "engine/context_threads.h"
#include "tools/calibration/calibrate_model.h"
#include "tools/inspect_report.h"
#include "tools/sensitivity.h"

namespace qdqrt::python {

namespace {

Graph load_model(const py::object& model) {
  ModelSource source = model_source_from(model);
  Result<Graph> loaded = internal_error("unreachable");
  {
    py::gil_scoped_release release;
    loaded =
        source.path.empty() ? load_onnx_bytes(source.bytes.data(), source.bytes.size()) : load_onnx_file(source.path);
  }
  return value_or_throw(std::move(loaded));
}

// The feeds a reader gives: iterated, or (an ORT CalibrationDataReader without __iter__) asked
// with get_next() until it returns None.
std::vector<py::dict> read_feeds(const py::object& reader) {
  std::vector<py::dict> feeds;
  auto take = [&](const py::handle& item) {
    if (!py::isinstance<py::dict>(item)) {
      throw StatusError{invalid_argument("the calibration reader must give dicts {{input name: ndarray}}, got {}",
                                         py::str(py::type::of(item)).cast<std::string>())};
    }
    feeds.push_back(py::reinterpret_borrow<py::dict>(item));
  };
  if (py::hasattr(reader, "__iter__")) {
    for (py::handle item : reader) take(item);
  } else if (py::hasattr(reader, "get_next")) {
    for (py::object item = reader.attr("get_next")(); !item.is_none(); item = reader.attr("get_next")()) take(item);
  } else {
    throw StatusError{invalid_argument("the calibration reader must be iterable or have get_next()")};
  }
  return feeds;
}

// The reader's arrays for the model's input joined along dim 0: float32 [N, ...].
Tensor join_images(const std::vector<py::dict>& feeds, const std::string& input_name, size_t rank) {
  using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;
  std::vector<FloatArray> arrays;
  Shape shape;
  for (size_t i = 0; i < feeds.size(); ++i) {
    if (!feeds[i].contains(input_name)) {
      throw StatusError{invalid_argument("calibration feed {} has no '{}' (the model's input)", i, input_name)};
    }
    FloatArray array = FloatArray::ensure(feeds[i][py::str(input_name)]);
    if (!array) throw py::error_already_set();
    Shape item_shape(array.shape(), array.shape() + array.ndim());
    if (item_shape.size() != rank) {
      throw StatusError{invalid_argument("calibration feed {}: '{}' has shape {}, the model's input rank is {}", i,
                                         input_name, shape_to_string(item_shape), rank)};
    }
    if (shape.empty()) {
      shape = item_shape;
    } else if (!std::equal(shape.begin() + 1, shape.end(), item_shape.begin() + 1)) {
      throw StatusError{invalid_argument("calibration feed {}: '{}' has shape {}, the first feed {}", i, input_name,
                                         shape_to_string(item_shape), shape_to_string(shape))};
    } else {
      shape[0] += item_shape[0];
    }
    arrays.push_back(std::move(array));
  }
  if (arrays.empty()) throw StatusError{invalid_argument("the calibration reader gave no feeds")};
  Tensor images(DataType::kFloat, shape);
  float* out = images.data<float>();
  for (const FloatArray& array : arrays) {
    std::memcpy(out, array.data(), static_cast<size_t>(array.size()) * sizeof(float));
    out += array.size();
  }
  return images;
}

Status write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return file ? Status::ok() : io_error("cannot write '{}'", path);
}

struct CalibrationResult {
  py::bytes model;  // the QDQ ONNX model
  std::map<std::string, float> amax;
  int quantized_activations = 0;
  int quantized_weights = 0;
  int64_t images = 0;
  py::object sensitivity = py::none();  // calibrate(sensitivity=...): the per-node ranking
};

// `qdqrt calibrate --sensitivity` on labelled images from Python: (images [N, ...] float32, labels
// [N] int64). Each quantized node alone, ranked by the top-1 it loses against FP32.
py::dict rank_sensitivity(const py::object& validation, const Graph& graph, const Graph& quantized,
                          const calibration::QuantizationPlan& plan, const std::map<std::string, float>& amax,
                          int threads, const calibration::InsertOptions& insert) {
  using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;
  using LabelArray = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
  if (!py::isinstance<py::tuple>(validation) || py::len(validation) != 2) {
    throw StatusError{invalid_argument("sensitivity must be (images, labels): images [N, ...] and labels [N]")};
  }
  FloatArray images = FloatArray::ensure(validation[py::int_(0)]);
  LabelArray labels = LabelArray::ensure(validation[py::int_(1)]);
  if (!images || !labels) throw py::error_already_set();
  if (images.ndim() < 2 || labels.ndim() != 1 || labels.shape(0) != images.shape(0) || images.shape(0) == 0) {
    throw StatusError{invalid_argument("sensitivity: {} labels for images of shape {}; need one label per image",
                                       labels.size(), shape_to_string(Shape(images.shape(), images.shape() + images.ndim())))};
  }
  tools::Dataset data;
  data.images = Tensor(DataType::kFloat, Shape(images.shape(), images.shape() + images.ndim()));
  std::memcpy(data.images.raw_data(), images.data(), data.images.nbytes());
  data.labels = Tensor(DataType::kInt64, {labels.shape(0)});
  std::memcpy(data.labels->raw_data(), labels.data(), data.labels->nbytes());
  data.description = "the sensitivity images";
  Result<tools::SensitivityReport> ranked = internal_error("unreachable");
  {
    py::gil_scoped_release release;
    ranked = tools::rank_layer_sensitivity(graph, quantized, plan, amax, data, threads, insert);
  }
  if (!ranked.ok()) throw StatusError{ranked.status().with_context("sensitivity")};
  const tools::SensitivityReport& report = *ranked;
  py::list rows;
  for (const tools::SensitivityRow& row : report.rows) {
    py::dict entry;
    entry["node"] = row.node;
    entry["op_type"] = row.op_type;
    entry["top1"] = row.top1;
    entry["lost"] = row.lost;
    rows.append(entry);
  }
  py::dict result;
  result["images"] = report.images;
  result["fp32_top1"] = report.fp32_top1;
  result["int8_top1"] = report.int8_top1;
  result["rows"] = rows;
  result["table"] = tools::format_sensitivity_table(report);
  return result;
}

// The nodes whose inputs or weights the plan quantizes (by name), in graph order.
std::vector<std::string> quantized_nodes(const calibration::QuantizationPlan& plan, const Graph& graph) {
  std::set<size_t> indices;
  for (const auto& activation : plan.activations) {
    for (const calibration::QuantizedInput& reader : activation.readers) indices.insert(reader.node);
  }
  for (const auto& weight : plan.weights) {
    for (const calibration::QuantizedInput& reader : weight.readers) indices.insert(reader.node);
  }
  std::vector<std::string> names;
  for (size_t index : indices) names.push_back(graph.nodes[index].name);
  return names;
}

CalibrationResult calibrate(const py::object& model, const py::object& reader, const std::string& method,
                            const py::object& percentile, const std::string& placement, const py::object& output,
                            int threads, int64_t batch_size, bool calibrate_inputs, const py::object& exclude,
                            const py::object& include, const py::object& op_types, const std::string& activation_type,
                            bool per_channel, const py::object& sensitivity) {
  Graph graph = load_model(model);
  throw_if_error(calibration::check_calibration_input(graph));
  calibration::CalibrateModelOptions options;
  options.method = value_or_throw(calibration::parse_method(method));
  if (!percentile.is_none()) {
    if (options.method.method != calibration::Method::kPercentile) {
      throw StatusError{invalid_argument("percentile is for method='percentile', not '{}'", method)};
    }
    options.method.percentile = percentile.cast<double>();
  }
  calibration::Placement where = value_or_throw(calibration::parse_placement(placement));
  throw_if_error(engine::check_context_threads(threads).with_context("threads"));
  options.threads = threads;
  options.batch_size = batch_size;
  options.calibrate_inputs = calibrate_inputs;
  calibration::QuantizationPlan plan = value_or_throw(calibration::plan_quantization(graph, where));
  if (activation_type == "uint8") {
    options.insert.activation_dtype = DataType::kUint8;
  } else if (activation_type != "int8") {
    throw StatusError{invalid_argument("activation_type must be 'int8' or 'uint8', got '{}'", activation_type)};
  }
  options.insert.per_channel_weights = per_channel;
  // ORT's nodes_to_exclude, nodes_to_include and op_types_to_quantize all come down to the nodes
  // that stay float: exclude_nodes() (the CLI's --exclude) does the rest.
  std::vector<std::string> excluded = names_from(exclude);
  const std::vector<std::string> included = names_from(include), types = names_from(op_types);
  if (!included.empty() || !types.empty()) {
    std::map<std::string, std::string> op_of;
    for (const Node& node : graph.nodes) op_of[node.name] = node.op_type;
    for (const std::string& name : included) {
      if (!op_of.count(name)) throw StatusError{invalid_argument("nodes_to_include: no node '{}' in the model", name)};
    }
    for (const std::string& name : quantized_nodes(plan, graph)) {
      bool keep = (included.empty() || std::find(included.begin(), included.end(), name) != included.end()) &&
                  (types.empty() || std::find(types.begin(), types.end(), op_of[name]) != types.end());
      if (!keep && std::find(excluded.begin(), excluded.end(), name) == excluded.end()) excluded.push_back(name);
    }
  }
  if (!excluded.empty()) throw_if_error(calibration::exclude_nodes(plan, graph, excluded).with_context("nodes_to_exclude"));

  const std::string& input_name = graph.inputs[0];
  Tensor images = join_images(read_feeds(reader), input_name, graph.find_value(input_name)->shape->size());
  Result<calibration::CalibratedModel> calibrated = internal_error("unreachable");
  std::string serialized;
  {
    py::gil_scoped_release release;
    calibrated = calibration::calibrate_model(graph, plan, images, options);
    if (calibrated.ok()) {
      WriteOptions write_options;
      write_options.producer_name = "qdqrt calibrate";
      auto proto = graph_to_model(calibrated->quantized, write_options);
      if (!proto.ok()) {
        calibrated = proto.status();
      } else if (!proto->SerializeToString(&serialized)) {
        calibrated = internal_error("cannot serialize the calibrated model");
      }
    }
  }
  calibration::CalibratedModel result = value_or_throw(std::move(calibrated));
  if (!output.is_none()) {
    throw_if_error(write_bytes(py::module_::import("os").attr("fspath")(output).cast<std::string>(), serialized));
  }
  py::object ranking = py::none();
  if (!sensitivity.is_none()) {
    ranking = rank_sensitivity(sensitivity, graph, result.quantized, plan, result.activation_amax, threads,
                               options.insert);
  }
  return CalibrationResult{py::bytes(serialized), std::move(result.activation_amax), result.quantized_activations,
                           result.quantized_weights, images.dim(0), std::move(ranking)};
}

py::object json_to_python(const nlohmann::json& json) {
  switch (json.type()) {
    case nlohmann::json::value_t::null: return py::none();
    case nlohmann::json::value_t::boolean: return py::bool_(json.get<bool>());
    case nlohmann::json::value_t::number_integer: return py::int_(json.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: return py::int_(json.get<uint64_t>());
    case nlohmann::json::value_t::number_float: return py::float_(json.get<double>());
    case nlohmann::json::value_t::string: return py::str(json.get<std::string>());
    case nlohmann::json::value_t::array: {
      py::list list;
      for (const nlohmann::json& item : json) list.append(json_to_python(item));
      return list;
    }
    case nlohmann::json::value_t::object: {
      py::dict dict;
      for (const auto& [key, value] : json.items()) dict[py::str(key)] = json_to_python(value);
      return dict;
    }
    default: return py::none();
  }
}

py::dict inspect(const py::object& model, const py::object& shapes, const py::object& passes,
                 const py::object& disabled_passes, bool fp32) {
  Graph graph = load_model(model);
  tools::InspectRequest request;
  if (!shapes.is_none()) request.shapes = shapes.cast<std::map<std::string, Shape>>();
  request.passes = names_from(passes);
  request.disabled_passes = names_from(disabled_passes);
  request.float_only = fp32;
  Result<tools::InspectResult> inspected = internal_error("unreachable");
  {
    py::gil_scoped_release release;
    inspected = tools::inspect_graph(graph, request);
  }
  tools::InspectResult result = value_or_throw(std::move(inspected));
  py::dict report = json_to_python(tools::layer_report_to_json(result.layers, result.bindings));
  report["PassesRun"] = result.passes_run;
  return report;
}

}  // namespace

void bind_tools(py::module_& module) {
  py::class_<CalibrationResult>(module, "CalibrationResult")
      .def_readonly("model", &CalibrationResult::model, "The QDQ ONNX model (bytes): InferenceSession takes it as is.")
      .def_readonly("amax", &CalibrationResult::amax, "The range chosen for each calibrated activation.")
      .def_readonly("quantized_activations", &CalibrationResult::quantized_activations)
      .def_readonly("quantized_weights", &CalibrationResult::quantized_weights)
      .def_readonly("images", &CalibrationResult::images)
      .def_readonly("sensitivity", &CalibrationResult::sensitivity,
                    "With sensitivity=: {images, fp32_top1, int8_top1, rows: [{node, op_type, top1, lost}], table}, "
                    "most top-1 lost first; else None.")
      .def(
          "save",
          [](const CalibrationResult& self, const py::object& path) {
            throw_if_error(write_bytes(py::module_::import("os").attr("fspath")(path).cast<std::string>(),
                                       self.model.cast<std::string>()));
          },
          py::arg("path"));

  module.def("calibrate", &calibrate, py::arg("model"), py::arg("reader"), py::arg("method") = "max",
             py::arg("percentile") = py::none(), py::arg("placement") = "tensorrt", py::arg("output") = py::none(),
             py::arg("threads") = 0, py::arg("batch_size") = 0, py::arg("calibrate_inputs") = false,
             py::arg("exclude") = py::none(), py::arg("include") = py::none(), py::arg("op_types") = py::none(),
             py::arg("activation_type") = "int8", py::arg("per_channel") = true, py::arg("sensitivity") = py::none(),
             "Post-training quantization of an FP32 ONNX model (path or bytes): `reader` is an iterable of feed "
             "dicts (or an ORT CalibrationDataReader). method: max, entropy, percentile, mse; placement: tensorrt, "
             "all; exclude: node names kept in float (the CLI's --exclude); include / op_types: quantize only these "
             "nodes / op types; activation_type: int8 (zero-point 0) or uint8 (zero-point 128); per_channel: "
             "per-channel weight scales (else one per weight); sensitivity: (images, labels) to rank each quantized "
             "node by the top-1 it loses alone (the CLI's --sensitivity). Returns a CalibrationResult; writes `output` "
             "when given.");
  module.def("inspect", &inspect, py::arg("model"), py::arg("shapes") = py::none(), py::arg("passes") = py::none(),
             py::arg("disabled_passes") = py::none(), py::arg("fp32") = false,
             "The optimized model's layers as `qdqrt inspect --exportLayerInfo` writes them: "
             "{'Layers': [...], 'Summary': {...}, 'PassesRun': [...]}.");
}

}  // namespace qdqrt::python
