#include "tools/run_command.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tools/npy.h"
#include "parser/onnx_loader.h"
#include "tools/cli_flags.h"
#include "tools/commands.h"

namespace qdqrt::tools {

namespace {

std::string trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  size_t end = text.find_last_not_of(" \t");
  return text.substr(begin, end - begin + 1);
}

// Splits "a:x,'b,c':y" at commas outside single quotes.
Result<std::vector<std::string>> split_entries(const std::string& text) {
  std::vector<std::string> entries;
  std::string current;
  bool quoted = false;
  for (char c : text) {
    if (c == '\'') quoted = !quoted;
    if (c == ',' && !quoted) {
      entries.push_back(trim(current));
      current.clear();
    } else {
      current.push_back(c);
    }
  }
  if (quoted) return invalid_argument("unbalanced single quote in '{}'", text);
  entries.push_back(trim(current));
  for (const std::string& entry : entries) {
    if (entry.empty()) return invalid_argument("empty entry in '{}'", text);
  }
  return entries;
}

// float -> IEEE half bits, rounding to nearest even.
uint16_t float_to_half(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  uint32_t sign = (bits >> 16) & 0x8000u;
  uint32_t biased = (bits >> 23) & 0xFFu;
  uint32_t mantissa = bits & 0x7FFFFFu;
  if (biased == 0xFF) return static_cast<uint16_t>(sign | 0x7C00u | (mantissa ? 0x200u : 0u));
  int32_t exponent = static_cast<int32_t>(biased) - 127 + 15;
  if (exponent >= 31) return static_cast<uint16_t>(sign | 0x7C00u);
  if (exponent <= 0) {
    if (exponent < -10) return static_cast<uint16_t>(sign);
    mantissa |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - exponent);
    uint32_t half_mantissa = mantissa >> shift;
    uint32_t remainder = mantissa & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (remainder > halfway || (remainder == halfway && (half_mantissa & 1u))) ++half_mantissa;
    return static_cast<uint16_t>(sign | half_mantissa);
  }
  uint32_t half = sign | (static_cast<uint32_t>(exponent) << 10) | (mantissa >> 13);
  uint32_t remainder = mantissa & 0x1FFFu;
  if (remainder > 0x1000u || (remainder == 0x1000u && (half & 1u))) ++half;  // may carry into the exponent
  return static_cast<uint16_t>(half);
}

float half_to_float(uint16_t half) {
  uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  uint32_t exponent = (half >> 10) & 0x1Fu;
  uint32_t mantissa = half & 0x3FFu;
  float magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  } else if (exponent == 31) {
    magnitude = mantissa ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400u), static_cast<int>(exponent) - 25);
  }
  return sign ? -magnitude : magnitude;
}

float bfloat16_to_float(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof(value));
  return value;
}

// Element i as double for printing, including the 16-bit float types value_as_double() skips.
double element_as_double(const Tensor& tensor, int64_t index) {
  if (tensor.dtype() == DataType::kFloat16) return half_to_float(tensor.data<uint16_t>()[index]);
  if (tensor.dtype() == DataType::kBFloat16) return bfloat16_to_float(tensor.data<uint16_t>()[index]);
  return tensor.value_as_double(index);
}

std::string format_element(const Tensor& tensor, int64_t index) {
  if (tensor.dtype() == DataType::kBool) return tensor.data<bool>()[index] ? "true" : "false";
  if (dtype_is_float(tensor.dtype())) return fmt::format("{:.6g}", element_as_double(tensor, index));
  if (tensor.dtype() == DataType::kUint64) return fmt::format("{}", tensor.data<uint64_t>()[index]);
  return fmt::format("{}", tensor.value_as_int64(index));
}

// Uniform in [-1, 1) from the top 24 bits of one draw: exact in float32 and the same on every
// platform (std::uniform_real_distribution is implementation-defined).
float uniform_minus_one_to_one(std::mt19937_64& rng) {
  return static_cast<float>(rng() >> 40) * 0x1p-23f - 1.0f;
}

template <class T>
void fill_random_integers(Tensor& tensor, std::mt19937_64& rng) {
  T* data = tensor.data<T>();
  for (int64_t i = 0; i < tensor.numel(); ++i) data[i] = static_cast<T>(rng() % 4);
}

