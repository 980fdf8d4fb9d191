#!/usr/bin/python3
"""Models exported with symbolic size dims, run at several shapes from one range engine.

    dynamic_models.py check --model yolo --work DIR --qdqrt build/qdqrt
    dynamic_models.py hostile --work DIR --qdqrt build/qdqrt

`check`: exports the model with `models/export_coverage.py --dynamic` (`yolo`, `bert`: the
coverage suite's detector and nn.TransformerEncoder) or `models/export_bert_encoder.py --dynamic`
(`bert_encoder`: the BERT-base-shaped encoder with quantized attention MatMuls), cached in
DIR/cache by a hash of the export scripts as the coverage suite caches its exports; checks that
the files are what a user's export looks like (symbolic input dims; Reshape targets computed from
Shape of a running tensor); then for the FP32
and the QDQ file builds one engine for the model's profile (PROFILES: min/opt/max, as `qdqrt exec
--minShapes/--optShapes/--maxShapes` takes them) and runs it at each of the profile's run shapes
on a seeded random input. At each shape the outputs must have the shape the network gives there,
equal bit for bit those of an engine built for exactly that shape (`qdqrt exec --shapes`), and
match the reference executor (`qdqrt run`) within the variant's tolerance (TOLERANCES).

The engine is built and saved once (`qdqrt exec --onnx=M --minShapes.. --optShapes.. --maxShapes..
--saveEngine=E`) and each shape run from the file (`qdqrt exec --loadEngine=E --shapes=..`).

`hostile`: shapes outside the profile, zero dims, a rank or batch the profile does not have and
dims whose product overflows, given to a build (`--onnx` with a profile) and to a saved range
engine (`--loadEngine`), are refused by `qdqrt exec` with a message naming the input (or value)
and the problem, exit code 2 (a bad option) or 1 (a shape the model cannot be built at), never a
crash.
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import coverage_suite as suite  # noqa: E402

# model -> the profile (min, opt, max) and the shapes run from it, batch 1.
PROFILES = {
    # The sizes a detector is served at: square and a camera's 3:4, up to the profile's maximum.
    "yolo": {"min": (1, 3, 320, 320), "opt": (1, 3, 640, 640), "max": (1, 3, 640, 640),
             "runs": [(1, 3, 320, 320), (1, 3, 480, 640), (1, 3, 640, 640)]},
    "bert": {"min": (1, 16, 128), "opt": (1, 128, 128), "max": (1, 384, 128),
             "runs": [(1, 16, 128), (1, 64, 128), (1, 128, 128), (1, 384, 128)]},
    "bert_encoder": {"min": (1, 16, 768), "opt": (1, 128, 768), "max": (1, 384, 768),
                     "runs": [(1, 16, 768), (1, 64, 768), (1, 128, 768), (1, 384, 768)]},
}
ENCODER_EXPORTER = os.path.join(suite.REPO_ROOT, "models", "export_bert_encoder.py")


def yolo_output_shape(shape):
    # 3 anchors per cell of the stride-8, -16 and -32 maps; 4 box + 1 objectness + 80 classes.
    height, width = shape[2], shape[3]
    return (shape[0], 3 * sum((height // s) * (width // s) for s in (8, 16, 32)), 85)


OUTPUT_SHAPES = {"yolo": yolo_output_shape, "bert": tuple, "bert_encoder": tuple}

# Error allowed against the reference executor, per model and variant, relative to the output's
# range ("max"), and for the chaotic QDQ detector also its mean and 99th percentile.
TOLERANCES = {
    ("bert", "fp32"): {"max": 1e-4},
    ("bert", "qdq"): {"max": 1e-4},
    ("bert_encoder", "fp32"): {"max": 1e-4},
    # Quantized attention: rounding ties in the Softmax and MatMul codes, up to 3.4e-3 of the range
    # at sequence 64 to 384 (2e-2: the tolerance of the QDQ encoder in tests/engine_profiles).
    ("bert_encoder", "qdq"): {"max": 2e-2},
    # FP32 summation order and SiLU in the conv epilogues: up to 2.7e-4 of the range at 640x640 on
    # the stride-32 head (the deepest features; about 100 of 2.1 M values above 1e-4, mean 9e-7).
    ("yolo", "fp32"): {"max": 5e-4},
    # 48 quantized random-weight convs: a rounding tie decided the other way (SiLU in fp32
    # epilogues, BatchNorm folded; models/coverage_expectations.json) changes later codes, so single
    # values differ by up to 0.71 of the range (sigmoid outputs). Measured at 320..640: mean 0.016
    # to 0.023, 99th percentile 0.10 to 0.16; one head's height and width swapped gives a mean of
    # 0.11 and a 99th percentile of 0.64, box and class columns mixed a 99th percentile of 0.84.
    ("yolo", "qdq"): {"mean": 0.05, "p99": 0.25},
}


class Failed(Exception):
    pass


def shape_text(shape):
    return "x".join(str(d) for d in shape)


def run(command, log, timeout=900, expect_ok=True):
    log.write("+ " + " ".join(command) + "\n")
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    log.write(result.stdout)
    if expect_ok and result.returncode != 0:
        raise Failed(f"{' '.join(command[:2])} exited {result.returncode}: {suite.last_error_line(result.stdout)}")
    return result


def check_export(path):
    """The file's input dims beyond the batch are symbolic and every Reshape target is computed
    from Shape of a running tensor (as torch exports view(batch, ...) with dynamic axes)."""
    import onnx
    graph = onnx.load(path).graph
    dims = [d.dim_param or d.dim_value for d in graph.input[0].type.tensor_type.shape.dim]
    symbolic = [i for i, d in enumerate(dims) if isinstance(d, str)]
    producers = {output: node for node in graph.node for output in node.output}

    def from_shape(name, seen):
        node = producers.get(name)
        if node is None or name in seen:
            return False
        seen.add(name)
        return node.op_type == "Shape" or any(from_shape(i, seen) for i in node.input)

    reshapes = [node for node in graph.node if node.op_type == "Reshape"]
    computed = [node for node in reshapes if from_shape(node.input[1], set())]
    if len(symbolic) < 2:
        raise Failed(f"{path}: input dims {dims}: expected symbolic size dims beyond the batch")
    if not reshapes or len(computed) != len(reshapes):
        raise Failed(f"{path}: {len(computed)} of {len(reshapes)} Reshape targets computed from Shape")
    return f"input {dims}, {len(computed)} Reshape targets computed from Shape"


def compare(model, variant, engine, reference):
    """(failures, measured errors) of `engine` against the reference output; no failures when
    within the tolerance."""
    tolerance = TOLERANCES[(model, variant)]
    if engine.shape != reference.shape:
        return [f"shape {engine.shape}, the reference's {reference.shape}"], {}
    reference = reference.astype(np.float64)
    output_range = float(reference.max() - reference.min()) or 1.0
    difference = np.abs(engine - reference) / output_range
    difference[np.isnan(difference)] = np.inf
    measured = {"max": float(difference.max()), "mean": float(difference.mean()),
                "p99": float(np.percentile(difference, 99))}
    failures = [f"{key} error {measured[key]:.3g} of the range above {limit:g}"
                for key, limit in tolerance.items() if not measured[key] <= limit]
    return failures, measured


def encoder_files(work, timeout, log):
    """bert_encoder's files (export_bert_encoder.py --dynamic), exported once per content hash."""
    directory = os.path.join(work, "cache", "bert_encoder_dynamic")
    paths = {variant: os.path.join(directory, f"bert_encoder_dynamic_{variant}.onnx") for variant in ("fp32", "qdq")}
    digest = hashlib.sha256()
    for path in (ENCODER_EXPORTER, os.path.join(suite.REPO_ROOT, "models", "fake_quant.py")):
        with open(path, "rb") as f:
            digest.update(f.read())
    digest.update(suite.package_version("torch").encode())
    key_path = os.path.join(directory, "key")
    if os.path.exists(key_path) and open(key_path).read() == digest.hexdigest() and all(map(os.path.exists,
                                                                                          paths.values())):
        return paths, 0.0, True
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    seconds, _ = suite.run_stage([suite.PYTHON, ENCODER_EXPORTER, "--dynamic", "--out", directory], timeout,
                                 "export_failed", log)
    with open(key_path, "w") as f:  # written last: an interrupted export is redone
        f.write(digest.hexdigest())
    return paths, seconds, False


