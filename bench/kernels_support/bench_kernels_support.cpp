// Supporting kernels on real layer shapes (224x224, batch 1), every ISA variant this CPU runs.
// Counters: bytes_per_second (input + output bytes touched once) and items_per_second (output
// elements). Names: <kernel-name>/<network>_<shape>, e.g. qs8-vadd-minmax-avx512/mbv2_56x56x24.
// Figures in docs/kernels_support.md come from
//   qdqrt_bench_kernels_support --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/reorder/qconcat.h"
#include "kernels/resize/resize.h"

namespace qdqrt::kernels {
namespace {

template <class T>
std::vector<T> random_vector(size_t n, uint32_t seed = 1) {
  std::mt19937 rng(seed);
  std::vector<T> values(n);
  if constexpr (std::is_floating_point_v<T>) {
    std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
    for (T& v : values) v = dist(rng);
  } else {
    for (T& v : values) v = static_cast<T>(rng());
  }
  return values;
}

void set_counters(benchmark::State& state, size_t bytes, size_t items) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * items));
}

std::string bench_name(const char* kernel, const std::string& shape) { return std::string(kernel) + "/" + shape; }

struct Hwc {
  const char* network;
  size_t h, w, c;
  std::string label() const {
    return std::string(network) + "_" + std::to_string(h) + "x" + std::to_string(w) + "x" + std::to_string(c);
  }
  size_t size() const { return h * w * c; }
};

// Residual adds (MobileNetV2 u8 ORT-style / ResNet-50 s8 TensorRT-style), per-channel SE scaling
// (EfficientNet-B0 x * sigmoid(se), channel-broadcast mul).
const Hwc kAddShapes[] = {{"mbv2", 56, 56, 24}, {"mbv2", 28, 28, 32}, {"mbv2", 14, 14, 96},
                          {"rn50", 56, 56, 256}, {"rn50", 28, 28, 512}, {"rn50", 7, 7, 2048}};
const Hwc kSeMulShapes[] = {{"effb0", 112, 112, 32}, {"effb0", 56, 56, 144}, {"effb0", 14, 14, 480}};
// SiLU/Sigmoid activations of EfficientNet-B0 (LUT), and tensors quantized/dequantized at borders.
const Hwc kLutShapes[] = {{"effb0", 112, 112, 32}, {"effb0", 112, 112, 96}, {"effb0", 28, 28, 240},
                          {"effb0", 7, 7, 1152}};

template <class T>
void register_qbinary(Isa isa) {
  const auto kernels = qbinary_kernels<T>(isa);
  for (const Hwc& shape : kAddShapes) {
    benchmark::RegisterBenchmark(bench_name(kernels.add.name, shape.label()).c_str(), [=](benchmark::State& state) {
      const auto a = random_vector<T>(shape.size(), 1), b = random_vector<T>(shape.size(), 2);
      std::vector<T> out(shape.size());
      const QBinaryParams params =
          make_qbinary_params<T>(QBinaryOp::kAdd, 0.05f, 3, 0.04f, 5, 0.07f, 1, /*relu=*/true);
      for (auto _ : state) {
        kernels.add.fn(shape.size(), a.data(), b.data(), out.data(), params);
        benchmark::DoNotOptimize(out.data());
      }
      set_counters(state, 3 * shape.size(), shape.size());
    });
  }
  for (const Hwc& shape : kSeMulShapes) {
    benchmark::RegisterBenchmark(bench_name(kernels.mul.name, shape.label() + "_per_channel").c_str(),
                                 [=](benchmark::State& state) {
                                   const auto a = random_vector<T>(shape.size(), 1), b = random_vector<T>(shape.c, 2);
                                   std::vector<T> out(shape.size());
                                   const QBinaryParams params = make_qbinary_params<T>(
                                       QBinaryOp::kMul, 0.05f, 3, 0.004f, 0, 0.07f, 1, false);
                                   for (auto _ : state) {
                                     for (size_t p = 0; p < shape.h * shape.w; ++p) {
                                       kernels.mul.fn(shape.c, a.data() + p * shape.c, b.data(),
                                                      out.data() + p * shape.c, params);
                                     }
                                     benchmark::DoNotOptimize(out.data());
                                   }
                                   set_counters(state, 2 * shape.size(), shape.size());
                                 });
  }
}

