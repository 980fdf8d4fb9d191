// Shared by the engine tests (engine_batch, engine_profiles, conformance, server, tools_eval): run
// an engine on a few images of a batch at a time and cut outputs into per-image slices along the
// batch dim the engine reports (IoTensorInfo::batch_axis); run a range engine at given shapes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/profiles.h"
#include "reference/executor.h"

namespace qdqrt::batch_testing {

// Images [begin, begin + count) of every batched input (dim 0); other inputs as they are.
TensorMap input_images(const engine::Engine& engine, const TensorMap& inputs, int64_t begin, int64_t count);

// Runs `count` images from `begin` in one run; outputs shaped for that batch.
Result<TensorMap> run_images(const engine::Engine& engine, engine::ExecutionContext& context, const TensorMap& inputs,
                             int64_t begin, int64_t count);

// Runs a range engine's `context` at `inputs`' shapes; outputs shaped as the range engine says.
Result<TensorMap> run_range(const engine::RangeEngine& range, engine::RangeContext& context, const TensorMap& inputs);

// Slices [first, first + count) of `tensor` along `axis`, each `factor` wide.
Tensor slice(const Tensor& tensor, size_t axis, int64_t factor, int64_t first, int64_t count);

// Every output of `engine` for `images` images, run `per_run` images at a time; per output, the
// per-image slices in image order (a static output: one entry per run).
struct PerImageOutputs {
  std::map<std::string, std::vector<Tensor>> slices;
};
Result<PerImageOutputs> run_per_image(const engine::Engine& engine, const TensorMap& inputs, int64_t images,
                                      int64_t per_run, int threads = 2);

bool bit_equal(const Tensor& a, const Tensor& b);
// max |a - b| / max(max |b|, 1e-6) (NaN where both are NaN counts as equal; 1e9 on shape or dtype mismatch).
double relative_error(const Tensor& actual, const Tensor& expected);

// ONNX text (onnx::OnnxParser) plus float initializers made here (name -> shape, uniform in
// [-scale, scale], seeded), written to `path`.
struct FloatInitializer {
  std::string name;
  Shape shape;
  float scale = 1.0f;
};
Status write_text_model(const std::string& text, const std::vector<FloatInitializer>& initializers, uint32_t seed,
                        const std::string& path);

// Random fp32 values uniform in [-1, 1].
Tensor random_tensor(const Shape& shape, uint32_t seed);

// A model written by write_text_model to `path` and the engine built from that file; a failure
// is a test failure and leaves `engine` null.
struct TextModelEngine {
  std::string path;
  std::shared_ptr<const engine::Engine> engine;
};
TextModelEngine build_text_model(const std::string& text, const std::vector<FloatInitializer>& initializers,
                                 uint32_t seed, const std::string& path, const engine::BuildOptions& options);

// The plan tensor of a value, or nullptr.
const engine::PlanTensor* find_plan_tensor(const engine::EnginePlan& plan, const std::string& name);

// Per image of `inputs` (`images` of them): runs of 1 and 3 images give output `output` bit for
// bit as the run of all of them, and that run matches the reference executor on the model file
// within `reference_tolerance` (relative_error).
void expect_batch_independent(const TextModelEngine& built, const TensorMap& inputs, int64_t images,
                              const std::string& output, double reference_tolerance);

}  // namespace qdqrt::batch_testing