def check(args):
    profile = PROFILES[args.model]
    os.makedirs(os.path.join(args.work, "results"), exist_ok=True)
    log_path = os.path.join(args.work, "results", f"{args.model}_dynamic.log")
    failures = []
    with open(log_path, "w") as log:
        try:
            if args.model == "bert_encoder":
                paths, seconds, cached = encoder_files(args.work, 900, log)
            else:
                paths, seconds, cached = suite.exported_files(args.work, args.model, "ci", 900, log, dynamic=True)
        except suite.Failure as failure:
            print(f"{args.model}: export failed: {failure.message}")
            return 1
        print(f"{args.model}: export {'cached' if cached else f'{seconds:.1f} s'}", flush=True)
        for variant in ("fp32", "qdq"):
            try:
                print(f"{args.model}/{variant}: {check_export(paths[variant])}")
                failures += check_variant(args, profile, variant, paths[variant], log)
            except (Failed, subprocess.TimeoutExpired) as error:
                failures.append(f"{args.model}/{variant}: {error}")
    for line in failures:
        print(f"FAILED: {line}")
    print(f"(commands and their output: {log_path})")
    return 1 if failures else 0


def check_variant(args, profile, variant, model_path, log):
    work = os.path.join(args.work, "runs", f"{args.model}_dynamic_{variant}")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    range_flags = [f"--minShapes=input:{shape_text(profile['min'])}", f"--optShapes=input:{shape_text(profile['opt'])}",
                   f"--maxShapes=input:{shape_text(profile['max'])}"]
    once = ["--iterations=1", "--warmUp=0", "--duration=0", "--threads=1"]
    engine_file = os.path.join(work, "range.qdqrt")
    run([args.qdqrt, "exec", f"--onnx={model_path}", *range_flags, f"--saveEngine={engine_file}", *once], log)
    dynamic_flags = [f"--loadEngine={engine_file}"]
    failures = []
    generator = np.random.default_rng(20261129)
    for shape in profile["runs"]:
        label = f"{args.model}/{variant} at {shape_text(shape)}"
        input_path = os.path.join(work, f"input_{shape_text(shape)}.npy")
        np.save(input_path, generator.standard_normal(shape).astype(np.float32))
        common = [f"--shapes=input:{shape_text(shape)}", f"--loadInputs=input:{input_path}", *once]
        outputs = {}
        for kind, flags in (("dynamic", dynamic_flags), ("fixed", [f"--onnx={model_path}"])):
            path = os.path.join(work, f"{kind}_{shape_text(shape)}.json")
            run([args.qdqrt, "exec", *flags, *common, f"--exportOutput={path}"], log)
            outputs[kind] = suite.read_engine_outputs(path)["output"]
        reference_dir = os.path.join(work, f"reference_{shape_text(shape)}")
        run([args.qdqrt, "run", f"--onnx={model_path}", f"--loadInputs=input:{input_path}",
             f"--saveOutputs={reference_dir}"], log)
        reference = np.load(os.path.join(reference_dir, "output.npy"))
        dynamic = outputs["dynamic"]
        want = OUTPUT_SHAPES[args.model](shape)
        problems = []
        if dynamic.shape != want:
            problems.append(f"output shape {dynamic.shape}, expected {want}")
        if dynamic.shape != outputs["fixed"].shape or not np.array_equal(dynamic, outputs["fixed"]):
            differing = int(np.sum(dynamic != outputs["fixed"])) if dynamic.shape == outputs["fixed"].shape else "all"
            problems.append(f"differs from the engine built for exactly this shape ({differing} values)")
        reference_problems, measured = compare(args.model, variant, dynamic, reference)
        problems += reference_problems
        print(f"{label} (from one saved engine file): output {'x'.join(map(str, dynamic.shape))}, equal to the fixed engine's: "
              f"{np.array_equal(dynamic, outputs['fixed'])}, against the reference: "
              + ", ".join(f"{key} {value:.2g}" for key, value in measured.items()), flush=True)
        failures += [f"{label}: {problem}" for problem in problems]
    return failures


