#include "tools/compare_command.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "engine/engine.h"
#include "optimizer/pipeline.h"
#include "parser/onnx_loader.h"
#include "reference/executor.h"
#include "tools/cli_flags.h"
#include "tools/commands.h"
#include "tools/datasets.h"
#include "tools/model_metadata.h"

namespace qdqrt::tools {
namespace {

RunError usage_error(Status status) { return RunError{true, std::move(status)}; }
RunError failure(Status status) { return RunError{false, std::move(status)}; }

// A QuantizeLinear on a computed tensor (not a weight) and the DequantizeLinear after it.
struct QuantizationPoint {
  QuantizedTensorReport report;
  std::string dequantized;  // the DQ's output: the tensor as the quantized run sees it
  std::string fp32_name;    // the same tensor in the FP32 reference ("" = absent there)
};

const Node* producer_of(const Graph& graph, const std::string& value) {
  for (const Node& node : graph.nodes) {
    if (std::find(node.outputs.begin(), node.outputs.end(), value) != node.outputs.end()) return &node;
  }
  return nullptr;
}

Result<std::vector<QuantizationPoint>> find_quantization_points(const Graph& graph) {
  std::vector<QuantizationPoint> points;
  for (const Node& node : graph.nodes) {
    if (node.op_type != "QuantizeLinear" || graph.find_initializer(node.input(0)) != nullptr) continue;
    const Tensor* scale = graph.find_initializer(node.input(1));
    if (scale == nullptr || scale->numel() != 1) continue;  // per-channel activations: not compared
    const Tensor* zero_point = node.input(2).empty() ? nullptr : graph.find_initializer(node.input(2));
    auto dequantize = std::find_if(graph.nodes.begin(), graph.nodes.end(), [&](const Node& other) {
      return other.op_type == "DequantizeLinear" && other.input(0) == node.outputs[0];
    });
    if (dequantize == graph.nodes.end()) continue;
    QuantizationPoint point;
    point.report.tensor = node.input(0);
    const Node* producer = producer_of(graph, node.input(0));
    point.report.producer = producer ? producer->describe() : "graph input";
    point.report.quantize_node = node.name;
    point.report.scale = scale->value_as_double(0);
    point.report.zero_point = zero_point ? zero_point->value_as_int64(0) : 0;
    // The quantized type from the Q's output (its zero-point may be a constant the loader did not
    // make an initializer); ONNX's default without a zero-point is uint8.
    const ValueInfo* quantized = graph.find_value(node.outputs[0]);
    point.report.is_unsigned = quantized && quantized->dtype != DataType::kUndefined
                                   ? quantized->dtype == DataType::kUint8
                                   : zero_point == nullptr || zero_point->dtype() == DataType::kUint8;
    point.dequantized = dequantize->outputs[0];
    for (const Node& reader : graph.nodes) {
      if (std::find(reader.inputs.begin(), reader.inputs.end(), point.dequantized) != reader.inputs.end()) {
        point.report.readers.push_back(reader.name);
      }
    }
    points.push_back(std::move(point));
  }
  if (points.empty()) return invalid_argument("the model has no QuantizeLinear -> DequantizeLinear on an activation");
  return points;
}

// The FP32 reference: --reference, or the model with its fake quantization removed (the float
// pipeline up to remove_fake_quantization, so every other tensor keeps its name).
Result<Graph> fp32_reference(const CompareOptions& options, const Graph& quantized) {
  if (!options.reference_path.empty()) return load_onnx_file(options.reference_path);
  Graph graph = quantized;
  optimizer::OptimizeOptions float_options;
  float_options.float_only = true;
  float_options.only_passes = {"remove_identities", "fold_constants", "remove_fake_quantization"};
  QDQRT_RETURN_IF_ERROR(optimizer::optimize(graph, float_options).status());
  return graph;
}

std::span<const float> floats(const Tensor& tensor) { return tensor.values<float>(); }

// Rows whose argmax agrees, for float [N, C] tensors of one shape; -1 otherwise.
int64_t argmax_agreements(const Tensor& a, const Tensor& b) {
  if (a.dtype() != DataType::kFloat || b.dtype() != DataType::kFloat || a.rank() != 2 || a.shape() != b.shape()) {
    return -1;
  }
  int64_t rows = a.dim(0), columns = a.dim(1), agree = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = a.data<float>() + r * columns;
    const float* y = b.data<float>() + r * columns;
    agree += (std::max_element(x, x + columns) - x) == (std::max_element(y, y + columns) - y) ? 1 : 0;
  }
  return agree;
}

// Rows of float [N, C] logits whose argmax is the label (labels from row `offset` on).
int64_t correct_predictions(const Tensor& logits, const Tensor& labels, int64_t offset) {
  if (logits.dtype() != DataType::kFloat || logits.rank() != 2 || offset + logits.dim(0) > labels.numel()) return 0;
  int64_t rows = logits.dim(0), columns = logits.dim(1), correct = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = logits.data<float>() + r * columns;
    correct += (std::max_element(x, x + columns) - x) == labels.data<int64_t>()[offset + r] ? 1 : 0;
  }
  return correct;
}

