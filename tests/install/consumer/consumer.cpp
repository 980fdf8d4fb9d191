// Builds an engine from an ONNX model with the installed public API, runs it once at batch 1 and
// prints the version, the output's shape and the top-1 class of an all-zero image; then the same
// from a range engine (engine/profiles.h) for batches 1..2, which must agree.
//   consumer MODEL.onnx
#include <cstdio>
#include <vector>

#include "core/version.h"
#include "engine/engine.h"
#include "engine/profiles.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  auto engine = qdqrt::engine::Engine::build_from_file(argv[1], {});
  if (!engine.ok()) {
    std::fprintf(stderr, "%s\n", engine.status().to_string().c_str());
    return 1;
  }
  auto context = (*engine)->create_context({.threads = 1});
  const qdqrt::engine::IoTensorInfo input = (*engine)->inputs()[0];
  const qdqrt::engine::IoTensorInfo output = (*engine)->outputs()[0];
  std::vector<float> image(static_cast<size_t>(qdqrt::shape_numel(input.shape_at_batch(1))), 0.0f);
  std::vector<float> scores(static_cast<size_t>(qdqrt::shape_numel(output.shape_at_batch(1))));
  qdqrt::Status status = context->run({{input.name, image.data(), input.shape_at_batch(1)}},
                                      {{output.name, scores.data(), output.shape_at_batch(1)}});
  if (!status.is_ok()) {
    std::fprintf(stderr, "%s\n", status.to_string().c_str());
    return 1;
  }
  // The range engine: the same image at batch 1 gives the same scores.
  const qdqrt::Shape one = input.shape_at_batch(1);
  qdqrt::Shape two = one;
  two[0] = 2;
  auto range = qdqrt::engine::RangeEngine::build_from_file(argv[1], {{input.name, {one, two, two}}}, {});
  if (!range.ok()) {
    std::fprintf(stderr, "%s\n", range.status().to_string().c_str());
    return 1;
  }
  auto range_context = (*range)->create_context({.threads = 1});
  std::vector<float> range_scores(scores.size());
  status = range_context->run({{input.name, image.data(), one}},
                              {{output.name, range_scores.data(), output.shape_at_batch(1)}});
  if (!status.is_ok() || range_scores != scores) {
    std::fprintf(stderr, "range engine: %s\n", status.is_ok() ? "other scores" : status.to_string().c_str());
    return 1;
  }
  size_t best = 0;
  for (size_t i = 1; i < scores.size(); ++i) best = scores[i] > scores[best] ? i : best;
  std::printf("qdqrt %s: %s %s, top-1 %zu\n", qdqrt::kVersion, output.name.c_str(),
              qdqrt::shape_to_string(output.shape_at_batch(1)).c_str(), best);
  return 0;
}
