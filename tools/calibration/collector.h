// Runs the FP32 model (reference executor) over calibration images and collects, per tensor, the
// largest |x| and (for the histogram methods) a histogram of |x| over [0, that maximum].
// Two passes like TensorRT's calibrator: maxima first, then histograms with a range known up front,
// so per-thread histograms have equal bins and merge exactly (results do not depend on threads).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/status.h"
#include "tools/calibration/histogram.h"

namespace qdqrt::calibration {

struct CollectOptions {
  int64_t batch_size = 32;   // images per reference run
  int threads = 0;           // 0 = all cores
  int histogram_bins = kDefaultHistogramBins;
  bool show_progress = false;  // progress bar on stderr
  // Graph inputs keep their full range (max) whatever the method: preprocessed images are
  // bounded, and clipping them discards information no later layer can recover (entropy on
  // normalized Fashion-MNIST clips every pixel brighter than the background's magnitude).
  bool inputs_by_max = true;
};

// images: float32 [N, ...] fed to the graph's only input in batches. Returns max |x| per tensor.
Result<std::map<std::string, float>> collect_max(const Graph& graph, const Tensor& images,
                                                 const std::vector<std::string>& tensors, const CollectOptions& options);

// Histograms of |x| over [0, ranges.at(name)].
Result<std::map<std::string, Histogram>> collect_histograms(const Graph& graph, const Tensor& images,
                                                            const std::map<std::string, float>& ranges,
                                                            const CollectOptions& options);

// Both passes as the method needs, then amax per tensor (graph inputs by max if inputs_by_max).
Result<std::map<std::string, float>> calibrate_tensors(const Graph& graph, const Tensor& images,
                                                       const std::vector<std::string>& tensors, const MethodSpec& method,
                                                       const CollectOptions& options);

// The same over images that differ in size: groups of one size each ([n, ...]), every batch taken
// from one group and run at its size (the graph's dims there must be symbolic).
Result<std::map<std::string, float>> collect_max(const Graph& graph, const std::vector<Tensor>& image_groups,
                                                 const std::vector<std::string>& tensors,
                                                 const CollectOptions& options);
Result<std::map<std::string, Histogram>> collect_histograms(const Graph& graph, const std::vector<Tensor>& image_groups,
                                                            const std::map<std::string, float>& ranges,
                                                            const CollectOptions& options);
Result<std::map<std::string, float>> calibrate_tensors(const Graph& graph, const std::vector<Tensor>& image_groups,
                                                       const std::vector<std::string>& tensors,
                                                       const MethodSpec& method, const CollectOptions& options);

}  // namespace qdqrt::calibration