// Rows [begin, begin + count) of every input.
TensorMap slice_rows(const TensorMap& inputs, int64_t begin, int64_t count) {
  TensorMap batch;
  for (const auto& [name, tensor] : inputs) {
    Shape shape = tensor.shape();
    shape[0] = count;
    Tensor rows(tensor.dtype(), shape);
    size_t row_bytes = tensor.nbytes() / static_cast<size_t>(tensor.dim(0));
    std::memcpy(rows.raw_data(), static_cast<const std::byte*>(tensor.raw_data()) + static_cast<size_t>(begin) * row_bytes,
                static_cast<size_t>(count) * row_bytes);
    batch.emplace(name, std::move(rows));
  }
  return batch;
}

}  // namespace

std::variant<CompareReport, RunError> run_compare(const CompareOptions& options, std::ostream& out) {
  if (options.samples < 1) return usage_error(invalid_argument("--samples must be at least 1, got {}", options.samples));
  auto graph = load_onnx_file(options.onnx_path);
  if (!graph.ok()) return failure(graph.status().with_context(options.onnx_path));
  auto points = find_quantization_points(*graph);
  if (!points.ok()) return usage_error(points.status().with_context(options.onnx_path));

  // Inputs: images of --data (one image input), or seeded random values.
  TensorMap inputs;
  std::optional<Tensor> labels;
  std::string input_description;
  if (!options.data_spec.empty()) {
    if (graph->inputs.size() != 1) {
      return usage_error(invalid_argument("--data: '{}' has {} inputs; images need a model with one",
                                          options.onnx_path, graph->inputs.size()));
    }
    auto preprocessing = resolve_preprocessing(options.mean, options.std, options.onnx_path);
    if (!preprocessing.ok()) return failure(preprocessing.status());
    if (preprocessing->source == "none") std::cerr << missing_preprocessing_warning("compare", options.onnx_path);
    DatasetOptions data_options{.mean = preprocessing->values.mean, .std = preprocessing->values.std,
                                .max_images = options.samples};
    auto data = load_dataset(options.data_spec, data_options);
    if (!data.ok()) return usage_error(data.status().with_context("--data"));
    inputs[graph->inputs[0]] = data->images;
    labels = data->labels;
    input_description = fmt::format("{} images of {}", data->size(), data->description);
  } else {
    RunOptions random;
    random.shapes = options.shapes;
    random.seed = options.seed;
    std::ostringstream ignored;
    auto generated = prepare_inputs(*graph, random, ignored);
    if (!generated.ok()) return usage_error(generated.status());
    inputs = std::move(generated).value();
    input_description = fmt::format("seeded random inputs (seed {})", options.seed);
  }

  auto reference_graph = fp32_reference(options, *graph);
  if (!reference_graph.ok()) return failure(reference_graph.status().with_context("FP32 reference"));
  std::set<std::string> reference_values;
  for (const Node& node : reference_graph->nodes) reference_values.insert(node.outputs.begin(), node.outputs.end());
  reference_values.insert(reference_graph->inputs.begin(), reference_graph->inputs.end());

  // Both runs return the compared tensors besides the outputs.
  ReferenceRunOptions quantized_run, fp32_run;
  std::vector<std::string> missing;
  for (QuantizationPoint& point : *points) {
    quantized_run.extra_outputs.push_back(point.dequantized);
    // Removing a Q -> DQ pair before a graph output leaves the value under the DQ's name.
    if (reference_values.count(point.report.tensor)) {
      point.fp32_name = point.report.tensor;
    } else if (reference_values.count(point.dequantized)) {
      point.fp32_name = point.dequantized;
    } else {
      missing.push_back(point.report.tensor);
      continue;
    }
    fp32_run.extra_outputs.push_back(point.fp32_name);
  }
  // Batch by batch: both reference runs (with the compared tensors), the INT8 engine, the sums.
  const int64_t total = inputs.begin()->second.shape().empty() ? 1 : inputs.begin()->second.dim(0);
  const bool batched = !options.data_spec.empty();  // random inputs run as one batch
  const int64_t batch_size = batched ? std::min<int64_t>(std::max<int64_t>(options.batch, 1), total) : total;
  std::shared_ptr<const engine::Engine> engine;
  std::unique_ptr<engine::ExecutionContext> context;
  if (options.run_engine) {
    engine::BuildOptions build;
    for (const auto& [name, tensor] : inputs) {
      Shape shape = tensor.shape();
      if (batched) shape[0] = batch_size;
      build.input_shapes[name] = shape;
    }
    auto built = engine::Engine::build_from_file(options.onnx_path, build);
    if (!built.ok()) return failure(built.status().with_context("building the INT8 engine"));
    engine = *built;
    context = engine->create_context({.threads = options.threads});
  }
  std::vector<QuantizedTensorMeasure> measures;
  for (const QuantizationPoint& point : *points) measures.emplace_back(point.report);
  struct OutputMeasure {
    ErrorAccumulator int8_vs_fp32;
    int64_t agree = 0, rows = 0, engine_agree = 0, fp32_correct = 0, int8_correct = 0;
    bool argmax = true, engine_ran = false;
    double engine_max_abs_diff = 0;
  };
  std::map<std::string, OutputMeasure> output_measures;
  for (int64_t begin = 0; begin < total; begin += batch_size) {
    const int64_t count = std::min(batch_size, total - begin);
    TensorMap batch = batched ? slice_rows(inputs, begin, count) : inputs;
    auto quantized_values = run_reference(*graph, batch, quantized_run);
    if (!quantized_values.ok()) return failure(quantized_values.status().with_context("the quantized run"));
    auto fp32_values = run_reference(*reference_graph, batch, fp32_run);
    if (!fp32_values.ok()) return failure(fp32_values.status().with_context("the FP32 run"));
    auto value_of = [&](const TensorMap& values, const std::string& name) -> const Tensor* {
      if (auto it = values.find(name); it != values.end()) return &it->second;
      if (auto it = batch.find(name); it != batch.end()) return &it->second;
      return nullptr;
    };
    auto comparable = [](const Tensor* a, const Tensor* b) {
      return a != nullptr && b != nullptr && a->dtype() == DataType::kFloat && b->dtype() == DataType::kFloat &&
             a->numel() == b->numel();
    };
    for (size_t i = 0; i < points->size(); ++i) {
      const QuantizationPoint& point = (*points)[i];
      if (point.fp32_name.empty()) continue;
      const Tensor* fp32 = value_of(*fp32_values, point.fp32_name);
      const Tensor* quantized = value_of(*quantized_values, point.dequantized);
      if (comparable(fp32, quantized)) measures[i].add(floats(*fp32), floats(*quantized));
    }
    std::map<std::string, Tensor> engine_outputs;
    if (context) {
      std::vector<engine::ConstTensorBinding> input_bindings;
      for (const engine::IoTensorInfo& info : engine->inputs()) {
        const Tensor& tensor = batch.at(info.name);
        input_bindings.push_back({info.name, tensor.raw_data(), tensor.shape()});
      }
      std::vector<engine::TensorBinding> output_bindings;
      for (const engine::IoTensorInfo& info : engine->outputs()) {
        Tensor& tensor =
            engine_outputs.emplace(info.name, Tensor(info.dtype, info.shape_at_batch(count))).first->second;
        output_bindings.push_back({info.name, tensor.raw_data(), tensor.shape()});
      }
      Status ran = context->run(input_bindings, output_bindings);
      if (!ran.is_ok()) return failure(ran.with_context("running the INT8 engine"));
    }
    for (const std::string& name : graph->outputs) {
      const Tensor* quantized = value_of(*quantized_values, name);
      const Tensor* fp32 = value_of(*fp32_values, name);
      if (!comparable(fp32, quantized)) continue;
      OutputMeasure& measure = output_measures[name];
      measure.int8_vs_fp32.add(floats(*fp32), floats(*quantized));
      int64_t agree = argmax_agreements(*fp32, *quantized);
      measure.argmax = measure.argmax && agree >= 0;
      measure.agree += std::max<int64_t>(agree, 0);
      measure.rows += fp32->rank() == 2 ? fp32->dim(0) : 0;
      if (auto it = engine_outputs.find(name); it != engine_outputs.end() && comparable(&it->second, quantized)) {
        measure.engine_ran = true;
        measure.engine_max_abs_diff =
            std::max(measure.engine_max_abs_diff, error_stats(floats(*quantized), floats(it->second)).max_abs_error);
        measure.engine_agree += std::max<int64_t>(argmax_agreements(*quantized, it->second.reshaped(quantized->shape())), 0);
      }
      if (labels) {
        measure.fp32_correct += correct_predictions(*fp32, *labels, begin);
        measure.int8_correct += correct_predictions(*quantized, *labels, begin);
      }
    }
  }

  CompareReport report;
  report.model = options.onnx_path;
  report.reference = options.reference_path.empty() ? "the model with its fake quantization removed"
                                                     : options.reference_path;
  report.samples = total;
  for (size_t i = 0; i < points->size(); ++i) {
    if (!(*points)[i].fp32_name.empty()) report.tensors.push_back(measures[i].finish());
  }
  sort_worst_first(report.tensors, options.order);
  for (const std::string& name : graph->outputs) {
    auto it = output_measures.find(name);
    if (it == output_measures.end()) continue;
    const OutputMeasure& measure = it->second;
    OutputComparison output;
    output.name = name;
    output.int8_vs_fp32 = measure.int8_vs_fp32.stats();
    bool rows = measure.argmax && measure.rows > 0;
    if (rows) output.top1_agreement = 100.0 * static_cast<double>(measure.agree) / static_cast<double>(measure.rows);
    if (measure.engine_ran) {
      output.engine_max_abs_diff = measure.engine_max_abs_diff;
      if (rows) {
        output.engine_top1_agreement =
            100.0 * static_cast<double>(measure.engine_agree) / static_cast<double>(measure.rows);
      }
    }
    if (labels && rows && report.outputs.empty()) {
      report.fp32_top1 = 100.0 * static_cast<double>(measure.fp32_correct) / static_cast<double>(measure.rows);
      report.int8_top1 = 100.0 * static_cast<double>(measure.int8_correct) / static_cast<double>(measure.rows);
    }
    report.outputs.push_back(output);
  }

  out << fmt::format("qdqrt compare: {} against {}, on {}\n", report.model, report.reference, input_description);
  if (report.fp32_top1 >= 0) {
    out << fmt::format("top-1: FP32 {:.2f}%, INT8 {:.2f}% ({:+.2f} points)\n", report.fp32_top1, report.int8_top1,
                       report.int8_top1 - report.fp32_top1);
  }
  for (const OutputComparison& output : report.outputs) {
    out << fmt::format("output {}: SQNR {:.1f} dB, cosine {:.4f}, max |err| {:.4g}", output.name,
                       output.int8_vs_fp32.sqnr_db, output.int8_vs_fp32.cosine, output.int8_vs_fp32.max_abs_error);
    if (output.top1_agreement >= 0) out << fmt::format(", top-1 agreement {:.2f}%", output.top1_agreement);
    out << "\n";
    if (output.engine_max_abs_diff >= 0) {
      out << fmt::format("  INT8 engine vs the quantized reference run: max |diff| {:.4g}{}\n",
                         output.engine_max_abs_diff,
                         output.engine_top1_agreement >= 0
                             ? fmt::format(", top-1 agreement {:.2f}%", output.engine_top1_agreement)
                             : std::string());
    }
  }
  out << fmt::format("=== Quantized tensors ({}, worst first by {} SQNR) ===\n", report.tensors.size(),
                     options.order == CompareOrder::kLocal ? "local" : "accumulated");
  out << format_compare_table(report, options.rows);
  out << "local SQNR: the FP32 tensor through its own Q/DQ (what this scale alone costs); SQNR: the INT8 run\n"
         "against the FP32 run there (error accumulated from the input). A low local SQNR with clipping means\n"
         "a range too narrow, without clipping a range too wide; keep its readers in float with\n"
         "qdqrt calibrate --exclude=NODE or qdqrt exec --layerPrecisions=NODE:fp32.\n";
  if (!missing.empty()) {
    out << fmt::format("not compared ({} tensors absent from the FP32 reference): {}\n", missing.size(),
                       fmt::join(missing, ", "));
  }
  if (!options.json_path.empty()) {
    Status written = write_text_file("--json", options.json_path, compare_to_json(report).dump(2) + "\n");
    if (!written.is_ok()) return failure(written);
    out << "wrote " << options.json_path << "\n";
  }
  return report;
}