void register_lut(Isa isa, bool allow_vbmi) {
  const NamedKernel<LutFn> kernel = lut_kernel(isa, allow_vbmi);
  for (const Hwc& shape : kLutShapes) {
    benchmark::RegisterBenchmark(bench_name(kernel.name, shape.label() + "_silu").c_str(),
                                 [=](benchmark::State& state) {
                                   const auto input = random_vector<uint8_t>(shape.size());
                                   std::vector<uint8_t> out(shape.size());
                                   uint8_t table[256];
                                   build_lut<uint8_t, uint8_t>(LutFunction::kSilu, {}, 0.05f, 128, 0.03f, 10, table);
                                   for (auto _ : state) {
                                     kernel.fn(shape.size(), input.data(), out.data(), table);
                                     benchmark::DoNotOptimize(out.data());
                                   }
                                   set_counters(state, 2 * shape.size(), shape.size());
                                 });
  }
}

template <class T>
void register_pools(Isa isa) {
  const auto kernels = qpool_kernels<T>(isa);
  struct WindowShape {
    const char* label;
    size_t size, channels, kernel, stride, pad;
  };
  // ResNet-50 stem max pool; GoogLeNet max pools (stride 2 between stages, stride 1 in the
  // inception pool branch); the inception-style 3x3/1 average pool.
  const WindowShape max_shapes[] = {{"rn50_112x112x64_k3s2p1", 112, 64, 3, 2, 1},
                                    {"googlenet_56x56x192_k3s2p1", 56, 192, 3, 2, 1},
                                    {"googlenet_28x28x192_k3s1p1", 28, 192, 3, 1, 1}};
  const WindowShape avg_shapes[] = {{"inception_28x28x192_k3s1p1", 28, 192, 3, 1, 1}};
  auto pool_shape = [](const WindowShape& w) {
    Pool2dShape s;
    s.input_height = s.input_width = w.size;
    s.channels = w.channels;
    s.kernel_height = s.kernel_width = w.kernel;
    s.stride_height = s.stride_width = w.stride;
    s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = w.pad;
    s.output_height = s.output_width = pool_output_size(w.size, w.kernel, w.stride, 1, w.pad, w.pad, false);
    return s;
  };
  for (const WindowShape& w : max_shapes) {
    benchmark::RegisterBenchmark(bench_name(kernels.maxpool.name, w.label).c_str(), [=](benchmark::State& state) {
      const Pool2dShape s = pool_shape(w);
      const auto input = random_vector<T>(w.size * w.size * w.channels);
      std::vector<T> out(s.output_pixels() * w.channels);
      for (auto _ : state) {
        kernels.maxpool.fn(s, 0, s.output_pixels(), input.data(), out.data());
        benchmark::DoNotOptimize(out.data());
      }
      set_counters(state, input.size() + out.size(), out.size());
    });
  }
  for (const WindowShape& w : avg_shapes) {
    benchmark::RegisterBenchmark(bench_name(kernels.avgpool.name, w.label).c_str(), [=](benchmark::State& state) {
      const Pool2dShape s = pool_shape(w);
      const auto input = random_vector<T>(w.size * w.size * w.channels);
      std::vector<T> out(s.output_pixels() * w.channels);
      const AvgPoolParams params = make_avgpool_params<T>(0.05f, 3, 0.05f, 3, false);
      for (auto _ : state) {
        kernels.avgpool.fn(s, params, 0, s.output_pixels(), input.data(), out.data());
        benchmark::DoNotOptimize(out.data());
      }
      set_counters(state, input.size() + out.size(), out.size());
    });
  }
  // Global average pools: MobileNetV2 head, ResNet-50 head, EfficientNet-B0 SE on the stem.
  const Hwc gap_shapes[] = {{"mbv2", 7, 7, 1280}, {"rn50", 7, 7, 2048}, {"effb0", 112, 112, 32}, {"effb0", 56, 56, 144}};
  for (const Hwc& shape : gap_shapes) {
    benchmark::RegisterBenchmark(bench_name(kernels.global_avgpool.name, shape.label()).c_str(),
                                 [=](benchmark::State& state) {
                                   const auto input = random_vector<T>(shape.size());
                                   std::vector<T> out(shape.c);
                                   const AvgPoolParams params = make_avgpool_params<T>(0.05f, 3, 0.02f, 3, false);
                                   for (auto _ : state) {
                                     kernels.global_avgpool.fn(shape.h * shape.w, shape.c, shape.c, input.data(),
                                                               out.data(), params);
                                     benchmark::DoNotOptimize(out.data());
                                   }
                                   set_counters(state, shape.size() + shape.c, shape.c);
                                 });
  }
}

