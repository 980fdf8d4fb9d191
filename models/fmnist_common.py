"""Pieces shared by the Fashion-MNIST training scripts: data loading, training loop, accuracy, export.

Data: Debian's dataset-fashion-mnist (IDX files). Input normalization:
x = (pixel / 255 - 0.2860) / 0.3530 (the training set's mean and standard deviation).
"""
import argparse
import copy
import gzip
import os
import time

import numpy as np
import torch
import torch.nn.functional as F

DATA_DIR = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860, 0.3530
OPSET = 13


def read_idx(path):
    """IDX file (gzipped) -> numpy array; the header gives the element type and the shape."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load_split(split):
    prefix = "train" if split == "train" else "t10k"
    images = read_idx(os.path.join(DATA_DIR, f"{prefix}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(DATA_DIR, f"{prefix}-labels-idx1-ubyte.gz"))
    return normalize(images), torch.from_numpy(labels.astype(np.int64))


def normalize(images):
    """uint8 [N, 28, 28] -> float32 [N, 1, 28, 28], the model's input convention."""
    return torch.from_numpy(((images.astype(np.float32) / 255.0 - MEAN) / STD)[:, None])


BACKGROUND = (0.0 - MEAN) / STD  # a black pixel after normalization: what a shifted image is padded with


def augment(batch, generator, max_shift=1):
    """Random horizontal flip and a random shift of up to `max_shift` pixels each way, per image
    (pad with black, crop back to 28x28): the usual Fashion-MNIST augmentation."""
    flip = torch.rand(len(batch), generator=generator) < 0.5
    batch = torch.where(flip[:, None, None, None], batch.flip(3), batch)
    padded = F.pad(batch, [max_shift] * 4, value=BACKGROUND)
    offsets = torch.randint(0, 2 * max_shift + 1, (len(batch), 2), generator=generator).tolist()
    size = batch.shape[-1]
    return torch.stack([padded[i, :, dy:dy + size, dx:dx + size] for i, (dy, dx) in enumerate(offsets)])


def train(model, images, labels, steps, batch_size, learning_rate, generator, augmented=False, weight_decay=0.0,
          label_smoothing=0.0, freeze_batchnorm=False, teacher=None):
    """Adam (AdamW when weight_decay > 0) with cosine decay over `steps` mini-batches drawn by a
    seeded shuffle; `augmented`: each mini-batch goes through augment(); `label_smoothing`: the
    cross-entropy's (0.1 puts 0.01 on each wrong class), which keeps long runs from overfitting;
    `freeze_batchnorm`: BatchNorm normalizes by its running statistics and leaves them alone (its
    scale and shift still train), so the network trained is the one evaluated and exported;
    `teacher`: a model (run in eval mode) whose softmax is the target instead of the labels
    (distillation: QAT learns to compute what the FP32 model computes)."""
    if weight_decay > 0:
        optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=weight_decay)
    else:
        optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, steps)
    model.train()
    if freeze_batchnorm:
        for module in model.modules():
            if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
                module.eval()
    began = time.time()
    order = torch.randperm(len(images), generator=generator)
    for step in range(steps):
        start = (step * batch_size) % len(images)
        if start + batch_size > len(images):
            order = torch.randperm(len(images), generator=generator)
            start = 0
        index = order[start:start + batch_size]
        batch = augment(images[index], generator) if augmented else images[index]
        if teacher is not None:
            with torch.no_grad():
                target = teacher(batch).softmax(1)
            loss = F.cross_entropy(model(batch), target)
        else:
            loss = F.cross_entropy(model(batch), labels[index], label_smoothing=label_smoothing)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        if step % 200 == 0:
            print(f"  step {step}/{steps} loss {loss.item():.4f} ({time.time() - began:.0f} s)", flush=True)


@torch.no_grad()
def accuracy(model, images, labels):
    model.eval()
    correct = sum((model(images[i:i + 1000]).argmax(1) == labels[i:i + 1000]).sum().item()
                  for i in range(0, len(images), 1000))
    return correct / len(images)


