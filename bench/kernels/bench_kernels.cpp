// Kernel benchmarks: the vpdpbusd peak, then every kernel family on real layer shapes at 1 and 2
// threads, reporting GOPS (2 ops per multiply-accumulate) and the fraction of the measured
// single-core peak of the best ISA. GEMV reports GB/s of weights streamed. The ISA is the active
// one: --isa=avx2 (or QDQRT_MAX_ISA=avx2) benchmarks a lower path. On AMX machines the GEMM and
// conv rows run the AMX-INT8 kernels, still as a fraction of the vpdpbusd peak (peak/tdpbusd_amx
// shows how far above it AMX goes).
//
// On a shared machine the load can be far above its core count, so besides wall-clock GOPS every
// benchmark reports figures from CPU time: GOPS_cpu = ops / process CPU seconds * threads (what
// the threads achieve while they actually run) and pct_peak = GOPS_cpu / (threads * peak_now),
// with peak_now the single-core vpdpbusd peak re-measured (thread CPU time) right after the
// benchmark.
#include <benchmark/benchmark.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench/kernels/layer_shapes.h"
#include "bench/kernels/peak.h"
#include "kernels/cpu_features.h"
#include "kernels/dispatch.h"
#include "kernels/conv/qconv.h"
#include "kernels/fp32/fp32_gemv.h"
#include "kernels/fp32/fp32_grouped.h"
#include "kernels/fp32/fp32_sgemm.h"
#include "kernels/fp32/fp32_small_matmul.h"
#include "kernels/fp32/fp32_sgemm_prefetch.h"
#include "kernels/fp32/fp32_live_taps.h"
#include "kernels/fp32/fp32_winograd.h"
#include "kernels/gemm/qmatmul.h"

