// Real layer shapes (batch 1, 224x224) that drive the kernel benchmarks.
#pragma once

#include <vector>

namespace qdqrt::bench {

struct ConvLayer {
  const char* network;
  const char* name;
  int height, width;  // input
  int input_channels, output_channels;
  int kernel, stride, pad, groups;
  int dilation = 1;
};

struct GemmLayer {
  const char* network;
  const char* name;
  int batch, m, n, k;
  bool runtime_b;  // batched MatMul with activations on both sides (B packed per call)
  bool b_transposed;
};

// EfficientNet-B0 layers whose epilogue is SiLU (the conv_silu/ rows): the largest 1x1
// expansion, the 32-channel depthwise (two tiles per zmm) and a 96-channel one (a 64-channel
// block and a 32-channel ymm block), all at 112x112.
inline std::vector<ConvLayer> silu_conv_layers() {
  return {
      {"efficientnet_b0", "f2.0_1x1_16_96", 112, 112, 16, 96, 1, 1, 0, 1},
      {"efficientnet_b0", "f1.0_dw3x3_32", 112, 112, 32, 32, 3, 1, 1, 32},
      {"efficientnet_b0", "f2.0_dw3x3s2_96", 112, 112, 96, 96, 3, 2, 1, 96},
  };
}

inline std::vector<ConvLayer> conv_layers() {
  return {
      // ResNet-50 v1.5 (stride on the 3x3 convolutions).
      {"resnet50", "conv1_7x7s2", 224, 224, 3, 64, 7, 2, 3, 1},
      {"resnet50", "l1_1x1_64_64", 56, 56, 64, 64, 1, 1, 0, 1},
      {"resnet50", "l1_3x3_64", 56, 56, 64, 64, 3, 1, 1, 1},
      {"resnet50", "l1_1x1_64_256", 56, 56, 64, 256, 1, 1, 0, 1},
      {"resnet50", "l1_1x1_256_64", 56, 56, 256, 64, 1, 1, 0, 1},
      {"resnet50", "l2_1x1_256_128", 56, 56, 256, 128, 1, 1, 0, 1},
      {"resnet50", "l2_3x3s2_128", 56, 56, 128, 128, 3, 2, 1, 1},
      {"resnet50", "l2_down_1x1s2_256_512", 56, 56, 256, 512, 1, 2, 0, 1},
      {"resnet50", "l2_1x1_128_512", 28, 28, 128, 512, 1, 1, 0, 1},
      {"resnet50", "l2_1x1_512_128", 28, 28, 512, 128, 1, 1, 0, 1},
      {"resnet50", "l2_3x3_128", 28, 28, 128, 128, 3, 1, 1, 1},
      {"resnet50", "l3_1x1_512_256", 28, 28, 512, 256, 1, 1, 0, 1},
      {"resnet50", "l3_3x3s2_256", 28, 28, 256, 256, 3, 2, 1, 1},
      {"resnet50", "l3_down_1x1s2_512_1024", 28, 28, 512, 1024, 1, 2, 0, 1},
      {"resnet50", "l3_1x1_256_1024", 14, 14, 256, 1024, 1, 1, 0, 1},
      {"resnet50", "l3_1x1_1024_256", 14, 14, 1024, 256, 1, 1, 0, 1},
      {"resnet50", "l3_3x3_256", 14, 14, 256, 256, 3, 1, 1, 1},
      {"resnet50", "l4_1x1_1024_512", 14, 14, 1024, 512, 1, 1, 0, 1},
      {"resnet50", "l4_3x3s2_512", 14, 14, 512, 512, 3, 2, 1, 1},
      {"resnet50", "l4_down_1x1s2_1024_2048", 14, 14, 1024, 2048, 1, 2, 0, 1},
      {"resnet50", "l4_1x1_512_2048", 7, 7, 512, 2048, 1, 1, 0, 1},
      {"resnet50", "l4_1x1_2048_512", 7, 7, 2048, 512, 1, 1, 0, 1},
      {"resnet50", "l4_3x3_512", 7, 7, 512, 512, 3, 1, 1, 1},
      // MobileNetV2.
      {"mobilenetv2", "stem_3x3s2_3_32", 224, 224, 3, 32, 3, 2, 1, 1},
      {"mobilenetv2", "dw3x3_112_32", 112, 112, 32, 32, 3, 1, 1, 32},
      {"mobilenetv2", "dw3x3s2_112_96", 112, 112, 96, 96, 3, 2, 1, 96},
      {"mobilenetv2", "dw3x3_56_144", 56, 56, 144, 144, 3, 1, 1, 144},
      {"mobilenetv2", "dw3x3s2_56_144", 56, 56, 144, 144, 3, 2, 1, 144},
      {"mobilenetv2", "dw3x3_28_192", 28, 28, 192, 192, 3, 1, 1, 192},
      {"mobilenetv2", "dw3x3s2_28_192", 28, 28, 192, 192, 3, 2, 1, 192},
      {"mobilenetv2", "dw3x3_14_384", 14, 14, 384, 384, 3, 1, 1, 384},
      {"mobilenetv2", "dw3x3_14_576", 14, 14, 576, 576, 3, 1, 1, 576},
      {"mobilenetv2", "dw3x3s2_14_576", 14, 14, 576, 576, 3, 2, 1, 576},
      {"mobilenetv2", "dw3x3_7_960", 7, 7, 960, 960, 3, 1, 1, 960},
      {"mobilenetv2", "pw_112_16_96", 112, 112, 16, 96, 1, 1, 0, 1},
      {"mobilenetv2", "pw_56_144_24", 56, 56, 144, 24, 1, 1, 0, 1},
      {"mobilenetv2", "pw_56_24_144", 56, 56, 24, 144, 1, 1, 0, 1},
      {"mobilenetv2", "pw_14_384_64", 14, 14, 384, 64, 1, 1, 0, 1},
      {"mobilenetv2", "pw_14_96_576", 14, 14, 96, 576, 1, 1, 0, 1},
      {"mobilenetv2", "pw_7_960_160", 7, 7, 960, 160, 1, 1, 0, 1},
      {"mobilenetv2", "pw_7_320_1280", 7, 7, 320, 1280, 1, 1, 0, 1},
      // EfficientNet-B0 (depthwise 3x3 and 5x5; its first three depthwise shapes are MobileNetV2's).
      {"efficientnet_b0", "dw5x5s2_56_144", 56, 56, 144, 144, 5, 2, 2, 144},
      {"efficientnet_b0", "dw5x5_28_240", 28, 28, 240, 240, 5, 1, 2, 240},
      {"efficientnet_b0", "dw3x3s2_28_240", 28, 28, 240, 240, 3, 2, 1, 240},
      {"efficientnet_b0", "dw3x3_14_480", 14, 14, 480, 480, 3, 1, 1, 480},
      {"efficientnet_b0", "dw5x5_14_480", 14, 14, 480, 480, 5, 1, 2, 480},
      {"efficientnet_b0", "dw5x5_14_672", 14, 14, 672, 672, 5, 1, 2, 672},
      {"efficientnet_b0", "dw5x5s2_14_672", 14, 14, 672, 672, 5, 2, 2, 672},
      {"efficientnet_b0", "dw5x5_7_1152", 7, 7, 1152, 1152, 5, 1, 2, 1152},
      {"efficientnet_b0", "dw3x3_7_1152", 7, 7, 1152, 1152, 3, 1, 1, 1152},
      {"efficientnet_b0", "pw_28_240_40", 28, 28, 240, 40, 1, 1, 0, 1},
      {"efficientnet_b0", "pw_14_480_80", 14, 14, 480, 80, 1, 1, 0, 1},
      {"efficientnet_b0", "pw_7_1152_192", 7, 7, 1152, 192, 1, 1, 0, 1},
  };
}

// fp32-only shapes (the fp32_conv/, fp32_winograd/ and fp32_live_taps/ rows): the small maps where
// Winograd and the igemm cross over, and the dilated convs of the segmentation models at a 384x384
// input (their 48x48 stride-8 maps), whose taps read only padding for part of the output.
inline std::vector<ConvLayer> fp32_conv_layers() {
  return {
      {"inception_v3", "7b_3x3_448_384", 8, 8, 448, 384, 3, 1, 1, 1},
      {"inception_v3", "5b_3x3_96", 35, 35, 96, 96, 3, 1, 1, 1},
      {"winograd_crossover", "10x10_3x3_512", 10, 10, 512, 512, 3, 1, 1, 1},
      {"winograd_crossover", "12x12_3x3_512", 12, 12, 512, 512, 3, 1, 1, 1},
      {"winograd_crossover", "7x7_3x3_128", 7, 7, 128, 128, 3, 1, 1, 1},
      {"winograd_crossover", "14x14_3x3_512", 14, 14, 512, 512, 3, 1, 1, 1},
      {"fcn_resnet50", "head_3x3_2048_512", 48, 48, 2048, 512, 3, 1, 1, 1},
      {"deeplabv3", "l4_3x3_512_d2", 48, 48, 512, 512, 3, 1, 2, 1, 2},
      {"deeplabv3", "l4_3x3_512_d4", 48, 48, 512, 512, 3, 1, 4, 1, 4},
      {"deeplabv3", "aspp_3x3_2048_256_d12", 48, 48, 2048, 256, 3, 1, 12, 1, 12},
      {"deeplabv3", "aspp_3x3_2048_256_d24", 48, 48, 2048, 256, 3, 1, 24, 1, 24},
      {"deeplabv3", "aspp_3x3_2048_256_d36", 48, 48, 2048, 256, 3, 1, 36, 1, 36},
      // SqueezeNet 1.1: the stem (no pads), the Fire modules' 3x3 expansions at 55x55, 27x27 and
      // 13x13, a 55x55 squeeze and expand1x1, the classifier's 1x1.
      {"squeezenet1_1", "stem_3x3s2_3_64", 224, 224, 3, 64, 3, 2, 0, 1},
      {"squeezenet1_1", "f3_squeeze_1x1_64_16", 55, 55, 64, 16, 1, 1, 0, 1},
      {"squeezenet1_1", "f3_expand_1x1_16_64", 55, 55, 16, 64, 1, 1, 0, 1},
      {"squeezenet1_1", "f3_expand_3x3_16_64", 55, 55, 16, 64, 3, 1, 1, 1},
      {"squeezenet1_1", "f6_expand_3x3_32_128", 27, 27, 32, 128, 3, 1, 1, 1},
      {"squeezenet1_1", "f11_expand_3x3_64_256", 13, 13, 64, 256, 3, 1, 1, 1},
      {"squeezenet1_1", "classifier_1x1_512_1000", 13, 13, 512, 1000, 1, 1, 0, 1},
      // RegNet-X-400MF's first block: the 1x1 at 112x112 (its stem is MobileNetV2's).
      {"regnet_x_400mf", "b1_1x1_32_32", 112, 112, 32, 32, 1, 1, 0, 1},
  };
}

// Grouped 3x3 convolutions (the fp32_grouped/ and conv_grouped/ rows): RegNet-X-400MF's groups of 16
// channels (2, 4, 10 and 25 groups), RegNet-Y-400MF's of 8 (6, 13, 26 and 55 groups) and ResNeXt-50
// 32x4d's 32 groups of 4, 8, 16 and 32 channels.
inline std::vector<ConvLayer> fp32_grouped_layers() {
  return {
      {"regnet_x_400mf", "b1_3x3s2_32_g2", 112, 112, 32, 32, 3, 2, 1, 2},
      {"regnet_x_400mf", "b2_3x3_64_g4", 28, 28, 64, 64, 3, 1, 1, 4},
      {"regnet_x_400mf", "b3_3x3_160_g10", 14, 14, 160, 160, 3, 1, 1, 10},
      {"regnet_x_400mf", "b4_3x3_400_g25", 7, 7, 400, 400, 3, 1, 1, 25},
      {"regnet_y_400mf", "b1_3x3_48_g6", 56, 56, 48, 48, 3, 1, 1, 6},
      {"regnet_y_400mf", "b2_3x3_104_g13", 28, 28, 104, 104, 3, 1, 1, 13},
      {"regnet_y_400mf", "b3_3x3_208_g26", 14, 14, 208, 208, 3, 1, 1, 26},
      {"regnet_y_400mf", "b4_3x3_440_g55", 7, 7, 440, 440, 3, 1, 1, 55},
      {"resnext50_32x4d", "l1_3x3_128_g32", 56, 56, 128, 128, 3, 1, 1, 32},
      {"resnext50_32x4d", "l2_3x3_256_g32", 28, 28, 256, 256, 3, 1, 1, 32},
      {"resnext50_32x4d", "l3_3x3_512_g32", 14, 14, 512, 512, 3, 1, 1, 32},
      {"resnext50_32x4d", "l4_3x3_1024_g32", 7, 7, 1024, 1024, 3, 1, 1, 32},
  };
}

inline std::vector<GemmLayer> gemm_layers() {
  return {
      // Transformer encoder, d = 768, sequence 128, 12 heads.
      {"transformer_d768", "qkv_128x2304x768", 1, 128, 2304, 768, false, false},
      {"transformer_d768", "attn_out_128x768x768", 1, 128, 768, 768, false, false},
      {"transformer_d768", "ffn1_128x3072x768", 1, 128, 3072, 768, false, false},
      {"transformer_d768", "ffn2_128x768x3072", 1, 128, 768, 3072, false, false},
      {"transformer_d768", "attn_qk_12x128x128x64", 12, 128, 128, 64, true, true},
      {"transformer_d768", "attn_pv_12x128x64x128", 12, 128, 64, 128, true, false},
      // ViT-B/16 at 224x224: 197 tokens (14 x 14 patches and the class token), the packed
      // in-projection split into its three 768-column parts.
      {"vit_b_16", "proj_197x768x768", 1, 197, 768, 768, false, false},
      {"vit_b_16", "mlp1_197x3072x768", 1, 197, 3072, 768, false, false},
      {"vit_b_16", "mlp2_197x768x3072", 1, 197, 768, 3072, false, false},
      {"vit_b_16", "attn_qk_12x197x197x64", 12, 197, 197, 64, true, true},
      {"vit_b_16", "attn_pv_12x197x64x197", 12, 197, 64, 197, true, false},
      // Swin-T's first stage: 64 windows of 7 x 7 tokens x 3 heads of 32 (K^T transposed by its own
      // layer before the MatMul, so B is [K][N] in both).
      {"swin_t", "attn_qk_192x49x49x32", 192, 49, 49, 32, true, false},
      {"swin_t", "attn_pv_192x49x32x49", 192, 49, 32, 49, true, false},
      // M = 1 or 2 (GEMV): batch-1 and batch-2 fully connected layers.
      {"resnet50", "fc_gemv_1x1000x2048", 1, 1, 1000, 2048, false, false},
      {"mobilenetv2", "fc_gemv_1x1000x1280", 1, 1, 1000, 1280, false, false},
      {"transformer_d768", "ffn1_gemv_1x3072x768", 1, 1, 3072, 768, false, false},
      {"transformer_d768", "ffn2_gemv_1x768x3072", 1, 1, 768, 3072, false, false},
      // AlexNet's classifier.1: B is 151 MB, past the last-level cache (memory bound).
      {"alexnet", "classifier1_gemv_1x4096x9216", 1, 1, 4096, 9216, false, false},
      // EfficientNet-B0's last squeeze-excite convolutions on one pixel (B 221 KB: in L2).
      {"efficientnet_b0", "se_expand_gemv_1x1152x48", 1, 1, 1152, 48, false, false},
      {"efficientnet_b0", "se_reduce_gemv_1x48x1152", 1, 1, 48, 1152, false, false},
      // Two rows (a batch-2 classifier).
      {"resnet50", "fc_gemv_2x1000x2048", 1, 2, 1000, 2048, false, false},
  };
}

}  // namespace qdqrt::bench