Status usage_error(const std::string& flag, const Status& status) { return status.with_context(flag); }

}  // namespace

Result<std::vector<InputFileSpec>> parse_load_inputs(const std::string& text) {
  QDQRT_ASSIGN_OR_RETURN(std::vector<std::string> entries, split_entries(text));
  std::vector<InputFileSpec> specs;
  for (const std::string& entry : entries) {
    InputFileSpec spec;
    size_t separator;
    if (entry.front() == '\'') {
      size_t close = entry.find('\'', 1);
      if (close == std::string::npos || close + 1 >= entry.size() || entry[close + 1] != ':') {
        return invalid_argument("'{}': expected 'NAME':FILE", entry);
      }
      spec.name = entry.substr(1, close - 1);
      separator = close + 1;
    } else {
      separator = entry.find(':');
      if (separator == std::string::npos) return invalid_argument("'{}': expected NAME:FILE", entry);
      spec.name = entry.substr(0, separator);
    }
    spec.path = entry.substr(separator + 1);
    if (spec.name.empty()) return invalid_argument("'{}': empty input name", entry);
    if (spec.path.empty()) return invalid_argument("'{}': empty file name", entry);
    specs.push_back(std::move(spec));
  }
  return specs;
}

// A dim given on the command line: larger ones cannot be a tensor anyone can run.
constexpr uint64_t kMaxShapeDim = (uint64_t{1} << 40) - 1;

Result<std::map<std::string, Shape>> parse_shapes(const std::string& text) {
  QDQRT_ASSIGN_OR_RETURN(std::vector<std::string> entries, split_entries(text));
  std::map<std::string, Shape> shapes;
  for (const std::string& entry : entries) {
    size_t separator = entry.rfind(':');
    if (separator == std::string::npos) return invalid_argument("'{}': expected NAME:DIMS such as x:1x3x224x224", entry);
    std::string name = entry.substr(0, separator);
    if (name.size() >= 2 && name.front() == '\'' && name.back() == '\'') name = name.substr(1, name.size() - 2);
    if (name.empty()) return invalid_argument("'{}': empty input name", entry);
    std::string dims_text = entry.substr(separator + 1);
    Shape shape;
    size_t begin = 0;
    while (!dims_text.empty()) {
      size_t end = dims_text.find('x', begin);
      std::string dim_text = dims_text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
      if (dim_text.empty() || dim_text.find_first_not_of("0123456789") != std::string::npos) {
        return invalid_argument("'{}': dim '{}' is not a non-negative integer (dims are separated by 'x')", entry,
                                dim_text);
      }
      uint64_t dim = 0;
      auto [parsed_end, error] = std::from_chars(dim_text.data(), dim_text.data() + dim_text.size(), dim);
      if (error != std::errc() || dim > kMaxShapeDim) {
        return invalid_argument("'{}': dim {} is too large (at most {})", entry, dim_text, kMaxShapeDim);
      }
      shape.push_back(static_cast<int64_t>(dim));
      if (end == std::string::npos) break;
      begin = end + 1;
    }
    if (!shapes.emplace(name, shape).second) return invalid_argument("input '{}' is given twice", name);
  }
  return shapes;
}

Result<Shape> resolve_input_shape(const ValueInfo& info, const std::optional<Shape>& requested) {
  if (!info.shape) {
    if (requested) return *requested;
    return invalid_argument("input '{}' has unknown rank in the model; give its shape with --shapes={}:DIMS",
                            info.name, info.name);
  }
  const std::vector<Dim>& dims = *info.shape;
  if (requested && requested->size() != dims.size()) {
    return invalid_argument("--shapes: input '{}' has rank {} {} in the model, got {}", info.name, dims.size(),
                            dims_to_string(dims), shape_to_string(*requested));
  }
  Shape shape;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i].is_static()) {
      if (requested && (*requested)[i] != dims[i].value) {
        return invalid_argument("--shapes: input '{}' has static dim {} = {} in the model {}, got {}", info.name, i,
                                dims[i].value, dims_to_string(dims), shape_to_string(*requested));
      }
      shape.push_back(dims[i].value);
    } else {
      if (i == 0 && requested && (*requested)[0] < 1) {
        // As exec refuses it: a batch of 0 images is no run.
        return invalid_argument("--shapes: input '{}': the batch size must be at least 1, got {}", info.name,
                                (*requested)[0]);
      }
      shape.push_back(requested ? (*requested)[i] : 1);  // symbolic (batch) dims default to 1
    }
  }
  return shape;
}