@torch.no_grad()
def load_exported_weights(model, path, images):
    """Sets `model`'s weights from an FP32 file this script exported (BatchNormalization folded into
    the convs), so that training can go on from there (a warm restart).

    The i-th Conv node goes to the i-th Conv2d (definition order, the forward order in these
    networks), the Gemm to the Linear. A Conv2d followed by a BatchNorm2d gets the folded weight and
    its BatchNorm the folded bias first as a plain `x + bias`; then one pass over `images` measures
    each such conv's per-channel output mean m and variance v, and the BatchNorm becomes
    running_mean m, running_var v, weight sqrt(v + eps), bias m + folded bias: still exactly the
    file's function in eval mode, and close to it in train mode, where BatchNorm normalizes by the
    batch's statistics (with weight 1, bias b it would lose every channel's learned scale)."""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(path).graph
    values = {init.name: torch.from_numpy(numpy_helper.to_array(init).copy()) for init in graph.initializer}
    convs = [node for node in graph.node if node.op_type == "Conv"]
    gemms = [node for node in graph.node if node.op_type == "Gemm"]
    modules = list(model.modules())
    conv_modules = [m for m in modules if isinstance(m, torch.nn.Conv2d)]
    linear_modules = [m for m in modules if isinstance(m, torch.nn.Linear)]
    assert len(convs) == len(conv_modules) and len(gemms) == len(linear_modules), "not this network's file"
    norms = []
    for node, conv in zip(convs, conv_modules):
        conv.weight.copy_(values[node.input[1]])
        bias = values[node.input[2]] if len(node.input) > 2 else torch.zeros(conv.out_channels)
        follower = modules[modules.index(conv) + 1]
        if isinstance(follower, torch.nn.BatchNorm2d):
            follower.weight.fill_(1.0)
            follower.bias.copy_(bias)
            follower.running_mean.zero_()
            follower.running_var.fill_(1.0 - follower.eps)
            norms.append(follower)
        else:
            conv.bias.copy_(bias)
    for node, linear in zip(gemms, linear_modules):
        linear.weight.copy_(values[node.input[1]])
        linear.bias.copy_(values[node.input[2]])

    moments = {}  # BatchNorm -> (sum, sum of squares, count) of its input per channel

    def record(norm, inputs, _output):
        x = inputs[0].transpose(0, 1).flatten(1).double()
        total, squares, count = moments.get(norm, (0.0, 0.0, 0))
        moments[norm] = (total + x.sum(1), squares + (x * x).sum(1), count + x.shape[1])

    hooks = [norm.register_forward_hook(record) for norm in norms]
    model.eval()
    for batch in images.split(256):
        model(batch)
    for hook in hooks:
        hook.remove()
    for norm in norms:
        total, squares, count = moments[norm]
        mean = total / count
        variance = (squares / count - mean * mean).clamp(min=0)
        norm.running_mean.copy_(mean)
        norm.running_var.copy_(variance)
        norm.weight.copy_((variance + norm.eps).sqrt())
        norm.bias.add_(mean)