namespace qdqrt::bench {
namespace {

using namespace qdqrt::kernels;

double process_cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double thread_cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

std::vector<uint8_t> random_bytes(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> bytes(count);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng() >> 24);
  return bytes;
}

void peak_benchmark(benchmark::State& state, int64_t (*loop)(int64_t), Isa needed) {
  if (!isa_supported(needed)) {
    const std::string reason = needed == Isa::kAmxInt8 ? ": " + amx_unavailable_reason() : "";
    state.SkipWithError((std::string("this CPU lacks ") + isa_name(needed) + reason).c_str());
    return;
  }
  int64_t macs = 0;
  const auto start = std::chrono::steady_clock::now();
  const double cpu_start = thread_cpu_seconds();
  for (auto _ : state) macs += loop(1 << 16);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  state.counters["GOPS"] = 2.0 * macs / seconds * 1e-9;
  state.counters["GOPS_cpu"] = 2.0 * macs / (thread_cpu_seconds() - cpu_start) * 1e-9;
}

// Splits [0, total) into `parts` ranges whose starts are multiples of `align`.
std::pair<int, int> part_range(int total, int parts, int part, int align) {
  auto boundary = [&](int p) {
    if (p >= parts) return total;
    int b = static_cast<int>(static_cast<int64_t>(total) * p / parts);
    return std::min(total, (b + align - 1) / align * align);
  };
  return {boundary(part), boundary(part + 1)};
}

template <typename Body>
void timed_loop(benchmark::State& state, int threads, Body&& body, double ops, double bytes,
                double (*fresh_peak)() = fresh_peak_gops) {
  tbb::task_arena arena(threads);
  const double cpu_start = process_cpu_seconds();
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    if (threads == 1) {
      body(0);
    } else {
      arena.execute([&] {
        tbb::parallel_for(0, threads, [&](int part) { body(part); }, tbb::simple_partitioner());
      });
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu_seconds = process_cpu_seconds() - cpu_start;
  const double iterations = static_cast<double>(state.iterations());
  const double per_second = iterations / seconds;
  const double per_cpu_second = iterations / cpu_seconds * threads;
  state.counters["GOPS"] = ops * per_second * 1e-9;
  state.counters["GOPS_cpu"] = ops * per_cpu_second * 1e-9;
  // Against the peak re-measured now (the shared machine's state drifts during a long run).
  const double peak = fresh_peak();
  state.counters["peak_now"] = peak;
  state.counters["pct_peak"] = 100.0 * ops * per_cpu_second * 1e-9 / (threads * peak);
  if (bytes > 0) {
    state.counters["GBps"] = bytes * per_second * 1e-9;
    state.counters["GBps_cpu"] = bytes * per_cpu_second * 1e-9;
  }
}

// --tile=NR forces the GEMM family's register tile width (0: the one packing picks per layer).
int g_tile_width = 0;

// --fp32_cold_mb=N: the fp32 igemm, Winograd and constant-B GEMM benchmarks run each iteration on
// the next of as many copies of their packed weights as make N MiB, so the weights come from
// memory, as in a whole model (ResNet-50 FP32 streams 122 MiB of weights per inference); 0: one
// copy, hot in the caches.
int64_t g_fp32_cold_mb = 0;

// --int8_cold_mb=N: the same for the INT8 conv/, conv_u8/ and gemm/ rows (a whole ResNet-50 QDQ
// streams 25 MiB of weights per inference; its layer4 alone 15 MiB).
int64_t g_int8_cold_mb = 0;

// How many copies of `bytes` of packed weights make `cold_mb` MiB (--fp32_cold_mb, --int8_cold_mb).
int cold_copies(int64_t bytes, int64_t cold_mb = g_fp32_cold_mb) {
  if (cold_mb <= 0 || bytes <= 0) return 1;
  return static_cast<int>(std::clamp<int64_t>((cold_mb << 20) / bytes + 1, 1, 4096));
}

// Depthwise rows place input and output in one 64-byte-aligned block, as the engine's arena does
// (engine/builder.cpp, plan_memory: 64-byte-aligned offsets, a layer's output usually right
// after its input). --dw_offset=D [--dw_modulus=M] instead puts the output at the first offset
// past the input's 64-byte-rounded end that is D modulo M, for placement sweeps (docs/decisions.md,
// "INT8 depthwise": on Zen 4 no relative offset was consistently slower or faster).
int64_t g_dw_delta = -1;  // negative: right after the input
int64_t g_dw_modulus = 4096;
// --dw_u8: depthwise rows on u8 input and output (zero point 0, ReLU6 as MobileNetV2's clip), the
// form the real models run (every MobileNetV2 / EfficientNet-B0 depthwise layer is qu8); default s8.
bool g_dw_u8 = false;

// The output's offset in the block for an input of input_bytes.
int64_t depthwise_output_offset(int64_t input_bytes) {
  const int64_t start = (input_bytes + 63) / 64 * 64;
  if (g_dw_delta < 0) return start;
  const int64_t delta = g_dw_delta % g_dw_modulus;
  return start + ((delta - start % g_dw_modulus) % g_dw_modulus + g_dw_modulus) % g_dw_modulus;
}

int output_size(const ConvLayer& layer, int input_size) {
  return (input_size + 2 * layer.pad - layer.dilation * (layer.kernel - 1) - 1) / layer.stride + 1;
}

// ResNet bottleneck expansions carry the fused residual Add (+ReLU), as in the real network.
bool carries_residual(const ConvLayer& layer) {
  return std::string(layer.network) == "resnet50" && layer.kernel == 1 && layer.stride == 1 &&
         layer.output_channels == 4 * layer.input_channels;
}

void amx_absent_benchmark(benchmark::State& state) {
  const std::string reason = isa_supported(Isa::kAmxInt8)
                                 ? std::string("limited to ") + isa_name(active_isa()) + " (--isa / QDQRT_MAX_ISA)"
                                 : amx_unavailable_reason();
  state.SkipWithError(("AMX-INT8 kernels not benchmarked: " + reason).c_str());
}

// implicit_gemm: a stem (at most 4 input channels) through the implicit GEMM instead of its stem
// form (the rows conv_igemm/..., the form the engine ran before). silu: the EfficientNet epilogue
// instead of ReLU, Conv -> SiLU -> QuantizeLinear fused (one pointwise op evaluated in float after
// the requantization); depthwise layers output fp32, as the engine's do ahead of the
// squeeze-excitation block.
// unsigned_input: uint8 activations (a QDQ export's ReLU outputs), uint8 output with a Clip.
// engine_u8: as a QDQ engine runs ResNet-style layers (uint8 in and out, ReLU, uint8 residual).
void conv_benchmark(benchmark::State& state, ConvLayer layer, int threads, bool implicit_gemm, bool silu,
                    bool unsigned_input, bool engine_u8) {
  unsigned_input = unsigned_input || engine_u8;
  const int taps = layer.kernel * layer.kernel;
  const int group_in = layer.input_channels / layer.groups;
  const auto input = random_bytes(static_cast<size_t>(layer.height) * layer.width * layer.input_channels, 1);
  const auto weights = random_bytes(static_cast<size_t>(layer.output_channels) * group_in * taps, 2);
  std::vector<float> scales(layer.output_channels, 0.01f);
  std::vector<int32_t> bias(layer.output_channels, 100);
  ConvWeightsDesc desc;
  desc.output_channels = layer.output_channels;
  desc.input_channels = layer.input_channels;
  desc.groups = layer.groups;
  desc.kernel_height = desc.kernel_width = layer.kernel;
  desc.weights = weights.data();
  desc.weight_scales = scales.data();
  desc.per_channel = true;
  desc.bias_int32 = bias.data();
  desc.input_scale = 0.02f;
  desc.output_scale = silu ? 1.0f : 0.05f;  // a program runs on real units
  const bool u8 = !silu && ((g_dw_u8 && layer.groups == layer.input_channels && layer.groups == layer.output_channels) ||
                            unsigned_input);
  desc.input_signed = !u8;
  PackedConv packed = pack_conv(desc, active_isa(), g_tile_width);
  if (implicit_gemm) packed.stem_weights = PackedGemm{};
  // --int8_cold_mb: copies of the packed convolution, one per iteration in turn.
  int64_t weight_bytes = 0;
  for (const PackedGemm& group : packed.group_weights) weight_bytes += static_cast<int64_t>(group.data.size());
  const int copies = packed.depthwise ? 1 : cold_copies(weight_bytes, g_int8_cold_mb);
  const std::vector<PackedConv> packed_copies(static_cast<size_t>(copies - 1), packed);
  std::atomic<int64_t> iteration = 0;  // part 0 advances it
  ConvShape shape;
  shape.input_height = layer.height;
  shape.input_width = layer.width;
  shape.stride_height = shape.stride_width = layer.stride;
  shape.pad_top = shape.pad_left = layer.pad;
  shape.output_height = output_size(layer, layer.height);
  shape.output_width = output_size(layer, layer.width);
  const int pixels = shape.output_pixels();
  const bool depthwise = layer.groups == layer.input_channels && layer.groups > 1;
  const OutputType output_type = silu && depthwise ? OutputType::kF32 : OutputType::kS8;
  std::vector<float> output(static_cast<size_t>(pixels) * layer.output_channels);  // room for fp32
  const bool residual = !silu && carries_residual(layer) && (!u8 || engine_u8);
  const auto residual_data = random_bytes(output.size(), 3);
  Residual residual_desc{residual_data.data(), layer.output_channels, !u8, 0.04f, 0};
  PointwiseProgram program;
  program.size = 1;
  program.code[0] = {PointwiseOp::kSilu, 0, 0, 0};
  const Epilogue epilogue =
      silu ? make_epilogue(output_type, 0.05f, 0, Activation{}, nullptr, &program)
      : engine_u8 ? make_epilogue(OutputType::kU8, 0.05f, 0, Activation{ActivationKind::kRelu},
                                  residual ? &residual_desc : nullptr)
      : u8 ? make_epilogue(OutputType::kU8, 0.05f, 0, Activation{ActivationKind::kClip, 0.0f, 6.0f})
           : make_epilogue(OutputType::kS8, 0.05f, 0, Activation{ActivationKind::kRelu},
                           residual ? &residual_desc : nullptr);
  ConvRunArgs args{input.data(), layer.input_channels, output.data(), layer.output_channels};
  std::string placement;
  AlignedBuffer<uint8_t> block;
  if (packed.depthwise) {
    // One arena-like block: the input at 0, the output at a chosen offset (see g_dw_delta).
    const int64_t output_offset = depthwise_output_offset(static_cast<int64_t>(input.size()));
    block.resize(static_cast<size_t>(output_offset) + output.size() * sizeof(float));  // room for fp32
    std::memcpy(block.data(), input.data(), input.size());
    args.input = block.data();
    args.output = block.data() + output_offset;
    placement = ", output at +" + std::to_string(output_offset);
  }
  const double ops = 2.0 * pixels * layer.output_channels * group_in * taps;
  state.SetLabel(conv_kernel_name(packed, shape) + (residual ? " +residual" : "") +
                 (silu ? output_type == OutputType::kF32 ? " +silu fp32" : " +silu" : "") + placement +
                 (copies > 1 ? ", weights cold" : ""));
  timed_loop(
      state, threads,
      [&](int part) {
        const int64_t copy = iteration.load(std::memory_order_relaxed) % copies;
        auto [begin, end] = part_range(pixels, threads, part, conv_pixel_tile(packed));
        run_conv(copy == 0 ? packed : packed_copies[static_cast<size_t>(copy - 1)], shape, args, epilogue, begin, end);
        if (part == 0) iteration.fetch_add(1, std::memory_order_relaxed);
      },
      ops, 0.0);
}

std::vector<float> random_floats(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> values(count);
  for (auto& v : values) v = uniform(rng);
  return values;
}

// The layer's convolution geometry, one image.
SconvGeometry fp32_conv_geometry(const ConvLayer& layer) {
  SconvGeometry geometry;
  geometry.input_height = layer.height;
  geometry.input_width = layer.width;
  geometry.input_pixel_stride = layer.input_channels;  // unused by direct_nchw (NCHW input, same size)
  geometry.input_image_stride = static_cast<int64_t>(layer.height) * layer.width * layer.input_channels;
  geometry.kernel_height = geometry.kernel_width = layer.kernel;
  geometry.stride_height = geometry.stride_width = layer.stride;
  geometry.pad_top = geometry.pad_left = layer.pad;
  geometry.dilation_height = geometry.dilation_width = layer.dilation;
  geometry.output_height = output_size(layer, layer.height);
  geometry.output_width = output_size(layer, layer.width);
  return geometry;
}

// How fp32_conv_benchmark runs a layer.
enum class Fp32ConvForm {
  kIgemm,       // NHWC input on the igemm (or the depthwise kernel)
  kWinograd,    // the 3x3 stride-1 layers on Winograd F(2x2, 3x3): % counted on the direct
                // convolution's operations (it does 2.25x fewer multiplies)
  kDirectNchw,  // a stem on the network's NCHW image, the igemm's packed weights (the engine's mode 6)
  kLiveTaps,    // the igemm skipping each row tile's taps that read only padding (dilated convs on
                // small maps): % counted on every tap's operations
};

// fp32 convolution (bias + ReLU epilogue; the ResNet expansions with the residual Add), % of the
// fp32 FMA peak.
void fp32_conv_benchmark(benchmark::State& state, ConvLayer layer, int threads, Fp32ConvForm form) {
  const bool winograd = form == Fp32ConvForm::kWinograd;
  const bool direct_nchw = form == Fp32ConvForm::kDirectNchw;
  const bool live_taps = form == Fp32ConvForm::kLiveTaps;
  const bool depthwise = layer.groups == layer.input_channels && layer.groups == layer.output_channels;
  if (layer.groups != 1 && !depthwise) {
    state.SkipWithError("grouped convolutions are not on the fp32 igemm");
    return;
  }
  const int taps = layer.kernel * layer.kernel;
  const int group_in = layer.input_channels / layer.groups;
  const auto input = random_floats(static_cast<size_t>(layer.height) * layer.width * layer.input_channels, 1);
  const auto weights = random_floats(static_cast<size_t>(layer.output_channels) * group_in * taps, 2);
  const auto bias = random_floats(static_cast<size_t>(layer.output_channels), 3);
  SgemmWeightsDesc desc;
  desc.n = layer.output_channels;
  desc.taps = taps;
  desc.channels = layer.input_channels;
  desc.weights = weights.data();
  desc.stride_n = static_cast<int64_t>(layer.input_channels) * taps;
  desc.stride_tap = 1;
  desc.stride_channel = taps;
  desc.bias = bias.data();
  const PackedSgemm packed = depthwise ? PackedSgemm{} : pack_sgemm(desc, active_isa());
  const PackedDepthwiseF32 packed_depthwise =
      depthwise ? pack_depthwise_f32(layer.input_channels, taps, weights.data(), bias.data(), active_isa())
                : PackedDepthwiseF32{};
  const int out_channels = layer.output_channels, in_channels = layer.input_channels;
  const PackedWinogradF32 packed_winograd =
      winograd ? pack_winograd_f32(out_channels, in_channels, weights.data(), bias.data(), active_isa())
               : PackedWinogradF32{};
  // --fp32_cold_mb: copies of the packed weights (and views over them), one per iteration in turn.
  const int copies =
      depthwise || direct_nchw
          ? 1
          : cold_copies(static_cast<int64_t>(winograd ? packed_winograd.data.size() : packed.data.size()) *
                        static_cast<int64_t>(sizeof(float)));
  std::vector<AlignedBuffer<float>> weight_copies(static_cast<size_t>(copies - 1));
  std::vector<PackedSgemm> gemm_views;
  std::vector<PackedWinogradF32> winograd_views;
  for (AlignedBuffer<float>& copy : weight_copies) {
    copy = winograd ? packed_winograd.data : packed.data;
    if (winograd) {
      winograd_views.push_back(packed_winograd_f32_view(out_channels, in_channels, packed_winograd.isa, copy.data(),
                                                        packed_winograd.bias.data()));
    } else {
      gemm_views.push_back(
          packed_sgemm_view(packed.n, packed.taps, packed.channels, packed.isa, copy.data(), packed.bias.data()));
    }
  }
  std::atomic<int64_t> iteration = 0;  // part 0 advances it
  auto gemm_weights = [&]() -> const PackedSgemm& {
    const int64_t copy = iteration.load(std::memory_order_relaxed) % copies;
    return copy == 0 ? packed : gemm_views[static_cast<size_t>(copy - 1)];
  };
  auto winograd_weights = [&]() -> const PackedWinogradF32& {
    const int64_t copy = iteration.load(std::memory_order_relaxed) % copies;
    return copy == 0 ? packed_winograd : winograd_views[static_cast<size_t>(copy - 1)];
  };
  const int64_t scratch_floats = winograd ? winograd_f32_scratch_floats(out_channels, in_channels, active_isa()) : 0;
  std::vector<AlignedBuffer<float>> winograd_scratch(static_cast<size_t>(threads));
  for (auto& buffer : winograd_scratch) buffer.resize(static_cast<size_t>(scratch_floats));
  const SconvGeometry geometry = fp32_conv_geometry(layer);
  const int64_t pixels = geometry.output_pixels_per_image();
  std::vector<float> output(static_cast<size_t>(pixels) * layer.output_channels);
  const bool residual = carries_residual(layer);
  const auto residual_data = random_floats(output.size(), 4);
  Fp32Epilogue epilogue;
  epilogue.min = 0.0f;
  if (residual) {
    epilogue.residual = residual_data.data();
    epilogue.residual_row_stride = layer.output_channels;
  }
  const SconvArgs args{input.data(), output.data(), layer.output_channels};
  const double ops = 2.0 * static_cast<double>(pixels) * layer.output_channels * group_in * taps;
  state.SetLabel(std::string(depthwise     ? depthwise_f32_kernel_name(packed_depthwise)
                             : winograd    ? winograd_f32_kernel_name(packed_winograd.isa)
                             : direct_nchw ? direct_nchw_f32_kernel_name(packed)
                             : live_taps   ? sgemm_kernel_name(packed, true) + " live taps"
                                           : sgemm_kernel_name(packed, taps > 1 || layer.stride > 1) +
                                                 (residual ? " +residual" : "")) +
                 (copies > 1 ? ", weights cold" : ""));
  timed_loop(
      state, threads,
      [&](int part) {
        if (direct_nchw) {
          auto [begin, end] = part_range(geometry.output_height, threads, part, 1);
          run_direct_nchw_f32(packed, geometry, args, epilogue, begin, end, 0, layer.output_channels);
          return;
        }
        if (winograd) {
          auto [begin, end] = part_range(static_cast<int>(winograd_f32_tiles(geometry, 1)), threads, part, 1);
          run_winograd_f32(winograd_weights(), geometry, args, epilogue, begin, end, 0, layer.output_channels,
                           winograd_scratch[static_cast<size_t>(part)].data());
          if (part == 0) iteration.fetch_add(1, std::memory_order_relaxed);
          return;
        }
        if (depthwise) {
          auto [begin, end] = part_range(geometry.output_height, threads, part, 1);
          run_depthwise_f32(packed_depthwise, geometry, args, epilogue, begin, end);
          return;
        }
        auto [begin, end] = part_range(static_cast<int>(pixels), threads, part, packed.mr);
        if (live_taps) {
          run_sconv_live_taps(gemm_weights(), geometry, args, epilogue, begin, end, 0, layer.output_channels);
        } else {
          run_sconv(gemm_weights(), geometry, args, epilogue, begin, end, 0, layer.output_channels);
        }
        if (part == 0) iteration.fetch_add(1, std::memory_order_relaxed);
      },
      ops, 0.0, fresh_fp32_peak_gflops);
}

// Grouped fp32 convolution (bias + ReLU), % of the fp32 FMA peak on the group's own multiply-adds:
// run_grouped_sconv, or with dense_blocks the dense blocks it is tested against
// (run_grouped_sconv_blocks, every channel of a block). Output pixels split across threads.
void fp32_grouped_benchmark(benchmark::State& state, ConvLayer layer, int threads, bool dense_blocks) {
  const int taps = layer.kernel * layer.kernel;
  const int group_in = layer.input_channels / layer.groups;
  const auto input = random_floats(static_cast<size_t>(layer.height) * layer.width * layer.input_channels, 1);
  const auto weights = random_floats(static_cast<size_t>(layer.output_channels) * group_in * taps, 2);
  const auto bias = random_floats(static_cast<size_t>(layer.output_channels), 3);
  const PackedGroupedSgemm packed = pack_grouped_sgemm(weights.data(), bias.data(), layer.output_channels, group_in,
                                                       taps, layer.groups, active_isa());
  const SconvGeometry geometry = fp32_conv_geometry(layer);
  const int64_t pixels = geometry.output_pixels_per_image();
  std::vector<float> output(static_cast<size_t>(pixels) * layer.output_channels);
  Fp32Epilogue epilogue;
  epilogue.min = 0.0f;
  const SconvArgs args{input.data(), output.data(), layer.output_channels};
  const double ops = 2.0 * static_cast<double>(pixels) * layer.output_channels * group_in * taps;
  const PackedSgemm& tiled = packed.full.n > 0 ? packed.full : packed.tail;
  state.SetLabel(grouped_sgemm_kernel_name(tiled.isa) +
                 (dense_blocks                                           ? ", dense blocks"
                  : grouped_sgemm_shift_applies(packed.layout, tiled.isa) ? ", shift tile"
                  : grouped_sgemm_runs_halves(packed.layout)             ? ", half panels"
                                                                         : ""));
  timed_loop(
      state, threads,
      [&](int part) {
        auto [begin, end] = part_range(static_cast<int>(pixels), threads, part, tiled.mr);
        if (dense_blocks) {
          run_grouped_sconv_blocks(packed, geometry, args, epilogue, begin, end, 0, layer.output_channels);
        } else {
          run_grouped_sconv(packed, geometry, args, epilogue, begin, end, 0, layer.output_channels);
        }
      },
      ops, 0.0, fresh_fp32_peak_gflops);
}

// fp32 GEMM on the igemm microkernel: B constant (packed once, as fp32_gemm) or an activation
// packed per matrix (as fp32_matmul), % of the fp32 FMA peak. Rows split across threads; one or
// two rows (GEMV) split the columns.
void fp32_gemm_benchmark(benchmark::State& state, GemmLayer layer, int threads) {
  const auto a = random_floats(static_cast<size_t>(layer.batch) * layer.m * layer.k, 1);
  const auto b = random_floats(static_cast<size_t>(layer.batch) * layer.n * layer.k, 2);
  std::vector<float> c(static_cast<size_t>(layer.batch) * layer.m * layer.n);
  SgemmWeightsDesc desc;
  desc.n = layer.n;
  desc.channels = layer.k;
  desc.weights = b.data();
  desc.stride_n = layer.b_transposed ? layer.k : 1;  // B [N][K] or [K][N]
  desc.stride_channel = layer.b_transposed ? 1 : layer.n;
  const PackedSgemm packed_b = pack_sgemm(desc, active_isa());
  const PackedSgemm& packed = packed_b;
  const double ops = 2.0 * layer.batch * layer.m * layer.n * layer.k;
  const Fp32Epilogue epilogue;
  if (layer.runtime_b && !layer.b_transposed && small_matmul_applies(active_isa(), layer.n, layer.k)) {
    // As fp32_matmul runs small matrices: B read in place, near-equal row tiles per matrix.
    state.SetLabel(small_matmul_kernel_name(active_isa(), layer.n) + ", B in place");
    const int64_t tiles = small_matmul_tiles(active_isa(), layer.m, layer.n);
    timed_loop(
        state, threads,
        [&](int part) {
          auto [begin, end] = part_range(static_cast<int>(layer.batch * tiles), threads, part, 1);
          for (int64_t item = begin; item < end;) {
            const int64_t matrix = item / tiles, last = std::min<int64_t>(end, (matrix + 1) * tiles);
            run_small_matmul(active_isa(), a.data() + matrix * layer.m * layer.k, layer.k,
                             b.data() + matrix * layer.n * layer.k, layer.n,
                             c.data() + matrix * layer.m * layer.n, layer.n, layer.m, layer.n, layer.k,
                             item - matrix * tiles, last - matrix * tiles);
            item = last;
          }
        },
        ops, 0.0, fresh_fp32_peak_gflops);
    return;
  }
  if (layer.runtime_b) {
    // Per thread: the packed B of the matrix it runs.
    std::vector<AlignedBuffer<float>> scratch(threads);
    for (auto& buffer : scratch) buffer.resize(packed.data.size());
    state.SetLabel(sgemm_kernel_name(packed, false) + ", B packed per matrix");
    timed_loop(
        state, threads,
        [&](int part) {
          auto [begin, end] = part_range(layer.batch, threads, part, 1);
          for (int matrix = begin; matrix < end; ++matrix) {
            SgemmWeightsDesc matrix_desc = desc;
            matrix_desc.weights = b.data() + static_cast<size_t>(matrix) * layer.n * layer.k;
            pack_sgemm_into(matrix_desc, packed.isa, scratch[part].data());
            const PackedSgemm view = packed_sgemm_view(layer.n, 1, layer.k, packed.isa, scratch[part].data(),
                                                       packed.bias.data(), false);
            run_sgemm_with_layout(view, a.data() + static_cast<size_t>(matrix) * layer.m * layer.k, layer.k,
                                  c.data() + static_cast<size_t>(matrix) * layer.m * layer.n, layer.n, epilogue, 0,
                                  layer.m, 0, layer.n, SgemmALayout::kAuto);
          }
        },
        ops, 0.0, fresh_fp32_peak_gflops);
    return;
  }
  const int copies = cold_copies(static_cast<int64_t>(packed.data.size() * sizeof(float)));
  std::vector<AlignedBuffer<float>> weight_copies(static_cast<size_t>(copies - 1));
  std::vector<PackedSgemm> views;
  for (AlignedBuffer<float>& copy : weight_copies) {
    copy = packed.data;
    views.push_back(
        packed_sgemm_view(packed.n, 1, packed.channels, packed.isa, copy.data(), packed.bias.data(), false));
  }
  std::atomic<int64_t> iteration = 0;  // part 0 advances it
  const bool gemv = layer.m <= 2;  // as the engine splits few rows: by columns
  // The kernel run_sgemm takes for the rows (one thread's share of a GEMM's rows is more).
  state.SetLabel((sgemv_applies(packed, layer.m) ? sgemv_kernel_name(packed) : sgemm_kernel_name(packed, false)) +
                 (copies > 1 ? ", weights cold" : ""));
  timed_loop(
      state, threads,
      [&](int part) {
        const int64_t copy = iteration.load(std::memory_order_relaxed) % copies;
        const PackedSgemm& packed = copy == 0 ? packed_b : views[static_cast<size_t>(copy - 1)];
        if (part == 0) iteration.fetch_add(1, std::memory_order_relaxed);
        if (gemv) {
          auto [begin, end] = part_range(layer.n, threads, part, packed.nr);
          run_sgemm(packed, a.data(), layer.k, c.data(), layer.n, epilogue, 0, layer.m, begin, end);
        } else {
          auto [begin, end] = part_range(layer.m, threads, part, packed.mr);
          run_sgemm_with_layout(packed, a.data(), layer.k, c.data(), layer.n, epilogue, begin, end, 0, layer.n,
                                SgemmALayout::kAuto);
        }
      },
      ops, gemv ? static_cast<double>(packed.data.size() * sizeof(float)) : 0.0, fresh_fp32_peak_gflops);
}

void gemm_benchmark(benchmark::State& state, GemmLayer layer, int threads) {
  const auto a = random_bytes(static_cast<size_t>(layer.batch) * layer.m * layer.k, 1);
  const auto b = random_bytes(static_cast<size_t>(layer.batch) * layer.n * layer.k, 2);
  std::vector<int8_t> c(static_cast<size_t>(layer.batch) * layer.m * layer.n);
  const Epilogue epilogue = make_epilogue(OutputType::kS8, 0.05f, 0);
  const double ops = 2.0 * layer.batch * layer.m * layer.n * layer.k;
  if (layer.runtime_b) {
    BatchedMatMulArgs args;
    args.batch = layer.batch;
    args.m = layer.m;
    args.n = layer.n;
    args.k = layer.k;
    args.a = a.data();
    args.a_batch_stride = static_cast<int64_t>(layer.m) * layer.k;
    args.a_row_stride = layer.k;
    args.a_scale = 0.02f;
    args.b = b.data();
    args.b_batch_stride = static_cast<int64_t>(layer.n) * layer.k;
    args.b_row_stride = layer.b_transposed ? layer.k : layer.n;
    args.b_transposed = layer.b_transposed;
    args.b_scale = 0.02f;
    args.c = c.data();
    args.c_batch_stride = static_cast<int64_t>(layer.m) * layer.n;
    args.c_row_stride = layer.n;
    args.output_scale = 0.05f;
    std::vector<PackedGemm> scratch(threads);
    state.SetLabel("batched matmul, B packed per call");
    timed_loop(
        state, threads,
        [&](int part) {
          auto [begin, end] = part_range(layer.batch, threads, part, 1);
          run_batched_matmul(args, epilogue, begin, end, scratch[part]);
        },
        ops, 0.0);
    return;
  }
  std::vector<float> scales(layer.n, 0.01f);
  GemmWeightsDesc desc;
  desc.n = layer.n;
  desc.k = layer.k;
  desc.weights = b.data();
  desc.stride_n = layer.k;
  desc.weight_scales = scales.data();
  desc.per_channel = true;
  desc.input_scale = 0.02f;
  desc.output_scale = 0.05f;
  const PackedGemm packed = pack_gemm(desc, active_isa(), g_tile_width);
  // --int8_cold_mb: copies of the packed weights, one per iteration in turn.
  const int copies = cold_copies(static_cast<int64_t>(packed.data.size()), g_int8_cold_mb);
  const std::vector<PackedGemm> packed_copies(static_cast<size_t>(copies - 1), packed);
  std::atomic<int64_t> iteration = 0;  // part 0 advances it
  GemmArgs args{a.data(), layer.k, c.data(), layer.n};
  state.SetLabel(gemm_kernel_name(packed, false, layer.m));
  const bool gemv = layer.m == 1;
  timed_loop(
      state, threads,
      [&](int part) {
        const int64_t copy = iteration.load(std::memory_order_relaxed) % copies;
        const PackedGemm& weights = copy == 0 ? packed : packed_copies[static_cast<size_t>(copy - 1)];
        if (gemv) {  // one row: split the columns
          auto [begin, end] = part_range(layer.n, threads, part, weights.nr);
          run_gemm(weights, args, epilogue, 0, 1, begin, end);
        } else {
          auto [begin, end] = part_range(layer.m, threads, part, gemm_implementation(weights.isa, weights.nr)->mr);
          run_gemm(weights, args, epilogue, begin, end, 0, layer.n);
        }
        if (part == 0) iteration.fetch_add(1, std::memory_order_relaxed);
      },
      ops, gemv ? static_cast<double>(packed.data.size()) : 0.0);
}

void register_benchmarks() {
  benchmark::RegisterBenchmark("peak/vpdpbusd_zmm", peak_benchmark, vpdpbusd_zmm_loop, Isa::kAvx512Vnni);
  benchmark::RegisterBenchmark("peak/vpdpbusd_ymm", peak_benchmark, vpdpbusd_ymm_loop, Isa::kAvxVnni);
  benchmark::RegisterBenchmark("peak/vpmaddwd_ymm", peak_benchmark, vpmaddwd_ymm_loop, Isa::kAvx2);
  benchmark::RegisterBenchmark("peak/vfmadd_zmm", peak_benchmark, vfmadd_zmm_loop, Isa::kAvx512Vnni);
  benchmark::RegisterBenchmark("peak/vfmadd_ymm", peak_benchmark, vfmadd_ymm_loop, Isa::kAvx2);
  benchmark::RegisterBenchmark("peak/tdpbusd_amx", peak_benchmark, tdpbusd_amx_loop, Isa::kAmxInt8);
  // What shares vpdpbusd's pipes (GOPS of the vpdpbusd alone; compare with peak/vpdpbusd_zmm).
  const std::pair<const char*, int64_t (*)(int64_t)> pipes[] = {
      {"pipes/tile_k_step", pipes_tile_k_step},
      {"pipes/tile_k_step_rows_4096_bytes_apart", pipes_tile_k_step_stride4096},
      {"pipes/plus_12_cvt", pipes_plus_cvt},
      {"pipes/plus_12_vmulps", pipes_plus_mul},
      {"pipes/plus_12_pack", pipes_plus_pack},
      {"pipes/plus_12_vpermd", pipes_plus_vpermd},
      {"pipes/plus_12_int_minmax_add", pipes_plus_int_minmax_add},
      {"pipes/plus_12_loads", pipes_plus_load}};
  for (const auto& [name, loop] : pipes) benchmark::RegisterBenchmark(name, peak_benchmark, loop, Isa::kAvx512Vnni);
  // The conv/ and gemm/ rows run the active ISA's kernels: the AMX ones where AMX-INT8 is usable
  // (compare with --isa=avx512vnni). Elsewhere one row says why they are absent.
  if (active_isa() != Isa::kAmxInt8) {
    benchmark::RegisterBenchmark("amxint8/conv_and_gemm", amx_absent_benchmark);
  }
  for (int threads : {1, 2}) {
    for (const ConvLayer& layer : conv_layers()) {
      std::string name = std::string("conv/") + layer.network + "/" + layer.name + "/threads:" + std::to_string(threads);
      benchmark::RegisterBenchmark(name.c_str(), conv_benchmark, layer, threads, false, false, false, false)->UseRealTime();
      if (layer.groups == 1 && std::string(layer.network) == "resnet50") {
        name = std::string("conv_u8/") + layer.network + "/" + layer.name + "/threads:" + std::to_string(threads);
        benchmark::RegisterBenchmark(name.c_str(), conv_benchmark, layer, threads, false, false, false, true)
            ->UseRealTime();
      }
      if (layer.groups == 1 && layer.input_channels <= kConvStemMaxChannels) {
        name = std::string("conv_igemm/") + layer.network + "/" + layer.name + "/threads:" + std::to_string(threads);
        benchmark::RegisterBenchmark(name.c_str(), conv_benchmark, layer, threads, true, false, false, false)->UseRealTime();
      }
    }
    // The grouped shapes as INT8 convolutions of uint8 activations (the grouped form where it applies).
    for (const ConvLayer& layer : fp32_grouped_layers()) {
      std::string name = std::string("conv_grouped/") + layer.network + "/" + layer.name + "/threads:" +
                         std::to_string(threads);
      benchmark::RegisterBenchmark(name.c_str(), conv_benchmark, layer, threads, false, false, true, false)->UseRealTime();
    }
    for (const ConvLayer& layer : silu_conv_layers()) {
      std::string name =
          std::string("conv_silu/") + layer.network + "/" + layer.name + "/threads:" + std::to_string(threads);
      benchmark::RegisterBenchmark(name.c_str(), conv_benchmark, layer, threads, false, true, false, false)->UseRealTime();
    }
    std::vector<ConvLayer> fp32_layers = conv_layers();
    for (const ConvLayer& layer : fp32_conv_layers()) fp32_layers.push_back(layer);
    for (const ConvLayer& layer : fp32_layers) {
      if (layer.groups != 1 && layer.groups != layer.input_channels) continue;
      std::string name =
          std::string("fp32_conv/") + layer.network + "/" + layer.name + "/threads:" + std::to_string(threads);
      benchmark::RegisterBenchmark(name.c_str(), fp32_conv_benchmark, layer, threads, Fp32ConvForm::kIgemm)
          ->UseRealTime();
      if (layer.groups == 1 && layer.kernel > 1 && sconv_live_tap_fraction(fp32_conv_geometry(layer), sgemm_tile(active_isa()).mr) < 1.0) {
        name = std::string("fp32_live_taps/") + layer.network + "/" + layer.name + "/threads:" + std::to_string(threads);
        benchmark::RegisterBenchmark(name.c_str(), fp32_conv_benchmark, layer, threads, Fp32ConvForm::kLiveTaps)
            ->UseRealTime();
      }
      if (layer.groups == 1 && winograd_f32_applies(layer.kernel, layer.kernel, layer.stride, layer.stride, layer.dilation, layer.dilation,
                                                    layer.pad, layer.pad, layer.pad, layer.pad)) {
        name = std::string("fp32_winograd/") + layer.network + "/" + layer.name + "/threads:" + std::to_string(threads);
        benchmark::RegisterBenchmark(name.c_str(), fp32_conv_benchmark, layer, threads, Fp32ConvForm::kWinograd)
            ->UseRealTime();
      }
      if (layer.groups == 1 && direct_nchw_f32_applies(layer.input_channels, fp32_conv_geometry(layer))) {
        name =
            std::string("fp32_direct_nchw/") + layer.network + "/" + layer.name + "/threads:" + std::to_string(threads);
        benchmark::RegisterBenchmark(name.c_str(), fp32_conv_benchmark, layer, threads, Fp32ConvForm::kDirectNchw)
            ->UseRealTime();
      }
    }
    for (const ConvLayer& layer : fp32_grouped_layers()) {
      for (const bool dense_blocks : {false, true}) {
        const std::string name = std::string(dense_blocks ? "fp32_grouped_blocks/" : "fp32_grouped/") +
                                 layer.network + "/" + layer.name + "/threads:" + std::to_string(threads);
        benchmark::RegisterBenchmark(name.c_str(), fp32_grouped_benchmark, layer, threads, dense_blocks)
            ->UseRealTime();
      }
    }
    for (const GemmLayer& layer : gemm_layers()) {
      std::string name = std::string("gemm/") + layer.network + "/" + layer.name + "/threads:" + std::to_string(threads);
      benchmark::RegisterBenchmark(name.c_str(), gemm_benchmark, layer, threads)->UseRealTime();
    }
    for (const GemmLayer& layer : gemm_layers()) {
      std::string name =
          std::string("fp32_gemm/") + layer.network + "/" + layer.name + "/threads:" + std::to_string(threads);
      benchmark::RegisterBenchmark(name.c_str(), fp32_gemm_benchmark, layer, threads)->UseRealTime();
    }
  }
}

}  // namespace
}  // namespace qdqrt::bench