Status check_input_tensor(const ValueInfo& info, const Tensor& tensor, const std::optional<Shape>& requested) {
  if (info.dtype != DataType::kUndefined && info.dtype != tensor.dtype()) {
    return invalid_argument("input '{}' has dtype {} in the model, the file holds {}", info.name,
                            dtype_name(info.dtype), dtype_name(tensor.dtype()));
  }
  if (requested && *requested != tensor.shape()) {
    return invalid_argument("input '{}': the file holds shape {}, --shapes says {}", info.name,
                            shape_to_string(tensor.shape()), shape_to_string(*requested));
  }
  if (!info.shape) return Status::ok();
  const std::vector<Dim>& dims = *info.shape;
  if (dims.size() != tensor.shape().size()) {
    return invalid_argument("input '{}' has rank {} {} in the model, the file holds shape {}", info.name, dims.size(),
                            dims_to_string(dims), shape_to_string(tensor.shape()));
  }
  if (!dims.empty() && !dims[0].is_static() && tensor.shape()[0] < 1) {
    return invalid_argument("input '{}': the batch size must be at least 1, the file holds shape {}", info.name,
                            shape_to_string(tensor.shape()));
  }
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i].is_static() && dims[i].value != tensor.shape()[i]) {
      return invalid_argument("input '{}' has shape {} in the model, the file holds shape {} (dim {} differs)",
                              info.name, dims_to_string(dims), shape_to_string(tensor.shape()), i);
    }
  }
  return Status::ok();
}

Result<Tensor> random_tensor(DataType dtype, const Shape& shape, std::mt19937_64& rng) {
  // Check the size before allocating: shapes come from the user.
  uint64_t numel = 1;
  for (int64_t dim : shape) {
    if (dim < 0) return invalid_argument("negative dim in shape {}", shape_to_string(shape));
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(dim), &numel) || numel > (uint64_t{1} << 34)) {
      return invalid_argument("shape {} is too large for a random input", shape_to_string(shape));
    }
  }
  if (dtype_size(dtype) == 0) return unsupported("cannot generate random values of dtype {}", dtype_name(dtype));
  Tensor tensor(dtype, shape);
  switch (dtype) {
    case DataType::kFloat: {
      float* data = tensor.data<float>();
      for (int64_t i = 0; i < tensor.numel(); ++i) data[i] = uniform_minus_one_to_one(rng);
      break;
    }
    case DataType::kDouble: {
      double* data = tensor.data<double>();
      for (int64_t i = 0; i < tensor.numel(); ++i) data[i] = uniform_minus_one_to_one(rng);
      break;
    }
    case DataType::kFloat16: {
      uint16_t* data = tensor.data<uint16_t>();
      for (int64_t i = 0; i < tensor.numel(); ++i) data[i] = float_to_half(uniform_minus_one_to_one(rng));
      break;
    }
    case DataType::kBFloat16: {
      uint16_t* data = tensor.data<uint16_t>();
      for (int64_t i = 0; i < tensor.numel(); ++i) {
        float value = uniform_minus_one_to_one(rng);
        uint32_t bits;
        std::memcpy(&bits, &value, sizeof(bits));
        data[i] = static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);  // round to nearest even
      }
      break;
    }
    case DataType::kBool: {
      bool* data = tensor.data<bool>();
      for (int64_t i = 0; i < tensor.numel(); ++i) data[i] = (rng() & 1u) != 0;
      break;
    }
    case DataType::kInt8: case DataType::kInt4: fill_random_integers<int8_t>(tensor, rng); break;
    case DataType::kUint8: case DataType::kUint4: fill_random_integers<uint8_t>(tensor, rng); break;
    case DataType::kInt16: fill_random_integers<int16_t>(tensor, rng); break;
    case DataType::kUint16: fill_random_integers<uint16_t>(tensor, rng); break;
    case DataType::kInt32: fill_random_integers<int32_t>(tensor, rng); break;
    case DataType::kUint32: fill_random_integers<uint32_t>(tensor, rng); break;
    case DataType::kInt64: fill_random_integers<int64_t>(tensor, rng); break;
    case DataType::kUint64: fill_random_integers<uint64_t>(tensor, rng); break;
    case DataType::kUndefined: case DataType::kString:
      return unsupported("cannot generate random values of dtype {}", dtype_name(dtype));
  }
  return tensor;
}