def export(model, path):
    torch.onnx.export(
        model, torch.zeros(1, 1, 28, 28), path, opset_version=OPSET, do_constant_folding=True,
        input_names=["input"], output_names=["output"],
        dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    # The preprocessing into the file's metadata, where qdqrt eval/calibrate read it.
    from add_preprocessing_metadata import add_metadata
    add_metadata(path)


def train_qat_and_export(make_model, name, description, epochs, qat_steps, augmented=False, weight_decay=0.0,
                         quantize=None, learning_rate=2e-3, after_training=None, qat_learning_rate=1e-4,
                         label_smoothing=0.0):
    """The whole recipe of a training script: FP32 training, max calibration (PTQ), QAT, export.

    Parses --out, --epochs, --qat-steps, --batch-size; writes <out>/<name>_fp32.onnx and
    <out>/<name>_qdq.onnx and prints the test accuracies (FP32, PTQ, QAT). Seeds as the scripts
    always did: torch seed 0 before the model is made, a generator seeded 0 for the data order.
    `augmented`/`weight_decay`/`label_smoothing` go to train() for both the FP32 training and QAT
    (`learning_rate`, `qat_learning_rate`: their peak rates); `quantize`
    replaces fake_quant.quantize_model (a model -> its fake-quantized twin); `after_training(model,
    generator)` changes the trained FP32 model before it is measured, quantized and exported.
    One thread (torch.set_num_threads(1)): the machine's cores are shared.
    """
    from fake_quant import calibrate, freeze_weight_scales, quantize_model
    quantize = quantize or quantize_model

    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--epochs", type=float, default=epochs, help="FP32 training epochs")
    parser.add_argument("--qat-steps", type=int, default=qat_steps, help="QAT fine-tuning mini-batches")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--learning-rate", type=float, default=learning_rate, help="FP32 training's peak rate")
    parser.add_argument("--qat-learning-rate", type=float, default=qat_learning_rate, help="QAT's peak rate")
    parser.add_argument("--label-smoothing", type=float, default=label_smoothing,
                        help="cross-entropy label smoothing (FP32 training and QAT)")
    parser.add_argument("--qat-freeze-batchnorm", action="store_true",
                        help="QAT with BatchNorm on its running statistics (frozen) instead of the batch's")
    parser.add_argument("--qat-distill", action="store_true",
                        help="QAT targets: the FP32 model's softmax (distillation) instead of the labels")
    parser.add_argument("--init-from", help="an FP32 .onnx this script exported: start the FP32 training from "
                        "its weights (a warm restart: a new cosine cycle) instead of from random ones")
    parser.add_argument("--fp32-checkpoint", help="where to save the trained FP32 weights; when the file exists, "
                        "load them instead of training")
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    generator = torch.Generator().manual_seed(0)
    train_images, train_labels = load_split("train")
    test_images, test_labels = load_split("test")

    began = time.time()
    model = make_model()
    print(f"{name}: {sum(p.numel() for p in model.parameters())} parameters", flush=True)
    steps = int(args.epochs * len(train_images) / args.batch_size)
    if args.init_from:
        load_exported_weights(model, args.init_from, train_images[:2048])
        print(f"FP32 weights from {args.init_from}: test accuracy {accuracy(model, test_images, test_labels):.4f}",
              flush=True)
    if args.fp32_checkpoint and os.path.exists(args.fp32_checkpoint):
        # Redo only what follows the FP32 training (e.g. another QAT schedule); the generator then
        # starts where it would have been after training only if the schedule is the same.
        model.load_state_dict(torch.load(args.fp32_checkpoint))
        print(f"FP32 weights from {args.fp32_checkpoint}", flush=True)
    else:
        print(f"FP32 training: {steps} steps of {args.batch_size}", flush=True)
        train(model, train_images, train_labels, steps, args.batch_size, args.learning_rate, generator, augmented,
              weight_decay, args.label_smoothing)
        if args.fp32_checkpoint:
            torch.save(model.state_dict(), args.fp32_checkpoint)
    if after_training is not None:
        print(f"FP32 test accuracy before {after_training.__name__}: "
              f"{accuracy(model, test_images, test_labels):.4f}", flush=True)
        after_training(model, generator)
    fp32_accuracy = accuracy(model, test_images, test_labels)
    print(f"FP32 test accuracy {fp32_accuracy:.4f} ({time.time() - began:.0f} s)", flush=True)

    qdq_model = quantize(copy.deepcopy(model))
    calibration = train_images[torch.randperm(len(train_images), generator=generator)[:2048]]
    calibrate(qdq_model, calibration.split(256))
    calibrated_accuracy = accuracy(qdq_model, test_images, test_labels)
    print(f"QDQ after max calibration (PTQ): test accuracy {calibrated_accuracy:.4f}", flush=True)
    train(qdq_model, train_images, train_labels, args.qat_steps, args.batch_size, args.qat_learning_rate, generator,
          augmented, weight_decay, args.label_smoothing, args.qat_freeze_batchnorm,
          model.eval() if args.qat_distill else None)
    freeze_weight_scales(qdq_model)
    qdq_accuracy = accuracy(qdq_model, test_images, test_labels)
    print(f"QDQ after {args.qat_steps} QAT steps: test accuracy {qdq_accuracy:.4f} "
          f"({time.time() - began:.0f} s total)", flush=True)

    os.makedirs(args.out, exist_ok=True)
    for net, variant in ((model, "fp32"), (qdq_model, "qdq")):
        path = os.path.join(args.out, f"{name}_{variant}.onnx")
        export(net.eval(), path)
        print(path)
    print(f"summary: FP32 {100 * fp32_accuracy:.2f}%, PTQ-max {100 * calibrated_accuracy:.2f}%, "
          f"QAT {100 * qdq_accuracy:.2f}%")