template <class T>
void register_quantize(Isa isa) {
  const auto kernels = quantize_kernels<T>(isa);
  // Model input 3x224x224 fp32 -> int8 and a feature map dequantized at a region border.
  benchmark::RegisterBenchmark(bench_name(kernels.quantize.name, "input_224x224x3").c_str(),
                               [=](benchmark::State& state) {
                                 const auto input = random_vector<float>(224 * 224 * 3);
                                 std::vector<T> out(input.size());
                                 for (auto _ : state) {
                                   kernels.quantize.fn(input.size(), input.data(), out.data(), 0.02f, 3);
                                   benchmark::DoNotOptimize(out.data());
                                 }
                                 set_counters(state, 5 * input.size(), input.size());
                               });
  // Fused model-input border: fp32 NCHW 3x224x224 -> NHWC int8 (replaces transpose + quantize).
  benchmark::RegisterBenchmark(bench_name(kernels.quantize_nchw_to_nhwc.name, "input_3x224x224").c_str(),
                               [=](benchmark::State& state) {
                                 const size_t pixels = 224 * 224;
                                 const auto input = random_vector<float>(3 * pixels);
                                 std::vector<T> out(input.size());
                                 const float scales[3] = {0.02f, 0.021f, 0.019f};
                                 const int32_t zero_points[3] = {3, 3, 3};
                                 for (auto _ : state) {
                                   kernels.quantize_nchw_to_nhwc.fn(3, pixels, 0, pixels, input.data(), out.data(),
                                                                    scales, zero_points);
                                   benchmark::DoNotOptimize(out.data());
                                 }
                                 set_counters(state, 5 * input.size(), input.size());
                               });
  benchmark::RegisterBenchmark(bench_name(kernels.dequantize.name, "effb0_28x28x240").c_str(),
                               [=](benchmark::State& state) {
                                 const auto input = random_vector<T>(28 * 28 * 240);
                                 std::vector<float> out(input.size());
                                 for (auto _ : state) {
                                   kernels.dequantize.fn(input.size(), input.data(), out.data(), 0.02f, 3);
                                   benchmark::DoNotOptimize(out.data());
                                 }
                                 set_counters(state, 5 * input.size(), input.size());
                               });
  // GoogLeNet inception-3a output concat: 28x28 x (64 + 128 + 32 + 32), two inputs requantized.
  benchmark::RegisterBenchmark(
      bench_name(kernels.requantize.name, "concat_googlenet3a_28x28x256").c_str(), [=](benchmark::State& state) {
        const size_t pixels = 28 * 28;
        const size_t channels[] = {64, 128, 32, 32};
        std::vector<std::vector<T>> data;
        std::vector<ConcatInput<T>> inputs;
        for (size_t i = 0; i < 4; ++i) {
          data.push_back(random_vector<T>(pixels * channels[i], static_cast<uint32_t>(i)));
          ConcatInput<T> input;
          input.data = data.back().data();
          input.inner = channels[i];
          input.requantize = i % 2 == 1;
          input.params = make_requantize_params<T>(0.03f, 2, 0.05f, 3);
          inputs.push_back(input);
        }
        std::vector<T> out(pixels * 256);
        for (auto _ : state) {
          qconcat<T>(0, pixels, inputs.data(), inputs.size(), out.data(), kernels.requantize.fn);
          benchmark::DoNotOptimize(out.data());
        }
        set_counters(state, 2 * out.size(), out.size());
      });
}

