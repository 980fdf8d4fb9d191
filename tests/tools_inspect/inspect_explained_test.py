#!/usr/bin/python3
"""`qdqrt inspect` gives every float layer and every Q/DQ node left a reason (issue: no float islands).

For each model: runs `qdqrt inspect --exportLayerInfo` and fails when the summary lists an
unexplained node, or when the reasons do not cover every FP32 layer and every Q/DQ left; then
builds the engine (`qdqrt exec`, one inference) and fails when an INT8 layer runs on the
"reference" kernel (the builder's fallback: correct but 10-100x slower, and silent).
  shipped   models/*.onnx and tests/optimizer_models/data/*.onnx
  bench     the benchmark models at a small input size: torchvision resnet50, mobilenet_v2 and
            efficientnet_b0, FP32 and QDQ (models/export_torchvision.py), and ONNX Runtime-style s8
            and u8 QDQ of mobilenet_v2 and efficientnet_b0 (models/export_ort_styles.py)

    inspect_explained_test.py QDQRT ROOT {shipped|bench} [--work DIR] [--size N]
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile


def exported_bench_models(root, work, size):
    suffix = "" if size == 224 else f"_{size}"
    models = [os.path.join(work, f"{name}_{variant}{suffix}.onnx")
              for name in ("resnet50", "mobilenet_v2", "efficientnet_b0") for variant in ("fp32", "qdq")]
    models += [os.path.join(work, f"{name}_{style}{suffix}.onnx")
               for name in ("mobilenet_v2", "efficientnet_b0") for style in ("ort_s8", "ort_u8")]
    if not all(os.path.exists(path) for path in models):
        python = sys.executable
        subprocess.run([python, os.path.join(root, "models", "export_torchvision.py"), "--model", "resnet50",
                        "mobilenet_v2", "efficientnet_b0", "--size", str(size), "--out", work],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run([python, os.path.join(root, "models", "export_ort_styles.py"), "--model", "mobilenet_v2",
                        "efficientnet_b0", "--size", str(size), "--out", work], check=True, stdout=subprocess.DEVNULL)
    return models


def check(qdqrt, model, work):
    layers_json = os.path.join(work, "layers.json")
    result = subprocess.run([qdqrt, "inspect", f"--onnx={model}", f"--exportLayerInfo={layers_json}"],
                            capture_output=True, text=True)
    if result.returncode != 0:
        return [f"qdqrt inspect failed: {result.stderr.strip()[:300]}"]
    with open(layers_json) as handle:
        summary = json.load(handle)["Summary"]
    problems = [f"unexplained: {name}" for name in summary["Unexplained"]]
    if summary["ExplainedFloatLayers"] != summary["FloatLayers"]:
        problems.append(f"{summary['ExplainedFloatLayers']} float layers with a reason, of {summary['FloatLayers']}")
    qdq_left = summary["QuantizeLinearLeft"] + summary["DequantizeLinearLeft"]
    if summary["ExplainedQDQNodes"] != qdq_left:
        problems.append(f"{summary['ExplainedQDQNodes']} Q/DQ nodes with a reason, of {qdq_left}")
    engine_json = os.path.join(work, "engine_layers.json")
    result = subprocess.run([qdqrt, "exec", f"--onnx={model}", "--iterations=1", "--duration=0", "--warmUp=0",
                             f"--exportLayerInfo={engine_json}"], capture_output=True, text=True)
    if result.returncode != 0:
        return problems + [f"qdqrt exec failed: {result.stderr.strip()[:300]}"]
    with open(engine_json) as handle:
        fallbacks = [layer["Name"] for layer in json.load(handle)["Layers"]
                     if layer.get("QdqrtKernel") == "reference" and layer.get("Precision") == "INT8"]
    problems += [f"INT8 layer on the reference kernel: {name}" for name in fallbacks]
    print(f"{os.path.basename(model)}: {summary['FloatLayers']} float layers, {qdq_left} Q/DQ left, "
          f"{len(summary['Unexplained'])} unexplained, {len(fallbacks)} INT8 layers on the reference kernel")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("qdqrt")
    parser.add_argument("root")
    parser.add_argument("set", choices=("shipped", "bench"))
    parser.add_argument("--work", help="export directory (kept between runs)")
    parser.add_argument("--size", type=int, default=64)
    args = parser.parse_args()
    work = args.work or tempfile.mkdtemp()
    os.makedirs(work, exist_ok=True)
    if args.set == "shipped":
        models = sorted(glob.glob(os.path.join(args.root, "models", "*.onnx")) +
                        glob.glob(os.path.join(args.root, "tests", "optimizer_models", "data", "*.onnx")))
    else:
        models = exported_bench_models(args.root, work, args.size)
    failed = 0
    for model in models:
        problems = check(args.qdqrt, model, work)
        for problem in problems:
            print(f"FAIL {os.path.basename(model)}: {problem}")
        failed += bool(problems)
    print(f"{len(models) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