Result<TensorMap> prepare_inputs(const Graph& graph, const RunOptions& options, std::ostream& log) {
  std::set<std::string> graph_inputs(graph.inputs.begin(), graph.inputs.end());
  std::string input_list = fmt::format("{}", fmt::join(graph.inputs, ", "));
  std::map<std::string, std::string> files;
  for (const InputFileSpec& spec : options.input_files) {
    if (!graph_inputs.count(spec.name)) {
      return usage_error("--loadInputs", invalid_argument("'{}' is not an input of the model (inputs: {})", spec.name,
                                                          input_list));
    }
    if (!files.emplace(spec.name, spec.path).second) {
      return usage_error("--loadInputs", invalid_argument("input '{}' is given twice", spec.name));
    }
  }
  for (const auto& [name, shape] : options.shapes) {
    if (!graph_inputs.count(name)) {
      return usage_error("--shapes",
                         invalid_argument("'{}' is not an input of the model (inputs: {})", name, input_list));
    }
  }

  TensorMap inputs;
  for (size_t index = 0; index < graph.inputs.size(); ++index) {
    const std::string& name = graph.inputs[index];
    ValueInfo info;
    info.name = name;
    if (const ValueInfo* found = graph.find_value(name)) info = *found;
    std::optional<Shape> requested;
    if (auto it = options.shapes.find(name); it != options.shapes.end()) requested = it->second;

    if (auto file = files.find(name); file != files.end()) {
      auto tensor = read_npy(file->second);
      if (!tensor.ok()) return usage_error("--loadInputs", tensor.status());
      Status status = check_input_tensor(info, *tensor, requested);
      if (!status.is_ok()) return usage_error(fmt::format("--loadInputs: '{}'", file->second), status);
      if (options.verbose) {
        log << fmt::format("input '{}': {} {} from {}\n", name, dtype_name(tensor->dtype()),
                           shape_to_string(tensor->shape()), file->second);
      }
      inputs[name] = *tensor;
      continue;
    }
    if (info.dtype == DataType::kUndefined) {
      return usage_error("--loadInputs",
                         invalid_argument("input '{}' has no dtype in the model; give it as a .npy file", name));
    }
    auto shape = resolve_input_shape(info, requested);
    if (!shape.ok()) return shape.status();
    // One generator per input, so an input's values do not depend on which others come from files.
    std::seed_seq seed_sequence{static_cast<uint32_t>(options.seed), static_cast<uint32_t>(options.seed >> 32),
                                static_cast<uint32_t>(index)};
    std::mt19937_64 rng(seed_sequence);
    auto tensor = random_tensor(info.dtype, *shape, rng);
    if (!tensor.ok()) return tensor.status().with_context(fmt::format("input '{}'", name));
    if (options.verbose) {
      log << fmt::format("input '{}': {} {} random (seed {})\n", name, dtype_name(info.dtype), shape_to_string(*shape),
                         options.seed);
    }
    inputs[name] = *tensor;
  }
  return inputs;
}