# (what, exec flags beyond --onnx (and the profile's flags it does not give), words the error must hold)
HOSTILE = [
    ("a run shape above the maximum", ["--shapes=input:1x400x128"], ["input 'input'", "400"]),
    ("a run shape below the minimum", ["--shapes=input:1x8x128"], ["input 'input'", "8"]),
    ("a zero dim", ["--shapes=input:1x0x128"], ["input 'input'", "0"]),
    ("a batch above the profile's", ["--shapes=input:2x16x128"], ["input 'input'", "batch"]),
    ("a fixed dim changed", ["--shapes=input:1x16x64"], ["input 'input'", "64"]),
    ("a dim beyond any engine", ["--shapes=input:1x9223372036854775807x128"], ["too large"]),
    ("a zero dim in the profile", ["--minShapes=input:1x0x128"], ["0"]),
    ("a maximum whose product overflows", ["--optShapes=input:1099511627775x1099511627775x128",
                                           "--maxShapes=input:1099511627775x1099511627775x128"], ["overflow"]),
    # The input fits (1.4e14 values) but the attention scores [4, S, S] cannot be held.
    ("a maximum whose attention cannot be held", ["--optShapes=input:1x1099511627775x128",
                                                  "--maxShapes=input:1x1099511627775x128"],
     ["MatMul", "needs more than"]),
]
# (what, --shapes for the saved engine of the bert file's profile 1x16x128..1x384x128, words)
HOSTILE_LOADED = [
    ("a run shape above the maximum", "1x400x128", ["input 'input'", "400", "16..384"]),
    ("a run shape below the minimum", "1x8x128", ["input 'input'", "8", "16..384"]),
    ("a zero dim", "1x0x128", ["input 'input'", "is 0"]),
    ("a batch above the profile's", "2x16x128", ["input 'input'", "dim 0", "1..1"]),
    ("a fixed dim changed", "1x16x64", ["input 'input'", "64", "128..128"]),
    ("another rank", "1x16", ["input 'input'", "rank 2"]),
    ("a dim beyond any engine", "1x9223372036854775807x128", ["too large"]),
    ("dims whose product overflows", "1x1099511627775x1099511627775", ["input 'input'"]),
]


