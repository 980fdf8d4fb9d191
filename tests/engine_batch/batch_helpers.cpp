#include "tests/engine_batch/batch_helpers.h"

#include <gtest/gtest.h>
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>

#include "parser/onnx_loader.h"

namespace qdqrt::batch_testing {

Tensor slice(const Tensor& tensor, size_t axis, int64_t factor, int64_t first, int64_t count) {
  const Shape& shape = tensor.shape();
  int64_t outer = 1, inner = static_cast<int64_t>(dtype_size(tensor.dtype()));
  for (size_t d = 0; d < axis; ++d) outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  Shape sliced = shape;
  sliced[axis] = count * factor;
  Tensor result(tensor.dtype(), sliced);
  const auto* source = static_cast<const uint8_t*>(tensor.raw_data());
  auto* target = static_cast<uint8_t*>(result.raw_data());
  const int64_t row = count * factor * inner;
  for (int64_t o = 0; o < outer; ++o) {
    std::memcpy(target + o * row, source + (o * shape[axis] + first * factor) * inner, static_cast<size_t>(row));
  }
  return result;
}

TensorMap input_images(const engine::Engine& engine, const TensorMap& inputs, int64_t begin, int64_t count) {
  TensorMap result;
  for (const engine::IoTensorInfo& info : engine.inputs()) {
    const Tensor& tensor = inputs.at(info.name);
    result[info.name] = info.batched ? slice(tensor, 0, 1, begin, count) : tensor;
  }
  return result;
}

Result<TensorMap> run_images(const engine::Engine& engine, engine::ExecutionContext& context, const TensorMap& inputs,
                             int64_t begin, int64_t count) {
  TensorMap run_inputs = input_images(engine, inputs, begin, count);
  std::vector<engine::ConstTensorBinding> input_bindings;
  for (const auto& [name, tensor] : run_inputs) input_bindings.push_back({name, tensor.raw_data(), tensor.shape()});
  TensorMap outputs;
  for (const engine::IoTensorInfo& info : engine.outputs())
    outputs[info.name] = Tensor(info.dtype, info.shape_at_batch(count));
  std::vector<engine::TensorBinding> output_bindings;
  for (auto& [name, tensor] : outputs) output_bindings.push_back({name, tensor.raw_data(), tensor.shape()});
  QDQRT_RETURN_IF_ERROR(context.run(input_bindings, output_bindings));
  return outputs;
}

Result<TensorMap> run_range(const engine::RangeEngine& range, engine::RangeContext& context, const TensorMap& inputs) {
  std::map<std::string, Shape> shapes;
  std::vector<engine::ConstTensorBinding> input_bindings;
  for (const auto& [name, tensor] : inputs) {
    shapes[name] = tensor.shape();
    input_bindings.push_back({name, tensor.raw_data(), tensor.shape()});
  }
  QDQRT_ASSIGN_OR_RETURN(std::vector<engine::IoTensorInfo> infos, range.output_infos(shapes));
  TensorMap outputs;
  for (const engine::IoTensorInfo& info : infos) outputs[info.name] = Tensor(info.dtype, info.shape);
  std::vector<engine::TensorBinding> output_bindings;
  for (auto& [name, tensor] : outputs) output_bindings.push_back({name, tensor.raw_data(), tensor.shape()});
  QDQRT_RETURN_IF_ERROR(context.run(input_bindings, output_bindings));
  return outputs;
}

Result<PerImageOutputs> run_per_image(const engine::Engine& engine, const TensorMap& inputs, int64_t images,
                                      int64_t per_run, int threads) {
  auto context = engine.create_context({.threads = threads});
  PerImageOutputs result;
  for (int64_t begin = 0; begin < images; begin += per_run) {
    const int64_t count = std::min(per_run, images - begin);
    QDQRT_ASSIGN_OR_RETURN(TensorMap outputs, run_images(engine, *context, inputs, begin, count));
    for (const engine::IoTensorInfo& info : engine.outputs()) {
      const Tensor& output = outputs.at(info.name);
      std::vector<Tensor>& slices = result.slices[info.name];
      if (!info.batched) {
        slices.push_back(output);
        continue;
      }
      for (int64_t image = 0; image < count; ++image) {
        slices.push_back(slice(output, static_cast<size_t>(info.batch_axis), info.batch_factor, image, 1));
      }
    }
  }
  return result;
}

bool bit_equal(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

double relative_error(const Tensor& actual, const Tensor& expected) {
  if (actual.dtype() != expected.dtype() || actual.shape() != expected.shape()) return 1e9;
  double max_difference = 0, max_expected = 1e-6;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    const double a = actual.value_as_double(i), e = expected.value_as_double(i);
    if (std::isnan(a) && std::isnan(e)) continue;
    if (std::isnan(a) || std::isnan(e)) return 1e9;
    max_difference = std::max(max_difference, std::fabs(a - e));
    max_expected = std::max(max_expected, std::fabs(e));
  }
  return max_difference / max_expected;
}

Tensor random_tensor(const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  Tensor tensor(DataType::kFloat, shape);
  for (int64_t i = 0; i < tensor.numel(); ++i) tensor.data<float>()[i] = uniform(rng);
  return tensor;
}

Status write_text_model(const std::string& text, const std::vector<FloatInitializer>& initializers, uint32_t seed,
                        const std::string& path) {
  onnx::ModelProto model;
  auto parsed = onnx::OnnxParser::Parse(model, text.c_str());
  if (!parsed.IsOK()) return invalid_model("ONNX text: {}", parsed.ErrorMessage());
  std::mt19937 rng(seed);
  for (const FloatInitializer& initializer : initializers) {
    std::uniform_real_distribution<float> uniform(-initializer.scale, initializer.scale);
    onnx::TensorProto* proto = model.mutable_graph()->add_initializer();
    proto->set_name(initializer.name);
    proto->set_data_type(onnx::TensorProto::FLOAT);
    int64_t count = 1;
    for (int64_t dim : initializer.shape) {
      proto->add_dims(dim);
      count *= dim;
    }
    for (int64_t i = 0; i < count; ++i) proto->add_float_data(uniform(rng));
  }
  std::ofstream file(path, std::ios::binary);
  if (!file || !model.SerializeToOstream(&file)) return io_error("cannot write '{}'", path);
  return Status::ok();
}

TextModelEngine build_text_model(const std::string& text, const std::vector<FloatInitializer>& initializers,
                                 uint32_t seed, const std::string& path, const engine::BuildOptions& options) {
  Status written = write_text_model(text, initializers, seed, path);
  EXPECT_TRUE(written.is_ok()) << written.to_string();
  auto engine = engine::Engine::build_from_file(path, options);
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  return {path, engine.ok() ? *engine : nullptr};
}

const engine::PlanTensor* find_plan_tensor(const engine::EnginePlan& plan, const std::string& name) {
  const int32_t index = plan.find_tensor(name);
  return index < 0 ? nullptr : &plan.tensors[static_cast<size_t>(index)];
}

void expect_batch_independent(const TextModelEngine& built, const TensorMap& inputs, int64_t images,
                              const std::string& output, double reference_tolerance) {
  const engine::Engine& engine = *built.engine;
  auto full = run_per_image(engine, inputs, images, images);
  ASSERT_TRUE(full.ok()) << full.status().to_string();
  const std::vector<Tensor>& full_images = full->slices.at(output);
  for (int64_t per_run : {int64_t{1}, int64_t{3}}) {
    auto partial = run_per_image(engine, inputs, images, per_run);
    ASSERT_TRUE(partial.ok()) << "batch " << per_run << ": " << partial.status().to_string();
    const std::vector<Tensor>& partial_images = partial->slices.at(output);
    for (size_t image = 0; image < static_cast<size_t>(images); ++image) {
      EXPECT_TRUE(bit_equal(partial_images[image], full_images[image]))
          << "image " << image << " run " << per_run << " at a time differs from the batch-" << images
          << " run by " << relative_error(partial_images[image], full_images[image]);
    }
  }
  auto graph = load_onnx_file(built.path);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  auto expected = run_reference(*graph, inputs);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  for (int64_t image = 0; image < images; ++image) {
    EXPECT_LE(relative_error(full_images[static_cast<size_t>(image)], slice(expected->at(output), 0, 1, image, 1)),
              reference_tolerance)
        << "image " << image;
  }
}

}  // namespace qdqrt::batch_testing
