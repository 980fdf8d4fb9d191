// The C++ API side of python/tests/test_predictions.py: the first N Fashion-MNIST test images
// (normalized as `qdqrt eval --mean=0.2860 --std=0.3530` does) through Engine::build_from_file and
// ExecutionContext::run at batch 1; writes the images and the top-1 predictions as .npy files.
//   qdqrt_predict_fmnist MODEL.onnx N IMAGES.npy PREDICTIONS.npy
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "tools/datasets.h"
#include "tools/npy.h"

int main(int argc, char** argv) {
  using namespace qdqrt;
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s MODEL.onnx N IMAGES.npy PREDICTIONS.npy\n", argv[0]);
    return 2;
  }
  auto fail = [](const Status& status) {
    std::fprintf(stderr, "error: %s\n", status.to_string().c_str());
    return 1;
  };
  auto data = tools::load_dataset("fashion-mnist:test",
                                  {.mean = {0.2860f}, .std = {0.3530f}, .max_images = std::atoll(argv[2])});
  if (!data.ok()) return fail(data.status());
  auto engine = engine::Engine::build_from_file(argv[1], {});
  if (!engine.ok()) return fail(engine.status());
  auto context = (*engine)->create_context({.threads = 1});
  const std::string input = (*engine)->inputs()[0].name;
  const std::string output = (*engine)->outputs()[0].name;
  const int64_t images = data->size();
  const int64_t pixels = data->images.numel() / images;
  std::vector<int64_t> predictions;
  for (int64_t i = 0; i < images; ++i) {
    float logits[10];
    Status status =
        context->run({{input, data->images.data<float>() + i * pixels, {1, 1, 28, 28}}}, {{output, logits, {1, 10}}});
    if (!status.is_ok()) return fail(status);
    int64_t best = 0;
    for (int64_t c = 1; c < 10; ++c) best = logits[c] > logits[best] ? c : best;
    predictions.push_back(best);
  }
  Status written = write_npy(argv[3], data->images);
  if (written.is_ok()) written = write_npy(argv[4], Tensor::from_vector<int64_t>({images}, predictions));
  return written.is_ok() ? 0 : fail(written);
}
