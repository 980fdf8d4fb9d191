#!/usr/bin/python3
"""Whole-model oracle test: qdqrt's reference executor against ONNX Runtime on real models.

    model_oracle.py selftest --work DIR
    model_oracle.py prepare-torchvision --model resnet18 --size 64 --work DIR
    model_oracle.py prepare-fmnist --count 256 --work DIR
    model_oracle.py compare --model M.onnx --work DIR --kind fp32|qdq-random|qdq-trained
                            --qdqrt build/qdqrt --ort tools/ort/run_ort.js

`selftest` checks the oracle's own plumbing without qdqrt. `prepare-*` export or pick the models
and write the inputs (ctest FIXTURES_SETUP). `compare` runs ONNX Runtime with all graph
optimizations ("ort-all": where it can, QDQ node units become integer QLinear ops),
ONNX Runtime with optimizations disabled ("ort-plain": DequantizeLinear -> float op ->
QuantizeLinear, the literal ONNX semantics) and `qdqrt run`, prints the distances and checks
them against the tolerance of the model's kind (docs/models.md explains the numbers):

  fp32         max |qdqrt - ort-plain| <= 1e-3 * output range, argmax agreement 100%.
  qdq-random   random weights amplify any rounding difference, so the yardstick is the distance
               between implementations of the same graph: ONNX Runtime's two, PyTorch's
               fake-quant forward ("torch", saved at export), and ONNX Runtime on copies of the
               graph whose QuantizeLinear inputs are perturbed by ~1 ulp ("ort-ulpN", what any
               implementation with different float rounding computes):
               max |qdqrt - ort-plain| <= 2 * max(spreads) + 1e-3 * range, same for the mean.
  qdq-trained  argmax agreement with ort-plain >= 99% (--min-agreement) over real test images, max
               abs error <= 5% of the output range, and test accuracy within 1 point of ONNX Runtime's.
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FMNIST_DIR = "/usr/share/datasets/fashion-mnist"
FMNIST_MEAN, FMNIST_STD = 0.2860, 0.3530
RANDOM_BATCH = 2
ULP_PERTURBATION_RUNS = 3
SKIP_RETURN_CODE = 77  # ctest SKIP_RETURN_CODE: the qdqrt binary cannot run models yet


def run(command):
    """Runs a command, echoing it; returns seconds taken. Failure ends the test with its output."""
    print("+ " + " ".join(command), flush=True)
    began = time.time()
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.stdout.strip():
        print(result.stdout.rstrip(), flush=True)
    if result.returncode != 0:
        sys.exit(f"FAILED: exit code {result.returncode} from {command[0]}")
    return time.time() - began


def input_dir(work):
    return os.path.join(work, "inputs")


def prepare_torchvision(args):
    """Exports the FP32 and QDQ variants and writes a seeded random input batch."""
    os.makedirs(input_dir(args.work), exist_ok=True)
    generator = np.random.default_rng(20261122)
    batch = generator.standard_normal((RANDOM_BATCH, 3, args.size, args.size)).astype(np.float32)
    input_path = os.path.join(input_dir(args.work), "input.npy")
    np.save(input_path, batch)
    run(["/usr/bin/python3", os.path.join(REPO_ROOT, "models", "export_torchvision.py"),
         "--model", args.model, "--size", str(args.size), "--out", args.work, "--reference-input", input_path])


def read_idx(path):
    import gzip
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def prepare_fmnist(args):
    """Writes the first `count` Fashion-MNIST test images (normalized) and their labels."""
    os.makedirs(input_dir(args.work), exist_ok=True)
    images = read_idx(os.path.join(FMNIST_DIR, "t10k-images-idx3-ubyte.gz"))[:args.count]
    labels = read_idx(os.path.join(FMNIST_DIR, "t10k-labels-idx1-ubyte.gz"))[:args.count]
    normalized = ((images.astype(np.float32) / 255.0 - FMNIST_MEAN) / FMNIST_STD)[:, None]
    np.save(os.path.join(input_dir(args.work), "input.npy"), normalized.astype(np.float32))
    np.save(os.path.join(args.work, "labels.npy"), labels.astype(np.int64))


def load_outputs(directory):
    return {name[:-4]: np.load(os.path.join(directory, name))
            for name in sorted(os.listdir(directory)) if name.endswith(".npy")}


def distance(candidate, reference):
    """Distances of one output tensor; argmax is over the last axis (class logits)."""
    difference = np.abs(candidate.astype(np.float64) - reference.astype(np.float64))
    output_range = float(reference.max() - reference.min()) or 1.0
    result = {
        "max_abs": float(difference.max()),
        "mean_abs": float(difference.mean()),
        "range": output_range,
        "max_rel_range": float(difference.max()) / output_range,
    }
    if reference.ndim >= 2:
        result["argmax_agreement"] = float(np.mean(candidate.argmax(-1) == reference.argmax(-1)))
    return result


def describe(label, d):
    text = (f"{label:>20}: max abs {d['max_abs']:.6g} ({100 * d['max_rel_range']:.4f}% of range "
            f"{d['range']:.4g}), mean abs {d['mean_abs']:.6g}")
    if "argmax_agreement" in d:
        text += f", argmax agreement {100 * d['argmax_agreement']:.2f}%"
    return text


def write_ulp_perturbed_model(model_path, out_path, seed):
    """Copy of the model in which every activation entering a QuantizeLinear is multiplied by
    1 + u * 2^-20 (u uniform in [-1, 1], fixed per element): about what an implementation whose
    float arithmetic differs from ONNX Runtime's by a few ulps computes. A few ulps, not one, so
    that some values do cross a rounding boundary (such crossings are rare and decide the spread)."""
    import onnx
    from onnx import helper, numpy_helper, shape_inference

    model = shape_inference.infer_shapes(onnx.load(model_path))
    shapes = {info.name: [d.dim_value for d in info.type.tensor_type.shape.dim]
              for info in list(model.graph.value_info) + list(model.graph.input)}
    constants = {t.name for t in model.graph.initializer}
    constants |= {output for node in model.graph.node if node.op_type == "Constant" for output in node.output}
    generator = np.random.default_rng(seed)
    nodes = []
    for node in model.graph.node:
        activation = node.input[0] if node.op_type == "QuantizeLinear" else None
        if activation is not None and activation not in constants and activation in shapes:
            shape = [1] + shapes[activation][1:]  # broadcast over the (dynamic) batch axis
            factor = (1 + generator.uniform(-1, 1, shape) * 2.0 ** -20).astype(np.float32)
            factor_name, perturbed = f"{activation}__ulp_factor{len(nodes)}", f"{activation}__ulp{len(nodes)}"
            model.graph.initializer.append(numpy_helper.from_array(factor, factor_name))
            nodes.append(helper.make_node("Mul", [activation, factor_name], [perturbed]))
            node.input[0] = perturbed
        nodes.append(node)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    del model.graph.value_info[:]
    onnx.save(model, out_path)


def compare(args):
    model_name = os.path.splitext(os.path.basename(args.model))[0]
    out_root = os.path.join(args.work, "outputs", model_name)
    inputs = input_dir(args.work)
    if not os.path.isdir(os.path.join(os.path.dirname(args.ort), "node_modules", "onnxruntime-node")):
        sys.exit(f"FAILED: ONNX Runtime for Node is not installed next to {args.ort}; run scripts/install_ort.sh")

    help_text = subprocess.run([args.qdqrt, "run", "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True).stdout
    if "--saveOutputs" not in help_text:
        print(f"SKIPPED: '{args.qdqrt} run' has no --saveOutputs option (the CLI cannot run models yet)")
        sys.exit(SKIP_RETURN_CODE)

    directories = {name: os.path.join(out_root, name) for name in ("ort-all", "ort-plain", "qdqrt")}
    seconds = {}
    for name, level in (("ort-all", "all"), ("ort-plain", "disabled")):
        seconds[name] = run([args.node, args.ort, "--model", args.model, "--inputs", inputs,
                             "--outputs", directories[name], "--optimization", level])
    load_inputs = ",".join(f"{f[:-4]}:{os.path.join(inputs, f)}" for f in sorted(os.listdir(inputs)))
    seconds["qdqrt"] = run([args.qdqrt, "run", f"--onnx={args.model}", f"--loadInputs={load_inputs}",
                            f"--saveOutputs={directories['qdqrt']}"])
    print("seconds: " + ", ".join(f"{k} {v:.2f}" for k, v in seconds.items()))

    if args.kind == "qdq-random":
        # The yardstick for chaotic random-weight QDQ nets: ONNX Runtime on ulp-perturbed copies.
        for seed in range(ULP_PERTURBATION_RUNS):
            perturbed_model = os.path.join(out_root, f"ulp_perturbed_{seed}.onnx")
            write_ulp_perturbed_model(args.model, perturbed_model, seed)
            directories[f"ort-ulp{seed}"] = os.path.join(out_root, f"ort-ulp{seed}")
            run([args.node, args.ort, "--model", perturbed_model, "--inputs", inputs,
                 "--outputs", directories[f"ort-ulp{seed}"], "--optimization", "disabled"])
    outputs = {name: load_outputs(directory) for name, directory in directories.items()}
    torch_directory = os.path.join(out_root, "torch")
    if os.path.isdir(torch_directory):
        outputs["torch"] = load_outputs(torch_directory)
    failures = []
    for output_name, reference in outputs["ort-plain"].items():
        if output_name not in outputs["qdqrt"]:
            failures.append(f"qdqrt wrote no output '{output_name}'")
            continue
        candidate = outputs["qdqrt"][output_name]
        if candidate.shape != reference.shape:
            failures.append(f"output '{output_name}': qdqrt shape {candidate.shape}, ONNX Runtime {reference.shape}")
            continue
        against_plain = distance(candidate, reference)
        print(f"output '{output_name}' {list(reference.shape)} [{args.kind}]")
        print(describe("qdqrt vs ort-plain", against_plain))
        print(describe("qdqrt vs ort-all", distance(candidate, outputs["ort-all"][output_name])))
        # How far two independent implementations of the same graph land from each other.
        yardstick = {"max_abs": 0.0, "mean_abs": 0.0}
        for other in ("ort-all", "torch", *(f"ort-ulp{seed}" for seed in range(ULP_PERTURBATION_RUNS))):
            if output_name in outputs.get(other, {}):
                spread = distance(outputs[other][output_name], reference)
                print(describe(f"{other} vs ort-plain", spread))
                yardstick = {key: max(value, spread[key]) for key, value in yardstick.items()}
        failures += check(args, output_name, against_plain, yardstick, outputs)

    if failures:
        sys.exit("FAILED:\n  " + "\n  ".join(failures))
    print("PASSED")


def check(args, output_name, d, yardstick, outputs):
    failures = []
    relative_floor = 1e-3 * d["range"]
    if args.kind == "fp32":
        if d["max_abs"] > relative_floor:
            failures.append(f"'{output_name}': max abs error {d['max_abs']:.6g} > 1e-3 * range = {relative_floor:.6g}")
        if d.get("argmax_agreement", 1.0) < 1.0:
            failures.append(f"'{output_name}': argmax agreement {100 * d['argmax_agreement']:.2f}% < 100%")
    elif args.kind == "qdq-random":
        for key in ("max_abs", "mean_abs"):
            limit = 2 * yardstick[key] + relative_floor
            if d[key] > limit:
                failures.append(f"'{output_name}': {key} error {d[key]:.6g} > 2 * spread between other "
                                f"implementations {yardstick[key]:.6g} + 1e-3 * range = {limit:.6g}")
    elif args.kind == "qdq-trained":
        if d.get("argmax_agreement", 0.0) < args.min_agreement:
            failures.append(f"'{output_name}': argmax agreement {100 * d.get('argmax_agreement', 0):.2f}% "
                            f"< {100 * args.min_agreement:g}%")
        if d["max_rel_range"] > 0.05:
            failures.append(f"'{output_name}': max abs error {100 * d['max_rel_range']:.3f}% of range > 5%")
    labels_path = os.path.join(args.work, "labels.npy")
    if os.path.exists(labels_path):
        labels = np.load(labels_path)
        accuracy = {name: float(np.mean(outputs[name][output_name].argmax(-1) == labels))
                    for name in ("ort-plain", "ort-all", "qdqrt")}
        print("test accuracy: " + ", ".join(f"{k} {100 * v:.2f}%" for k, v in accuracy.items()))
        if abs(accuracy["qdqrt"] - accuracy["ort-plain"]) > 0.01:
            failures.append(f"'{output_name}': qdqrt accuracy {100 * accuracy['qdqrt']:.2f}% differs from "
                            f"ONNX Runtime's {100 * accuracy['ort-plain']:.2f}% by more than 1 point")
    return failures


def selftest(args):
    """The oracle itself: exact .npy round trips through npy.js, run_ort.js on a small graph with
    known results, its timing JSON, and the shipped FP32 Fashion-MNIST model's accuracy under it."""
    import json
    import onnx
    from onnx import TensorProto, helper

    node_dir = os.path.dirname(args.ort)
    round_trip = os.path.join(args.work, "npy_round_trip")
    os.makedirs(round_trip, exist_ok=True)
    generator = np.random.default_rng(7)
    arrays = {dtype: (generator.standard_normal((2, 3, 5)) * 100).astype(dtype)
              for dtype in ("float32", "float64", "int64", "int32", "int16", "uint8", "int8", "bool")}
    arrays["scalar"] = np.float32(3.5)
    arrays["vector"] = np.arange(7, dtype=np.int64)
    for name, array in arrays.items():
        np.save(os.path.join(round_trip, f"{name}.npy"), array)
    script = ("const {readNpy, writeNpy} = require(process.argv[1] + '/npy.js');"
              "for (const name of process.argv.slice(3)) {"
              "  const t = readNpy(process.argv[2] + '/' + name + '.npy');"
              "  writeNpy(process.argv[2] + '/' + name + '.out.npy', t.type, t.dims, t.data); }")
    run([args.node, "-e", script, node_dir, round_trip, *arrays])
    failures = []
    for name, array in arrays.items():
        back = np.load(os.path.join(round_trip, f"{name}.out.npy"))
        if back.dtype != array.dtype or back.shape != array.shape or not np.array_equal(back, array):
            failures.append(f"npy round trip of {name}: got {back.dtype} {back.shape}")

    # y = x * 2 + 1 (float32) and its Cast to int64: exact answers known without any engine.
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["doubled"]), helper.make_node("Add", ["doubled", "one"], ["y"]),
         helper.make_node("Cast", ["y"], ["y_int"], to=TensorProto.INT64)],
        "selftest",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4]),
         helper.make_tensor_value_info("y_int", TensorProto.INT64, ["n", 4])],
        [helper.make_tensor("two", TensorProto.FLOAT, [], [2.0]), helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    model_path = os.path.join(args.work, "affine.onnx")
    onnx.save(model, model_path)
    inputs = os.path.join(args.work, "affine_inputs")
    os.makedirs(inputs, exist_ok=True)
    x = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    np.save(os.path.join(inputs, "x.npy"), x)
    outputs = os.path.join(args.work, "affine_outputs")
    timing = subprocess.run([args.node, args.ort, "--model", model_path, "--inputs", inputs, "--outputs", outputs,
                             "--iterations", "3"], stdout=subprocess.PIPE, text=True, check=True).stdout
    if not np.array_equal(np.load(os.path.join(outputs, "y.npy")), x * 2 + 1):
        failures.append("run_ort.js: wrong float output of x * 2 + 1")
    y_int = np.load(os.path.join(outputs, "y_int.npy"))
    if y_int.dtype != np.int64 or not np.array_equal(y_int, (x * 2 + 1).astype(np.int64)):
        failures.append(f"run_ort.js: wrong int64 output {y_int.dtype} {y_int.tolist()}")
    if not json.loads(timing)["median_ms"] > 0:
        failures.append(f"run_ort.js: no median latency in {timing!r}")

    fmnist = os.path.join(args.work, "fmnist")
    args.count = 500
    args_work, args.work = args.work, fmnist
    prepare_fmnist(args)
    args.work = args_work
    run([args.node, args.ort, "--model", os.path.join(REPO_ROOT, "models", "fmnist_resnet_fp32.onnx"),
         "--inputs", input_dir(fmnist), "--outputs", os.path.join(fmnist, "outputs")])
    logits = np.load(os.path.join(fmnist, "outputs", "output.npy"))
    accuracy = float(np.mean(logits.argmax(-1) == np.load(os.path.join(fmnist, "labels.npy"))))
    print(f"ONNX Runtime accuracy of fmnist_resnet_fp32.onnx on 500 test images: {100 * accuracy:.2f}%")
    if accuracy < 0.85:
        failures.append(f"fmnist_resnet_fp32.onnx accuracy {100 * accuracy:.2f}% < 85% under ONNX Runtime")
    if failures:
        sys.exit("FAILED:\n  " + "\n  ".join(failures))
    print("PASSED")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    self_test = commands.add_parser("selftest")
    self_test.add_argument("--work", required=True)
    self_test.add_argument("--ort", default=os.path.join(REPO_ROOT, "tools", "ort", "run_ort.js"))
    self_test.add_argument("--node", default="node")
    torchvision = commands.add_parser("prepare-torchvision")
    torchvision.add_argument("--model", required=True)
    torchvision.add_argument("--size", type=int, required=True)
    torchvision.add_argument("--work", required=True)
    fmnist = commands.add_parser("prepare-fmnist")
    fmnist.add_argument("--count", type=int, default=256)
    fmnist.add_argument("--work", required=True)
    comparison = commands.add_parser("compare")
    comparison.add_argument("--model", required=True)
    comparison.add_argument("--work", required=True)
    comparison.add_argument("--kind", choices=("fp32", "qdq-random", "qdq-trained"), required=True)
    comparison.add_argument("--min-agreement", type=float, default=0.99,
                            help="qdq-trained: least argmax agreement with ort-plain (fraction)")
    comparison.add_argument("--qdqrt", required=True)
    comparison.add_argument("--ort", default=os.path.join(REPO_ROOT, "tools", "ort", "run_ort.js"))
    comparison.add_argument("--node", default="node")
    args = parser.parse_args()
    {"selftest": selftest, "prepare-torchvision": prepare_torchvision, "prepare-fmnist": prepare_fmnist, "compare": compare}[args.command](args)


if __name__ == "__main__":
    main()