void register_reorders(Isa isa) {
  const ReorderKernels kernels = reorder_kernels(isa);
  benchmark::RegisterBenchmark(bench_name(kernels.transpose32.name, "nchw_to_nhwc_3x224x224").c_str(),
                               [=](benchmark::State& state) {
                                 const auto input = random_vector<float>(3 * 224 * 224);
                                 std::vector<float> out(input.size());
                                 for (auto _ : state) {
                                   kernels.transpose32.fn(3, 224 * 224,
                                                          reinterpret_cast<const uint32_t*>(input.data()), 224 * 224,
                                                          reinterpret_cast<uint32_t*>(out.data()), 3);
                                   benchmark::DoNotOptimize(out.data());
                                 }
                                 set_counters(state, 8 * input.size(), input.size());
                               });
  benchmark::RegisterBenchmark(bench_name(kernels.transpose32.name, "nhwc_to_nchw_56x56x64").c_str(),
                               [=](benchmark::State& state) {
                                 const auto input = random_vector<float>(56 * 56 * 64);
                                 std::vector<float> out(input.size());
                                 for (auto _ : state) {
                                   kernels.transpose32.fn(56 * 56, 64, reinterpret_cast<const uint32_t*>(input.data()),
                                                          64, reinterpret_cast<uint32_t*>(out.data()), 56 * 56);
                                   benchmark::DoNotOptimize(out.data());
                                 }
                                 set_counters(state, 8 * input.size(), input.size());
                               });
  benchmark::RegisterBenchmark(bench_name(kernels.transpose8.name, "nhwc_to_nchw_56x56x64").c_str(),
                               [=](benchmark::State& state) {
                                 const auto input = random_vector<uint8_t>(56 * 56 * 64);
                                 std::vector<uint8_t> out(input.size());
                                 for (auto _ : state) {
                                   kernels.transpose8.fn(56 * 56, 64, input.data(), 64, out.data(), 56 * 56);
                                   benchmark::DoNotOptimize(out.data());
                                 }
                                 set_counters(state, 2 * input.size(), input.size());
                               });
}

void register_fp32(Isa isa) {
  const Fp32Kernels kernels = fp32_kernels(isa);
  struct GemmShape {
    const char* label;
    size_t m, n, k;
    bool transpose_b;
  };
  // Classifier heads (M = 1) and a 1x1 conv left in fp32 (NHWC pixels x Cin times Cin x Cout).
  const GemmShape gemm_shapes[] = {{"mbv2_fc_1x1000x1280", 1, 1000, 1280, true},
                                   {"rn50_fc_1x1000x2048", 1, 1000, 2048, true},
                                   {"rn50_conv1x1_3136x256x64", 3136, 256, 64, true}};
  for (const GemmShape& g : gemm_shapes) {
    benchmark::RegisterBenchmark(bench_name(kernels.gemm.name, g.label).c_str(), [=](benchmark::State& state) {
      const auto a = random_vector<float>(g.m * g.k), b = random_vector<float>(g.k * g.n),
                 bias = random_vector<float>(g.n);
      std::vector<float> c(g.m * g.n);
      Fp32GemmParams p;
      p.m = g.m;
      p.n = g.n;
      p.k = g.k;
      p.transpose_b = g.transpose_b;
      for (auto _ : state) {
        kernels.gemm.fn(p, a.data(), g.k, b.data(), g.transpose_b ? g.k : g.n, bias.data(), c.data(), g.n);
        benchmark::DoNotOptimize(c.data());
      }
      state.counters["GFLOPS"] =
          benchmark::Counter(2.0 * g.m * g.n * g.k * state.iterations() * 1e-9, benchmark::Counter::kIsRate);
    });
  }
  const Hwc unary_shape{"effb0", 112, 112, 32};
  for (Fp32UnaryOp op : {Fp32UnaryOp::kSilu, Fp32UnaryOp::kSigmoid, Fp32UnaryOp::kGelu, Fp32UnaryOp::kRelu}) {
    benchmark::RegisterBenchmark(
        (std::string(kernels.unary.name) + "/" + fp32_unary_op_name(op) + "_" + unary_shape.label()).c_str(),
        [=](benchmark::State& state) {
          const auto input = random_vector<float>(unary_shape.size());
          std::vector<float> out(input.size());
          for (auto _ : state) {
            kernels.unary.fn(op, {}, input.size(), input.data(), out.data());
            benchmark::DoNotOptimize(out.data());
          }
          set_counters(state, 8 * input.size(), input.size());
        });
  }
  benchmark::RegisterBenchmark(bench_name(kernels.binary.name, "add_rn50_56x56x256").c_str(),
                               [=](benchmark::State& state) {
                                 const size_t n = 56 * 56 * 256;
                                 const auto a = random_vector<float>(n, 1), b = random_vector<float>(n, 2);
                                 std::vector<float> out(n);
                                 for (auto _ : state) {
                                   kernels.binary.fn(Fp32BinaryOp::kAdd, n, a.data(), b.data(), out.data());
                                   benchmark::DoNotOptimize(out.data());
                                 }
                                 set_counters(state, 12 * n, n);
                               });
  benchmark::RegisterBenchmark(bench_name(kernels.softmax.name, "logits_1x1000").c_str(), [=](benchmark::State& state) {
    const auto input = random_vector<float>(1000);
    std::vector<float> out(1000);
    for (auto _ : state) {
      kernels.softmax.fn(1, 1000, input.data(), out.data());
      benchmark::DoNotOptimize(out.data());
    }
    set_counters(state, 8 * 1000, 1000);
  });
  // Swin-T's first-stage window attention: 64 windows x 3 heads x 49 rows of 49 columns.
  benchmark::RegisterBenchmark(bench_name(kernels.softmax.name, "swin_9408x49").c_str(), [=](benchmark::State& state) {
    constexpr size_t kRows = 64 * 3 * 49, kCols = 49;
    const auto input = random_vector<float>(kRows * kCols);
    std::vector<float> out(kRows * kCols);
    for (auto _ : state) {
      kernels.softmax.fn(kRows, kCols, input.data(), out.data());
      benchmark::DoNotOptimize(out.data());
    }
    set_counters(state, 8 * kRows * kCols, kRows * kCols);
  });
}

