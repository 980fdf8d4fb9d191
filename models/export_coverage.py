#!/usr/bin/python3
"""Exports the coverage suite: the architectures users bring, as FP32 and QDQ ONNX, random weights.

    /usr/bin/python3 models/export_coverage.py --model resnet18 yolo --tier ci --out build/coverage
    /usr/bin/python3 models/export_coverage.py --model yolo bert --tier ci --dynamic --out build/dynamic
    /usr/bin/python3 models/export_coverage.py --list

For each model and tier writes OUT/<model>_<tier>_fp32.onnx, OUT/<model>_<tier>_qdq.onnx and
OUT/<model>_<tier>_input.npy (a seeded random input of batch 1, the one the suite runs), and for the
models of ORT_U8_MODELS OUT/<model>_<tier>_ort_u8.onnx. Tiers:
`ci` is the smallest input the architecture accepts (64x64 for most), for tests; `full` is the size
the architecture is used at (224x224, 299x299 for Inception-v3, 384x384 for segmentation, 320x320 for
SSDlite, 640x640 for the YOLO-style detector, BERT-base's 12 layers of 768 at sequence 128), for
benchmarks. Files are generated, never committed (VGG's are about 500 MB).

Models (MODELS below; `--list` prints them with their shapes):
- every torchvision 0.14 classification family: torchvision's constructors, weights=None;
- video classification (R3D-18, MC3-18, R(2+1)D-18: 3-D convolutions): ci 4 frames of 32x32, full
  16 frames of 112x112; S3D (separable 3-D convolutions, 3-D pools): 16 frames of 224x224 at both
  tiers (its head pools a 2x7x7 window); MViT-V1-B (a video transformer with pooling attention):
  16 frames of 224x224 at both tiers (its positional embedding fixes them); MViT-V2-S (relative
  positions, residual pooling): ci 8 frames of 64x64, full 16 frames of 224x224;
- segmentation (FCN, DeepLabV3, LR-ASPP): the `out` tensor, aux heads off, no pretrained backbone;
- SSDlite320-MobileNetV3: backbone + head, their raw outputs (box regression, class logits; no
  anchors, decoding or NMS);
- `yolo`: a YOLO-style detector written here (Conv-BN-SiLU, C2f blocks, SPPF, a PAN neck with
  nearest Upsample and Concat, a sigmoid head reshaped to [N, anchors, 4 + 1 + classes]);
- `bert`: a BERT-shaped encoder of nn.TransformerEncoderLayer (post-norm, GELU); ci: 2 layers of
  128 (4 heads, 512 feed-forward) at sequence 32, full: BERT-base.

Weights: torch.manual_seed(0) then the constructor's initialization; BatchNorm made non-trivial as
export_torchvision.py does (settle_batchnorm). QDQ: fake_quant.py's pytorch-quantization (TensorRT)
placement -- per-tensor int8 on every Conv/Linear input, per-channel int8 weights, a residual
quantizer in torchvision ResNet blocks -- max-calibrated on seeded random batches. nn.MultiheadAttention
(ViT, BERT) computes its projections from its own parameters, not through nn.Linear, so its
in-projection and out-projection stay float in the QDQ files. Opset 13 (BERT: 17, LayerNormalization),
dynamic batch. ort_u8: ONNX Runtime 1.16 quantize_static's QDQ layout of the FP32 file
(export_qdq_styles.ort_style_qdq: the op types ORT quantizes by default, each as ORT places its Q/DQ;
asymmetric u8 activations min/max-calibrated on the QDQ file's batches, Relu/Clip folded into the
producer's range, per-channel s8 weights, int32 biases, Softmax output at 1/256; LayerNormalization,
Erf, Div, Pow, ReduceMean, Slice, ... stay float); ViT-B/16's zero-initialised head gets a seeded
random one (vit_b_16 below). No download of any kind: every constructor gets weights=None (and
weights_backbone=None).

`--dynamic` (yolo and bert only) exports the same networks, weights and calibration with every
size dim symbolic, as users export models for a range of shapes: yolo's input [batch, 3, height,
width] and output [batch, anchors, 85], bert's input and output [batch, sequence, hidden]. torch
then computes the YOLO heads' view/reshape targets and the attention's head split from Shape,
Gather and Concat of the running tensors instead of writing constants. Files:
OUT/<model>_<tier>_dynamic_{fp32,qdq}.onnx and OUT/<model>_<tier>_dynamic_input.npy (the tier's shape).
"""
import argparse
import copy
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_torchvision import settle_batchnorm  # noqa: E402
from export_qdq_styles import ort_style_qdq  # noqa: E402
from fake_quant import calibrate, freeze_weight_scales, quantize_model  # noqa: E402