std::string summarize_tensor(const std::string& name, const Tensor& tensor) {
  constexpr int64_t kShownValues = 8;
  constexpr int64_t kShownRows = 8;
  std::string text = fmt::format("{}: {} {}\n", name, dtype_name(tensor.dtype()), shape_to_string(tensor.shape()));
  if (dtype_size(tensor.dtype()) == 0) return text;
  int64_t numel = tensor.numel();
  if (numel == 0) return text + "  (empty)\n";

  std::vector<std::string> shown;
  for (int64_t i = 0; i < std::min(numel, kShownValues); ++i) shown.push_back(format_element(tensor, i));
  text += fmt::format("  values: {}{}\n", fmt::join(shown, " "),
                      numel > kShownValues ? fmt::format(" ... ({} total)", numel) : "");

  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  double sum = 0.0;
  int64_t nan_count = 0;
  for (int64_t i = 0; i < numel; ++i) {
    double value = element_as_double(tensor, i);
    if (std::isnan(value)) {
      ++nan_count;
      continue;
    }
    min = std::min(min, value);
    max = std::max(max, value);
    sum += value;
  }
  if (nan_count < numel) {
    text += fmt::format("  min {:.6g}  max {:.6g}  mean {:.6g}", min, max, sum / static_cast<double>(numel - nan_count));
  }
  if (nan_count > 0) text += fmt::format("  ({} NaN)", nan_count);
  text += "\n";

  // Float [N, C] outputs are usually logits or scores: the class per row is what users look at.
  if (tensor.rank() == 2 && tensor.dim(1) > 0 && dtype_is_float(tensor.dtype())) {
    int64_t rows = tensor.dim(0);
    int64_t columns = tensor.dim(1);
    std::vector<int64_t> argmax;
    for (int64_t row = 0; row < std::min(rows, kShownRows); ++row) {
      int64_t best = 0;
      for (int64_t column = 1; column < columns; ++column) {
        if (element_as_double(tensor, row * columns + column) > element_as_double(tensor, row * columns + best)) {
          best = column;
        }
      }
      argmax.push_back(best);
    }
    text += fmt::format("  argmax per row: [{}]{}\n", fmt::join(argmax, ", "), rows > kShownRows ? " ..." : "");
  }
  return text;
}

std::string sanitize_file_name(const std::string& name) {
  std::string out;
  for (char c : name) {
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                c == '-';
    out.push_back(keep ? c : '_');
  }
  if (out.empty() || out == "." || out == "..") out = "output" + out;
  return out;
}