// LayerNorm rows: Swin-T's first stage (3136 tokens of 96; its norm2 quantizes for the MLP's int8
// input) and a BERT-base layer (128 tokens of 768).
void register_layer_norm(Isa isa) {
  const NamedKernel<LayerNormFn> kernel = layer_norm_kernel(isa);
  struct Shape {
    const char* label;
    size_t rows, columns;
    bool quantized;
  };
  for (const Shape& shape : {Shape{"swin_3136x96", 3136, 96, false}, Shape{"swin_3136x96_u8", 3136, 96, true},
                             Shape{"bert_128x768", 128, 768, false}}) {
    benchmark::RegisterBenchmark(bench_name(kernel.name, shape.label).c_str(), [=](benchmark::State& state) {
      const auto input = random_vector<float>(shape.rows * shape.columns, 1);
      const auto gamma = random_vector<float>(shape.columns, 2), beta = random_vector<float>(shape.columns, 3);
      std::vector<float> out(shape.rows * shape.columns);
      LayerNormParams params;
      params.rows = shape.rows;
      params.columns = shape.columns;
      params.gamma = gamma.data();
      params.beta = beta.data();
      if (shape.quantized) {
        params.y_scale = 0.02f;
        params.y_zero_point = 128;
        params.y_signed = false;
      }
      for (auto _ : state) {
        kernel.fn(params, input.data(), out.data());
        benchmark::DoNotOptimize(out.data());
      }
      set_counters(state, (shape.quantized ? 5 : 8) * shape.rows * shape.columns, shape.rows * shape.columns);
    });
  }
}

