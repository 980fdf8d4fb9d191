#include "engine/layers/copy_geometry.h"

#include <array>
#include <string>

namespace qdqrt::engine {

bool fits(const CopyGeometry& geometry, const Shape& x, const BatchLayout& x_batch, const Shape& y,
          const BatchLayout& y_batch) {
  if (x.empty() || x.size() > kMaxCopyRank || y.empty() || y.size() > kMaxCopyRank) return false;
  if (geometry.source_axes.size() != y.size() || geometry.starts.size() != x.size()) return false;
  if (!geometry.steps.empty() && geometry.steps.size() != y.size()) return false;
  std::array<bool, kMaxCopyRank> walked{};
  for (size_t k = 0; k < y.size(); ++k) {
    const int64_t source = geometry.source_axes[k];
    const int64_t step = geometry.step(k);
    const bool y_batch_axis = y_batch.batched && static_cast<size_t>(y_batch.axis) == k;
    if (step < 1 || step > params::kMaxDim) return false;
    if (source < 0) {
      if (y_batch_axis && y_batch.factor != 1) return false;
      continue;
    }
    if (source >= static_cast<int64_t>(x.size()) || walked[static_cast<size_t>(source)]) return false;
    walked[static_cast<size_t>(source)] = true;
    const bool x_batch_axis = x_batch.batched && x_batch.axis == source;
    if (x_batch_axis != y_batch_axis || (x_batch_axis && (x_batch.factor != y_batch.factor || step != 1))) {
      return false;
    }
    const int64_t start = geometry.starts[static_cast<size_t>(source)];
    const int64_t extent = x[static_cast<size_t>(source)];
    if (start < 0 || (x_batch_axis && start != 0)) return false;
    // The last element walked, start + (y - 1) * step, is inside the input (dims <= 2^30: no overflow).
    if (y[k] > 0 && start + (y[k] - 1) * step >= extent) return false;
    if (y[k] == 0 && start > extent) return false;
  }
  for (size_t a = 0; a < x.size(); ++a) {
    if (walked[a]) continue;
    const int64_t start = geometry.starts[a];
    if ((x_batch.batched && static_cast<size_t>(x_batch.axis) == a) || start < 0 || start >= x[a]) return false;
  }
  // A batched output whose batch is broadcast reads no batched input; a batched input must be walked.
  if (x_batch.batched && !y_batch.batched) return false;
  return true;
}

CopyGeometry compose_copies(const CopyGeometry& first, const CopyGeometry& second) {
  CopyGeometry composed{.source_axes = {}, .starts = first.starts, .steps = {}};
  // Each of first's output axes walks at most one input axis: its start moves by second's start
  // on that output axis times the step first walks it by.
  for (size_t k = 0; k < first.source_axes.size(); ++k) {
    const int64_t a = first.source_axes[k];
    if (a >= 0) composed.starts[static_cast<size_t>(a)] += second.starts[k] * first.step(k);
  }
  bool unit_steps = true;
  std::vector<int64_t> steps;
  for (size_t m = 0; m < second.source_axes.size(); ++m) {
    const int64_t k = second.source_axes[m];
    const int64_t a = k < 0 ? -1 : first.source_axes[static_cast<size_t>(k)];
    composed.source_axes.push_back(a);
    const int64_t step = a < 0 ? 1 : second.step(m) * first.step(static_cast<size_t>(k));
    steps.push_back(step);
    unit_steps = unit_steps && step == 1;
  }
  if (!unit_steps) composed.steps = std::move(steps);
  return composed;
}

namespace {

// A Reshape that only drops or adds dims of 1: the other dims (the batch dim, where both have one,
// counted whatever its size) pair up in order.
std::optional<CopyGeometry> squeeze_geometry(const PlanTensor& x, const PlanTensor& y) {
  if (x.batched != y.batched) return std::nullopt;
  auto kept_axes = [](const PlanTensor& tensor) {
    std::vector<size_t> axes;
    for (size_t a = 0; a < tensor.shape.size(); ++a) {
      if (tensor.shape[a] != 1 || (tensor.batched && static_cast<size_t>(tensor.batch_axis) == a)) axes.push_back(a);
    }
    return axes;
  };
  const std::vector<size_t> x_axes = kept_axes(x), y_axes = kept_axes(y);
  if (x_axes.size() != y_axes.size()) return std::nullopt;
  CopyGeometry geometry{.source_axes = std::vector<int64_t>(y.shape.size(), -1),
                        .starts = std::vector<int64_t>(x.shape.size(), 0),
                        .steps = {}};
  for (size_t i = 0; i < x_axes.size(); ++i) {
    const bool x_batch = x.batched && static_cast<size_t>(x.batch_axis) == x_axes[i];
    const bool y_batch = y.batched && static_cast<size_t>(y.batch_axis) == y_axes[i];
    if (x_batch != y_batch || x.shape[x_axes[i]] != y.shape[y_axes[i]]) return std::nullopt;
    geometry.source_axes[y_axes[i]] = static_cast<int64_t>(x_axes[i]);
  }
  return geometry;
}

}  // namespace

std::optional<CopyGeometry> copy_geometry_of(const PlanLayer& layer, const PlanTensor& x, const PlanTensor& y) {
  const size_t input_rank = x.shape.size(), output_rank = y.shape.size();
  CopyGeometry geometry;
  if (layer.kind == "strided_copy") {
    Result<std::vector<int64_t>> source_axes = layer.params.get_ints(std::string(params::kSourceAxes.key()));
    Result<std::vector<int64_t>> starts = layer.params.get_ints(std::string(params::kStarts.key()));
    if (!source_axes.ok() || !starts.ok()) return std::nullopt;
    geometry.source_axes = *source_axes;
    geometry.starts = *starts;
    if (layer.params.has(std::string(kCopySteps.key()))) {
      Result<std::vector<int64_t>> steps = layer.params.get_ints(std::string(kCopySteps.key()));
      if (!steps.ok() || steps->size() != output_rank) return std::nullopt;
      geometry.steps = *steps;
    }
  } else if (layer.kind == "plain_transpose" || layer.kind == "int8_transpose") {
    Result<std::vector<int64_t>> perm = layer.params.get_ints(std::string(params::kPerm.key()));
    if (!perm.ok()) return std::nullopt;
    geometry.source_axes = *perm;
    geometry.starts.assign(input_rank, 0);
  } else if (layer.kind == "plain_copy" || layer.kind == "int8_reshape") {
    std::optional<CopyGeometry> squeeze = squeeze_geometry(x, y);
    if (!squeeze) return std::nullopt;
    geometry = std::move(*squeeze);
  } else {
    return std::nullopt;
  }
  if (geometry.source_axes.size() != output_rank || geometry.starts.size() != input_rank) return std::nullopt;
  for (int64_t a : geometry.source_axes) {
    if (a < -1 || a >= static_cast<int64_t>(input_rank)) return std::nullopt;
  }
  return geometry;
}

}  // namespace qdqrt::engine