def refused(command, what, words, log):
    """[] when `command` fails cleanly with an error line holding every word; else the failure."""
    result = run(command, log, timeout=300, expect_ok=False)
    errors = [line for line in result.stdout.splitlines() if "error" in line.lower()]
    message = errors[0] if errors else "(no error line)"
    # 2: a bad option; 1: a model that cannot be built at that shape. Never a signal.
    ok = result.returncode in (1, 2) and errors and all(word in message for word in words)
    print(f"{'ok    ' if ok else 'FAIL  '}{what}: exit {result.returncode}: {message}")
    if ok:
        return []
    return [f"{what}: exit {result.returncode} (expected 1 or 2), '{message}' should name "
            + ", ".join(repr(word) for word in words)]


def hostile(args):
    paths = {}
    os.makedirs(os.path.join(args.work, "results"), exist_ok=True)
    with open(os.path.join(args.work, "results", "hostile_dynamic.log"), "w") as log:
        paths, _, _ = suite.exported_files(args.work, "bert", "ci", 900, log, dynamic=True)
        failures = []
        for what, flags, words in HOSTILE:
            given = {flag.split("=")[0] for flag in flags}
            defaults = [flag for flag in ("--minShapes=input:1x16x128", "--optShapes=input:1x128x128",
                                          "--maxShapes=input:1x384x128") if flag.split("=")[0] not in given]
            command = [args.qdqrt, "exec", f"--onnx={paths['qdq']}", *defaults, *flags,
                       "--iterations=1", "--warmUp=0", "--duration=0"]
            failures += refused(command, what, words, log)
        engine_file = os.path.join(args.work, "results", "hostile_bert_range.qdqrt")
        run([args.qdqrt, "exec", f"--onnx={paths['qdq']}", "--minShapes=input:1x16x128", "--optShapes=input:1x128x128",
             "--maxShapes=input:1x384x128", f"--saveEngine={engine_file}", "--iterations=1", "--warmUp=0",
             "--duration=0"], log)
        for what, shape, words in HOSTILE_LOADED:
            command = [args.qdqrt, "exec", f"--loadEngine={engine_file}", f"--shapes=input:{shape}",
                       "--iterations=1", "--warmUp=0", "--duration=0"]
            failures += refused(command, f"saved engine: {what}", words, log)
    for line in failures:
        print(f"FAILED: {line}")
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    check_parser = sub.add_parser("check", help="one range engine per file, run at several shapes")
    check_parser.add_argument("--model", required=True, choices=sorted(PROFILES))
    hostile_parser = sub.add_parser("hostile", help="shapes the engine must refuse")
    for sub_parser in (check_parser, hostile_parser):
        sub_parser.add_argument("--work", required=True, help="directory for the cache, runs and results")
        sub_parser.add_argument("--qdqrt", required=True, help="the qdqrt binary")
    args = parser.parse_args()
    return {"check": check, "hostile": hostile}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