Command add_compare_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand(
      "compare", "Which layer loses accuracy: a Q/DQ model against its FP32 reference, tensor by tensor");
  command->footer(
      "Runs the model and its FP32 reference (the model with its fake quantization removed, or\n"
      "--reference) with the reference executor on the same samples; for every quantized activation:\n"
      "local SQNR (what its own Q/DQ costs), SQNR/cosine/max error of the INT8 run against the FP32 run,\n"
      "scale, zero-point, range seen and the share clipped, worst first. The INT8 engine runs the same\n"
      "samples to show the quantized reference run is what it computes.\n"
      "Example: qdqrt compare --onnx=ptq.onnx --data=fashion-mnist:test --samples=100\n");
  auto options = std::make_shared<CompareOptions>();
  auto mean = std::make_shared<std::string>();
  auto stddev = std::make_shared<std::string>();
  auto shapes = std::make_shared<std::vector<std::string>>();
  auto order = std::make_shared<std::string>("local");
  auto no_engine = std::make_shared<bool>(false);
  command->add_option("--onnx", options->onnx_path, "The quantized (Q/DQ) model")
      ->required()
      ->check(quiet(CLI::ExistingFile))
      ->type_name("FILE");
  command->add_option("--reference", options->reference_path,
                      "FP32 model with the same tensor names (default: the model without its fake quantization)")
      ->check(quiet(CLI::ExistingFile))
      ->type_name("FILE");
  command->add_option("--data", options->data_spec, "Images (as for qdqrt eval); default: seeded random inputs")
      ->type_name("SPEC");
  command->add_option("--mean", *mean, "Per-channel mean (default: the model's metadata)")->type_name("M[,M..]");
  command->add_option("--std", *stddev, "Per-channel standard deviation (default: the model's metadata)")
      ->type_name("S[,S..]");
  command->add_option("--batch", options->batch, "Images per run (memory holds every compared tensor of a batch)")
      ->check(quiet(CLI::Range(int64_t{1}, int64_t{4096})))
      ->capture_default_str()
      ->type_name("N");
  command->add_option("--samples", options->samples, "Images to run (the first N)")
      ->check(quiet(CLI::Range(int64_t{1}, int64_t{1} << 30)))
      ->capture_default_str()
      ->type_name("N");
  command->add_option("--shapes", *shapes, "Random inputs: shapes for symbolic dims, e.g. input:8x1x28x28")
      ->check(quiet(shapes_validator()))
      ->type_name("NAME:DIMS[,...]");
  command->add_option("--seed", options->seed, "Seed of the random inputs")->capture_default_str()->type_name("N");
  command->add_option("--rows", options->rows, "Table rows (0 = all)")->capture_default_str()->type_name("N");
  command->add_option("--sort", *order, "local (what each quantization costs) or accumulated")
      ->check(quiet(CLI::IsMember({"local", "accumulated"})))
      ->capture_default_str()
      ->type_name("ORDER");
  command->add_option("--json", options->json_path, "Write the report as JSON")->type_name("FILE");
  command->add_option("--threads", options->threads, "Threads of the INT8 engine (0 = all)")
      ->check(quiet(threads_validator()))
      ->type_name("N");
  command->add_flag("--noEngine", *no_engine, "Do not run the INT8 engine (reference runs only)");

  auto execute = [options, mean, stddev, shapes, order, no_engine]() -> int {
    CompareOptions resolved = *options;
    auto fail_usage = [](const Status& status) {
      std::cerr << "qdqrt compare: error: " << status.message() << "\n";
      return static_cast<int>(kExitUsage);
    };
    if (!mean->empty()) {
      auto values = parse_float_list(*mean, "--mean");
      if (!values.ok()) return fail_usage(values.status());
      resolved.mean = *values;
    }
    if (!stddev->empty()) {
      auto values = parse_float_list(*stddev, "--std");
      if (!values.ok()) return fail_usage(values.status());
      resolved.std = *values;
    }
    auto parsed_shapes = collect_shapes(*shapes);
    if (!parsed_shapes.ok()) return fail_usage(parsed_shapes.status().with_context("--shapes"));
    resolved.shapes = *parsed_shapes;
    resolved.order = *order == "accumulated" ? CompareOrder::kAccumulated : CompareOrder::kLocal;
    resolved.run_engine = !*no_engine;
    auto outcome = run_compare(resolved, std::cout);
    if (auto* error = std::get_if<RunError>(&outcome)) {
      std::cout.flush();
      std::cerr << "qdqrt compare: error: " << error->status.to_string() << "\n";
      return error->usage ? static_cast<int>(kExitUsage) : static_cast<int>(kExitFailure);
    }
    return static_cast<int>(kExitSuccess);
  };
  return Command{command, execute};
}

}  // namespace qdqrt::tools