// Resize rows: DeepLabV3-MobileNetV3's head at 384x384 (21 classes, 24x24 -> 384x384 bilinear,
// half_pixel), LR-ASPP's 2x bilinear upsampling channels-last (128 channels, 24x24 -> 48x48), a
// YOLO neck's 2x nearest upsampling (256 channels, 40x40 -> 80x80).
void register_resize(Isa isa) {
  const ResizeKernels kernels = resize_kernels(isa);
  struct Axis {
    std::vector<int32_t> x0, x1;
    std::vector<double> w0, w1;
  };
  // half_pixel taps of one axis (as the engine's layer computes them).
  auto taps = [](size_t in, size_t out, bool linear) {
    Axis a;
    const double scale = static_cast<double>(out) / static_cast<double>(in);
    for (size_t o = 0; o < out; ++o) {
      const double x = (static_cast<double>(o) + 0.5) / scale - 0.5;
      const double c = std::min(std::max(x, 0.0), static_cast<double>(in - 1));
      const auto base = static_cast<int32_t>(linear ? std::floor(c) : std::ceil(x - 0.5));
      a.x0.push_back(std::min<int32_t>(std::max(base, 0), static_cast<int32_t>(in - 1)));
      a.x1.push_back(std::min<int32_t>(a.x0.back() + 1, static_cast<int32_t>(in - 1)));
      a.w1.push_back(linear ? c - std::floor(c) : 0.0);
      a.w0.push_back(1.0 - a.w1.back());
    }
    return a;
  };
  benchmark::RegisterBenchmark(bench_name(kernels.linear.name, "deeplabv3_21x24x24_to_384x384").c_str(),
                               [=](benchmark::State& state) {
                                 const size_t c = 21, in = 24, out = 384;
                                 const auto input = random_vector<float>(c * in * in);
                                 std::vector<float> output(c * out * out);
                                 const Axis rows = taps(in, out, true), cols = taps(in, out, true);
                                 for (auto _ : state) {
                                   for (size_t plane = 0; plane < c; ++plane) {
                                     for (size_t oh = 0; oh < out; ++oh) {
                                       ResizeLinearRow row;
                                       row.in0 = input.data() + (plane * in + rows.x0[oh]) * in;
                                       row.in1 = input.data() + (plane * in + rows.x1[oh]) * in;
                                       row.wy0 = rows.w0[oh];
                                       row.wy1 = rows.w1[oh];
                                       row.x0 = cols.x0.data();
                                       row.x1 = cols.x1.data();
                                       row.wx0 = cols.w0.data();
                                       row.wx1 = cols.w1.data();
                                       kernels.linear.fn(row, 0, out, output.data() + (plane * out + oh) * out);
                                     }
                                   }
                                   benchmark::DoNotOptimize(output.data());
                                 }
                                 set_counters(state, 4 * (input.size() + output.size()), output.size());
                               });
  benchmark::RegisterBenchmark(bench_name(kernels.linear_nhwc.name, "lraspp_24x24x128_to_48x48").c_str(),
                               [=](benchmark::State& state) {
                                 const size_t c = 128, in = 24, out = 48;
                                 const auto input = random_vector<float>(c * in * in);
                                 std::vector<float> output(c * out * out);
                                 const Axis rows = taps(in, out, true), cols = taps(in, out, true);
                                 for (auto _ : state) {
                                   for (size_t oh = 0; oh < out; ++oh) {
                                     ResizeLinearRow row;
                                     row.in0 = input.data() + rows.x0[oh] * in * c;
                                     row.in1 = input.data() + rows.x1[oh] * in * c;
                                     row.wy0 = rows.w0[oh];
                                     row.wy1 = rows.w1[oh];
                                     row.x0 = cols.x0.data();
                                     row.x1 = cols.x1.data();
                                     row.wx0 = cols.w0.data();
                                     row.wx1 = cols.w1.data();
                                     kernels.linear_nhwc.fn(row, c, 0, out, output.data() + oh * out * c);
                                   }
                                   benchmark::DoNotOptimize(output.data());
                                 }
                                 set_counters(state, 4 * (input.size() + output.size()), output.size());
                               });
  benchmark::RegisterBenchmark(
      bench_name(kernels.nearest.name, "yolo_neck_256x40x40_to_80x80").c_str(), [=](benchmark::State& state) {
        const size_t c = 256, in = 40, out = 80;
        const auto input = random_vector<float>(c * in * in);
        std::vector<float> output(c * out * out);
        const Axis rows = taps(in, out, false), cols = taps(in, out, false);
        for (auto _ : state) {
          for (size_t plane = 0; plane < c; ++plane) {
            for (size_t oh = 0; oh < out; ++oh) {
              kernels.nearest.fn(input.data() + (plane * in + rows.x0[oh]) * in, cols.x0.data(), 0, out,
                                 output.data() + (plane * out + oh) * out);
            }
          }
          benchmark::DoNotOptimize(output.data());
        }
        set_counters(state, 4 * (input.size() + output.size()), output.size());
      });
}

void register_all() {
  for (Isa isa : supported_isas()) {
    if (isa == Isa::kAvxVnni) continue;  // same supporting kernels as kAvx2
    register_layer_norm(isa);
    register_qbinary<uint8_t>(isa);
    register_qbinary<int8_t>(isa);
    register_lut(isa, true);
    if (isa == Isa::kAvx512Vnni && cpu_has_avx512vbmi()) register_lut(isa, false);
    register_pools<uint8_t>(isa);
    register_pools<int8_t>(isa);
    register_quantize<uint8_t>(isa);
    register_quantize<int8_t>(isa);
    register_reorders(isa);
    register_fp32(isa);
    if (isa != Isa::kAmxInt8) register_resize(isa);  // the AVX-512 kernels again
  }
}

}  // namespace
}  // namespace qdqrt::kernels

int main(int argc, char** argv) {
  qdqrt::kernels::register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