int main(int argc, char** argv) {
  // --isa=scalar|avx2|avxvnni|avx512vnni|amxint8 limits the ISA like QDQRT_MAX_ISA (removed before
  // Google Benchmark parses the rest).
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--isa=", 0) == 0) {
      const auto isa = qdqrt::kernels::parse_isa(arg.substr(6));
      if (!isa) {
        std::fprintf(stderr, "unknown ISA '%s' (scalar, avx2, avxvnni, avx512vnni, amxint8)\n", arg.substr(6).c_str());
        return 2;
      }
      qdqrt::kernels::set_max_isa(*isa);
    } else if (arg.rfind("--tile=", 0) == 0) {
      qdqrt::bench::g_tile_width = std::atoi(arg.c_str() + 7);
    } else if (arg.rfind("--dw_offset=", 0) == 0) {
      qdqrt::bench::g_dw_delta = std::atoll(arg.c_str() + 12);
    } else if (arg.rfind("--fp32_cold_mb=", 0) == 0) {
      qdqrt::bench::g_fp32_cold_mb = std::atoll(arg.c_str() + 15);
    } else if (arg.rfind("--int8_cold_mb=", 0) == 0) {
      qdqrt::bench::g_int8_cold_mb = std::atoll(arg.c_str() + 15);
    } else if (arg == "--dw_u8") {
      qdqrt::bench::g_dw_u8 = true;
    } else if (arg.rfind("--dw_modulus=", 0) == 0) {
      qdqrt::bench::g_dw_modulus = std::atoll(arg.c_str() + 13);
      if (qdqrt::bench::g_dw_modulus < 64 || qdqrt::bench::g_dw_modulus % 64 != 0) {
        std::fprintf(stderr, "--dw_modulus must be a positive multiple of 64\n");
        return 2;
      }
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  benchmark::Initialize(&argc, argv);
  qdqrt::bench::register_benchmarks();
  benchmark::AddCustomContext("isa", qdqrt::kernels::isa_name(qdqrt::kernels::active_isa()));
  benchmark::AddCustomContext("measured_peak_gops_per_core", std::to_string(qdqrt::bench::measured_peak_gops()));
  benchmark::AddCustomContext("measured_fp32_peak_gflops_per_core",
                              std::to_string(qdqrt::bench::measured_fp32_peak_gflops()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