OPSET = 13
STATS_BATCHES, CALIBRATION_BATCHES, BATCH_SIZE = 4, 4, 4


# ------------------------------------------------------------------ YOLO-style detector
class ConvBnSilu(nn.Sequential):
    def __init__(self, cin, cout, kernel=1, stride=1):
        super().__init__(nn.Conv2d(cin, cout, kernel, stride, kernel // 2, bias=False), nn.BatchNorm2d(cout), nn.SiLU())


class Bottleneck(nn.Module):
    def __init__(self, channels, shortcut):
        super().__init__()
        self.conv1 = ConvBnSilu(channels, channels, 3)
        self.conv2 = ConvBnSilu(channels, channels, 3)
        self.shortcut = shortcut

    def forward(self, x):
        y = self.conv2(self.conv1(x))
        return x + y if self.shortcut else y


class C2f(nn.Module):
    """CSP block of YOLOv8: a 1x1 conv split in two (Split), n bottlenecks chained on the second half,
    every intermediate concatenated and mixed by a 1x1 conv."""

    def __init__(self, cin, cout, count, shortcut=True):
        super().__init__()
        self.hidden = cout // 2
        self.conv1 = ConvBnSilu(cin, 2 * self.hidden)
        self.conv2 = ConvBnSilu((2 + count) * self.hidden, cout)
        self.blocks = nn.ModuleList(Bottleneck(self.hidden, shortcut) for _ in range(count))

    def forward(self, x):
        parts = list(self.conv1(x).chunk(2, 1))
        for block in self.blocks:
            parts.append(block(parts[-1]))
        return self.conv2(torch.cat(parts, 1))


class SPPF(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv1 = ConvBnSilu(cin, cin // 2)
        self.conv2 = ConvBnSilu(cin // 2 * 4, cout)
        self.pool = nn.MaxPool2d(5, 1, 2)

    def forward(self, x):
        x = self.conv1(x)
        y1 = self.pool(x)
        y2 = self.pool(y1)
        return self.conv2(torch.cat([x, y1, y2, self.pool(y2)], 1))


class YoloDetector(nn.Module):
    """Backbone (strides 8, 16, 32) + SPPF, PAN neck, one sigmoid head per scale; the heads'
    [N, anchors * (5 + classes), H, W] maps are reshaped (Shape-derived targets, as torch exports
    view(batch, ...)) and concatenated to [N, anchors * sum(H * W), 5 + classes]."""

    def __init__(self, width=32, classes=80, anchors=3):
        super().__init__()
        w = width
        self.stem = nn.Sequential(ConvBnSilu(3, w, 3, 2), ConvBnSilu(w, 2 * w, 3, 2), C2f(2 * w, 2 * w, 1))
        self.stage3 = nn.Sequential(ConvBnSilu(2 * w, 4 * w, 3, 2), C2f(4 * w, 4 * w, 2))
        self.stage4 = nn.Sequential(ConvBnSilu(4 * w, 8 * w, 3, 2), C2f(8 * w, 8 * w, 2))
        self.stage5 = nn.Sequential(ConvBnSilu(8 * w, 16 * w, 3, 2), C2f(16 * w, 16 * w, 1), SPPF(16 * w, 16 * w))
        self.top_down4 = C2f(24 * w, 8 * w, 1, shortcut=False)
        self.top_down3 = C2f(12 * w, 4 * w, 1, shortcut=False)
        self.down3 = ConvBnSilu(4 * w, 4 * w, 3, 2)
        self.bottom_up4 = C2f(12 * w, 8 * w, 1, shortcut=False)
        self.down4 = ConvBnSilu(8 * w, 8 * w, 3, 2)
        self.bottom_up5 = C2f(24 * w, 16 * w, 1, shortcut=False)
        self.outputs = 5 + classes
        self.anchors = anchors
        self.heads = nn.ModuleList(nn.Conv2d(c, anchors * self.outputs, 1) for c in (4 * w, 8 * w, 16 * w))

    def forward(self, x):
        p3 = self.stage3(self.stem(x))
        p4 = self.stage4(p3)
        p5 = self.stage5(p4)
        up = lambda t: F.interpolate(t, scale_factor=2.0, mode="nearest")  # noqa: E731
        n4 = self.top_down4(torch.cat([up(p5), p4], 1))
        n3 = self.top_down3(torch.cat([up(n4), p3], 1))
        n4 = self.bottom_up4(torch.cat([self.down3(n3), n4], 1))
        n5 = self.bottom_up5(torch.cat([self.down4(n4), p5], 1))
        detections = []
        for head, feature in zip(self.heads, (n3, n4, n5)):
            y = torch.sigmoid(head(feature))
            batch, _, height, width = y.shape
            y = y.view(batch, self.anchors, self.outputs, height, width).permute(0, 1, 3, 4, 2)
            detections.append(y.reshape(batch, -1, self.outputs))
        return torch.cat(detections, 1)


# ------------------------------------------------------------------ BERT-shaped encoder
BERT_CONFIGS = {"ci": dict(layers=2, hidden=128, heads=4, intermediate=512, sequence=32),
                "full": dict(layers=12, hidden=768, heads=12, intermediate=3072, sequence=128)}


class BertEncoder(nn.Module):
    def __init__(self, layers, hidden, heads, intermediate, sequence):
        super().__init__()
        layer = nn.TransformerEncoderLayer(hidden, heads, intermediate, dropout=0.0, activation="gelu",
                                           layer_norm_eps=1e-12, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, x):
        return self.encoder(x)


# ------------------------------------------------------------------ wrappers for torchvision
class OutTensor(nn.Module):
    """Segmentation models return {"out": ...}: export that tensor."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


class SsdRaw(nn.Module):
    """SSDlite without its transform, anchors and postprocessing: backbone features -> head."""

    def __init__(self, ssd):
        super().__init__()
        self.backbone, self.head = ssd.backbone, ssd.head

    def forward(self, x):
        out = self.head(list(self.backbone(x).values()))
        return out["bbox_regression"], out["cls_logits"]


def classifier(name, **kwargs):
    return lambda tier: getattr(torchvision.models, name)(weights=None, **kwargs)


def video_classifier(name):
    return lambda tier: getattr(torchvision.models.video, name)(weights=None)


def segmentation(name):
    return lambda tier: OutTensor(getattr(torchvision.models.segmentation, name)(
        weights=None, weights_backbone=None, aux_loss=False))


def ssdlite(tier):
    return SsdRaw(torchvision.models.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None))


# name -> (constructor(tier), {tier: input shape without the batch}, output names)
IMAGE = lambda size: (3, size, size)  # noqa: E731
CLS = ("output",)
MODELS = {}
for _name in ("resnet18", "resnet50", "resnext50_32x4d", "wide_resnet50_2",
              "squeezenet1_0", "squeezenet1_1", "densenet121", "googlenet", "shufflenet_v2_x1_0", "mobilenet_v2",
              "mobilenet_v3_large", "mobilenet_v3_small", "mnasnet1_0", "efficientnet_b0", "efficientnet_v2_s",
              "regnet_x_400mf", "regnet_y_400mf", "convnext_tiny", "swin_t", "swin_v2_t"):
    MODELS[_name] = (classifier(_name), {"ci": IMAGE(64), "full": IMAGE(224)}, CLS)
# Their adaptive average pools export only when the features are a multiple of 6x6 (AlexNet) or 7x7 (VGG).
for _name in ("alexnet", "vgg11", "vgg16_bn"):
    MODELS[_name] = (classifier(_name), {"ci": IMAGE(224), "full": IMAGE(224)}, CLS)
# Inception-v3's stem needs 75x75; it is used at 299x299.
MODELS["inception_v3"] = (classifier("inception_v3", aux_logits=False, init_weights=True),
                          {"ci": IMAGE(75), "full": IMAGE(299)}, CLS)
def vit_b_16(tier):
    """ViT's position embedding fixes the image size: built for the tier's size. torchvision
    zero-initialises its head, which makes the output all zeros (every comparison would pass): the
    head gets nn.Linear's uniform initialization from a generator of its own, so every other weight
    stays the constructor's."""
    model = torchvision.models.vit_b_16(weights=None, image_size=64 if tier == "ci" else 224)
    head = model.heads.head
    generator = torch.Generator().manual_seed(3)
    bound = head.in_features ** -0.5
    with torch.no_grad():
        for parameter in (head.weight, head.bias):
            parameter.copy_((torch.rand(parameter.shape, generator=generator) * 2 - 1) * bound)
    return model


MODELS["vit_b_16"] = (vit_b_16, {"ci": IMAGE(64), "full": IMAGE(224)}, CLS)
# MaxViT's 7x7 windows and grids at strides 4..32 need a multiple of 224.
MODELS["maxvit_t"] = (classifier("maxvit_t"), {"ci": IMAGE(224), "full": IMAGE(224)}, CLS)
# Video classification (Kinetics-400 clips: 16 frames of 112x112): 3-D convolutions.
for _name in ("r3d_18", "mc3_18", "r2plus1d_18"):
    MODELS[_name] = (video_classifier(_name), {"ci": (3, 4, 32, 32), "full": (3, 16, 112, 112)}, CLS)
# S3D's head averages a 2x7x7 window of its 1/8-frame, 1/32-size features: 16 frames of 224x224 at least.
MODELS["s3d"] = (video_classifier("s3d"), {"ci": (3, 16, 224, 224), "full": (3, 16, 224, 224)}, CLS)
# MViT-V1-B's positional embedding fixes 16 frames of 224x224.
MODELS["mvit_v1_b"] = (video_classifier("mvit_v1_b"), {"ci": (3, 16, 224, 224), "full": (3, 16, 224, 224)}, CLS)


def mvit_v2_s(tier):
    """MViT-V2-S sizes its relative-position tables by the clip it is built for, which torchvision
    0.14's constructor fixes at 16 frames of 224x224 (it passes spatial_size and temporal_size to
    _mvit itself): the ci tier's smaller clip is given to _mvit through a wrapper."""
    from torchvision.models.video import mvit
    frames, height, width = MODELS["mvit_v2_s"][1][tier][1:]
    build_mvit = mvit._mvit

    def sized(**kwargs):
        kwargs.update(spatial_size=(height, width), temporal_size=frames)
        return build_mvit(**kwargs)
    mvit._mvit = sized
    try:
        return mvit.mvit_v2_s(weights=None)
    finally:
        mvit._mvit = build_mvit


# MViT-V2-S (relative positions, residual pooling): ci 8 frames of 64x64 (its last
# stage's tokens 4x2x2).
MODELS["mvit_v2_s"] = (mvit_v2_s, {"ci": (3, 8, 64, 64), "full": (3, 16, 224, 224)}, CLS)
for _name in ("fcn_resnet50", "deeplabv3_resnet50", "deeplabv3_mobilenet_v3_large", "lraspp_mobilenet_v3_large"):
    MODELS[_name] = (segmentation(_name), {"ci": IMAGE(64), "full": IMAGE(384)}, CLS)
MODELS["ssdlite320_mobilenet_v3_large"] = (ssdlite, {"ci": IMAGE(64), "full": IMAGE(320)},
                                           ("bbox_regression", "cls_logits"))
MODELS["yolo"] = (lambda tier: YoloDetector(), {"ci": IMAGE(64), "full": IMAGE(640)}, CLS)
MODELS["bert"] = (lambda tier: BertEncoder(**BERT_CONFIGS[tier]),
                  {tier: (c["sequence"], c["hidden"]) for tier, c in BERT_CONFIGS.items()}, CLS)
TIERS = ("ci", "full")
# The models also written in ONNX Runtime quantize_static's layout (`ort_u8`). Not yet: vgg16_bn,
# swin_v2_t and maxvit_t (their calibration evaluates the FP32 graph op by op in torch on 16 images,
# minutes on 2 cores).
ORT_U8_MODELS = ("resnet18", "resnet50", "resnext50_32x4d", "squeezenet1_0", "squeezenet1_1", "densenet121",
                 "googlenet", "inception_v3", "shufflenet_v2_x1_0", "mobilenet_v2", "mobilenet_v3_large",
                 "mobilenet_v3_small", "mnasnet1_0", "efficientnet_b0", "regnet_x_400mf", "regnet_y_400mf",
                 "yolo", "ssdlite320_mobilenet_v3_large", "lraspp_mobilenet_v3_large", "deeplabv3_mobilenet_v3_large",
                 "bert", "vit_b_16", "fcn_resnet50", "deeplabv3_resnet50", "wide_resnet50_2", "efficientnet_v2_s",
                 "alexnet", "vgg11", "convnext_tiny", "swin_t")


def variants_of(name):
    return ("fp32", "qdq") + (("ort_u8",) if name in ORT_U8_MODELS else ())
# --dynamic: the symbolic dims of the input and of each output, per model.
DYNAMIC_AXES = {"yolo": {"input": {0: "batch", 2: "height", 3: "width"}, "output": {0: "batch", 1: "anchors"}},
                "bert": {"input": {0: "batch", 1: "sequence"}, "output": {0: "batch", 1: "sequence"}}}


def input_shape(name, tier, batch=1):
    return (batch,) + MODELS[name][1][tier]


def random_batches(name, tier, count, seed):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(input_shape(name, tier, BATCH_SIZE), generator=generator) for _ in range(count)]


@torch.no_grad()
def build(name, tier):
    torch.manual_seed(0)
    model = MODELS[name][0](tier)
    return settle_batchnorm(model, random_batches(name, tier, STATS_BATCHES, seed=1))


def zero_symbolic(g, self):
    """aten::zero_, which Swin-V2 applies to the k third of its qkv bias in forward, has no ONNX
    symbolic in torch 1.13: x - x (the bias is finite)."""
    return g.op("Sub", self, self)


def export(model, name, tier, path, symbolic_sizes=False):
    torch.onnx.register_custom_op_symbolic("aten::zero", zero_symbolic, OPSET)
    outputs = MODELS[name][2]
    if symbolic_sizes:
        dynamic = DYNAMIC_AXES[name]
    else:
        dynamic = {"input": {0: "batch"}}
        dynamic.update({output: {0: "batch"} for output in outputs})
    torch.onnx.export(model, torch.zeros(input_shape(name, tier)), path, opset_version=17 if name == "bert" else OPSET,
                      do_constant_folding=True, input_names=["input"], output_names=list(outputs),
                      dynamic_axes=dynamic)


def export_model(name, tier, out_dir, variants=None, symbolic_sizes=False):
    """Writes the model's files (`variants`: default the model's, variants_of); returns their paths."""
    if variants is None:
        variants = variants_of(name) if not symbolic_sizes else ("fp32", "qdq")
    stem = os.path.join(out_dir, f"{name}_{tier}" + ("_dynamic" if symbolic_sizes else ""))
    generator = np.random.default_rng(20261129)
    np.save(stem + "_input.npy", generator.standard_normal(input_shape(name, tier)).astype(np.float32))
    paths = [stem + "_input.npy"]
    float_model = build(name, tier)
    for variant in variants:
        if variant == "ort_u8":
            continue  # from the FP32 file, below
        model = float_model
        if variant == "qdq":
            model = quantize_model(copy.deepcopy(float_model))
            calibrate(model, random_batches(name, tier, CALIBRATION_BATCHES, seed=2))
            freeze_weight_scales(model)
        path = f"{stem}_{variant}.onnx"
        export(model.eval(), name, tier, path, symbolic_sizes)
        paths.append(path)
    if "ort_u8" in variants:
        # ONNX Runtime's layout is a rewrite of the FP32 ONNX file, calibrated (min/max) on the same
        # seeded batches as the QDQ file's.
        fp32_path = f"{stem}_fp32.onnx"
        if "fp32" not in variants:
            export(float_model.eval(), name, tier, fp32_path, symbolic_sizes)
        calibration = torch.cat(random_batches(name, tier, CALIBRATION_BATCHES, seed=2)).numpy()
        path = f"{stem}_ort_u8.onnx"
        ort_style_qdq(fp32_path, path, calibration, asymmetric=True)
        paths.append(path)
    return paths


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", nargs="+", choices=sorted(MODELS), metavar="MODEL")
    parser.add_argument("--tier", choices=TIERS, default="ci")
    parser.add_argument("--variant", nargs="+", choices=("fp32", "qdq", "ort_u8"),
                        help="default: fp32, qdq and, for the models of ORT_U8_MODELS, ort_u8")
    parser.add_argument("--out", help="output directory")
    parser.add_argument("--dynamic", action="store_true",
                        help="symbolic height and width (yolo) or sequence length (bert), not only the batch")
    parser.add_argument("--list", action="store_true", help="print the models and their input shapes")
    args = parser.parse_args()
    if args.list:
        for name in MODELS:
            print(name, " ".join(f"{tier}:{'x'.join(map(str, input_shape(name, tier)))}" for tier in TIERS),
                  "variants:" + ",".join(variants_of(name)))
        return
    if not args.model or not args.out:
        parser.error("--model and --out are required (or --list)")
    if args.dynamic and set(args.model) - set(DYNAMIC_AXES):
        parser.error(f"--dynamic: only {', '.join(sorted(DYNAMIC_AXES))} have symbolic size dims")
    if args.variant and "ort_u8" in args.variant and (args.dynamic or set(args.model) - set(ORT_U8_MODELS)):
        parser.error(f"--variant ort_u8: only {', '.join(ORT_U8_MODELS)}, without --dynamic")
    torch.set_num_threads(1)  # OpenMP threads spinning against each other on a shared machine are slower
    os.makedirs(args.out, exist_ok=True)
    for name in args.model:
        for path in export_model(name, args.tier, args.out, args.variant, args.dynamic):
            print(path, flush=True)


if __name__ == "__main__":
    main()