std::optional<RunError> run_loaded_graph(const Graph& graph, const RunOptions& options, std::ostream& out) {
  if (options.iterations < 1) {
    return RunError{true, invalid_argument("--iterations: must be at least 1, got {}", options.iterations)};
  }
  if (options.verbose) {
    std::map<std::string, int> op_counts;
    for (const Node& node : graph.nodes) ++op_counts[node.op_type];
    std::vector<std::string> ops;
    for (const auto& [op, count] : op_counts) ops.push_back(fmt::format("{} x{}", op, count));
    out << fmt::format("model '{}': {} nodes ({}), opset {}\n", graph.name, graph.nodes.size(), fmt::join(ops, ", "),
                       graph.opset());
  }
  auto inputs = prepare_inputs(graph, options, out);
  if (!inputs.ok()) return RunError{true, inputs.status()};

  std::vector<double> times_ms;
  std::optional<TensorMap> outputs;
  for (int iteration = 0; iteration < options.iterations; ++iteration) {
    auto start = std::chrono::steady_clock::now();
    auto result = run_reference(graph, *inputs);
    auto stop = std::chrono::steady_clock::now();
    if (!result.ok()) return RunError{false, result.status()};
    times_ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
    if (!outputs) outputs = std::move(result).value();
  }

  for (const std::string& name : graph.outputs) {
    auto it = outputs->find(name);
    if (it == outputs->end()) return RunError{false, internal_error("output '{}' missing from the results", name)};
    out << summarize_tensor(name, it->second);
  }
  std::vector<double> sorted = times_ms;
  std::sort(sorted.begin(), sorted.end());
  double median = sorted.size() % 2 ? sorted[sorted.size() / 2]
                                    : (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2.0;
  out << fmt::format("time (reference executor, {} iteration{}): median {:.3f} ms, min {:.3f} ms\n",
                     options.iterations, options.iterations == 1 ? "" : "s", median, sorted.front());

  if (!options.save_outputs_dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(options.save_outputs_dir, error);
    if (error) {
      return RunError{false, io_error("--saveOutputs: cannot create directory '{}': {}", options.save_outputs_dir,
                                      error.message())};
    }
    std::set<std::string> used_names;
    for (const std::string& name : graph.outputs) {
      std::string base = sanitize_file_name(name);
      std::string file_name = base;
      for (int suffix = 1; used_names.count(file_name); ++suffix) file_name = fmt::format("{}_{}", base, suffix);
      used_names.insert(file_name);
      std::string path = (std::filesystem::path(options.save_outputs_dir) / (file_name + ".npy")).string();
      Status status = write_npy(path, outputs->at(name));
      if (!status.is_ok()) return RunError{false, status.with_context("--saveOutputs")};
      if (options.verbose) out << fmt::format("saved '{}' to {}\n", name, path);
    }
  }
  return std::nullopt;
}

std::optional<RunError> run_model(const RunOptions& options, std::ostream& out) {
  auto graph = load_onnx_file(options.onnx_path);
  if (!graph.ok()) return RunError{false, graph.status().with_context(fmt::format("--onnx: '{}'", options.onnx_path))};
  return run_loaded_graph(*graph, options, out);
}

Command add_run_command(CLI::App& app) {
  CLI::App* run = app.add_subcommand("run", "Run a model with the reference executor and print its outputs");
  run->footer(
      "Inputs not given with --loadInputs get seeded random values: floats uniform in [-1, 1),\n"
      "integers in [0, 3], bools 0/1; symbolic dims (batch) are 1 unless --shapes sets them.\n"
      "Example: qdqrt run --onnx=model.onnx --loadInputs=input:image.npy --saveOutputs=out/\n");
  auto options = std::make_shared<RunOptions>();
  auto load_inputs = std::make_shared<std::vector<std::string>>();
  auto shapes = std::make_shared<std::vector<std::string>>();

  // Validators run at parse time so a bad value is reported like any other flag error.
  CLI::Validator load_inputs_syntax = load_inputs_validator();
  CLI::Validator shapes_syntax = shapes_validator();

  run->add_option("--onnx", options->onnx_path, "The ONNX model to run")
      ->required()
      ->check(quiet(CLI::ExistingFile))
      ->type_name("FILE");
  run->add_option("--loadInputs", *load_inputs,
                  "Inputs from .npy files, comma-separated or repeated\n"
                  "(quote names holding ':' or ',': 'in:0':x.npy)")
      ->check(quiet(load_inputs_syntax))
      ->type_name("NAME:FILE[,...]");
  run->add_option("--shapes", *shapes, "Shapes of inputs with symbolic dims, e.g. x:8x3x224x224")
      ->check(quiet(shapes_syntax))
      ->type_name("NAME:DIMS[,...]");
  run->add_option("--saveOutputs", options->save_outputs_dir,
                  "Write each output to DIR/<output name>.npy (DIR is created)")
      ->check(quiet(CLI::ExistingDirectory | CLI::NonexistentPath))
      ->type_name("DIR");
  run->add_option("--seed", options->seed, "Seed for the random inputs")->capture_default_str()->type_name("N");
  run->add_option("--iterations", options->iterations, "Runs to time; outputs come from the first")
      ->check(quiet(CLI::Range(1, 1000000)))
      ->capture_default_str()
      ->type_name("N");
  run->add_flag("--verbose", options->verbose, "Print the model summary and where each input comes from");

  auto execute = [options, load_inputs, shapes]() -> int {
    // The validators accepted the syntax already; parse again to fill the options.
    auto specs = collect_load_inputs(*load_inputs);
    if (!specs.ok()) {
      std::cerr << "qdqrt run: error: --loadInputs: " << specs.status().message() << "\n";
      return kExitUsage;
    }
    options->input_files = std::move(specs).value();
    auto parsed_shapes = collect_shapes(*shapes);
    if (!parsed_shapes.ok()) {
      std::cerr << "qdqrt run: error: --shapes: " << parsed_shapes.status().message() << "\n";
      return kExitUsage;
    }
    options->shapes = std::move(parsed_shapes).value();
    std::optional<RunError> error = run_model(*options, std::cout);
    if (!error) return kExitSuccess;
    std::cout.flush();
    std::cerr << "qdqrt run: error: " << error->status.to_string() << "\n";
    return error->usage ? kExitUsage : kExitFailure;
  };
  return Command{run, execute};
}

}  // namespace qdqrt::tools
