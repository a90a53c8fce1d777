#!/usr/bin/env python3
"""Writes the PyTorch-exported test models of tests/onnx/test_onnx_pytorch.cpp.

Run with PyTorch (2.15 made the committed files), the `onnx` package and, for
the new exporter, `onnxscript`:
    python tests/onnx/data/make_pytorch_models.py tests/onnx/data
    python tests/onnx/data/make_pytorch_models.py --resnet18 DIR   # not committed (45 MB)
The models: an MLP, LeNet-5 and a small CNN flattening by x.view, exported by
the classic TorchScript exporter (opset 17, batch axis free as "N"), and
LeNet-5 and the CNN again by the torch.export-based one (dynamo=True, opset 20,
NAME ending in _dynamo). For each model NAME it writes NAME.onnx, NAME_input.pb
(a few input rows), NAME_output.pb (what the PyTorch model, in eval mode,
computes for them) and NAME_losses.pb (fine-tuning: PyTorch's mean
cross-entropy of those rows against the labels i % 10, before and after each
of STEPS plain SGD steps on the whole batch, of learning rate 0.1, 0.01 for
ResNet-18), the last three as ONNX TensorProto files. The weights are
PyTorch's default initialisation from a fixed seed; the exported models are
not trained.
"""
import os
import sys

import onnx
import onnx.numpy_helper
import torch
from torch import nn

OPSET = 17  # the newest that Debian 12's ONNX 1.12 checker knows (IR version 8)
ROWS = 8
STEPS = 3


def mlp():
    """784-528-10 with a sigmoid hidden layer (the paper's MNIST network); logits out."""
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 528), nn.Sigmoid(), nn.Linear(528, 10))


def lenet5():
    """LeNet-5 on 1x28x28 (padding 2 on the first convolution), ReLU and max pooling; logits out."""
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))


def fine_tune(model, x, lr):
    """The losses before and after each of STEPS SGD steps (labels i % 10)."""
    labels = torch.arange(x.shape[0]) % 10
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    for step in range(STEPS + 1):
        opt.zero_grad()
        loss = loss_fn(model(x), labels)
        losses.append(loss.item())
        if step < STEPS:
            loss.backward()
            opt.step()
    return torch.tensor(losses, dtype=torch.float32)


class ViewCnn(nn.Module):
    """A small CNN that flattens by x.view(x.size(0), -1), as much PyTorch code does:
    exported as Shape, Gather, Unsqueeze, Concat and Reshape."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 5)
        self.fc = nn.Linear(4 * 12 * 12, 10)

    def forward(self, x):
        x = nn.functional.max_pool2d(torch.relu(self.conv(x)), 2)
        return self.fc(x.view(x.size(0), -1))


def resnet18():
    """torchvision's ResNet-18 (10 classes) with each batch normalisation folded into
    its convolution, as the exporter folds it in eval mode, so that fine-tuning
    trains the weights the file has."""
    from torch.nn.utils.fusion import fuse_conv_bn_eval
    import torchvision
    model = torchvision.models.resnet18(num_classes=10).eval()
    for parent in [model] + [m for m in model.modules() if m is not model]:
        names = [n for n, _ in parent.named_children()]
        for conv, bn in [("conv1", "bn1"), ("conv2", "bn2"), ("0", "1")]:
            if conv in names and bn in names and isinstance(getattr(parent, bn), nn.BatchNorm2d):
                setattr(parent, conv, fuse_conv_bn_eval(getattr(parent, conv), getattr(parent, bn)))
                setattr(parent, bn, nn.Identity())
    for p in model.parameters():  # a folded bias made from no bias is not trainable as fused
        p.requires_grad_(True)
    return model


def export(model, example, path, dynamo):
    """The classic exporter at OPSET, or (dynamo) the torch.export-based one at its
    default opset (20 in PyTorch 2.15; needs the onnxscript package)."""
    if not dynamo:
        torch.onnx.export(model, example, path, dynamo=False, opset_version=OPSET,
                          input_names=["input"], output_names=["logits"],
                          dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}})
        return
    batch = torch.export.Dim("N", min=1)
    torch.onnx.export(model, (example,), path, dynamo=True, input_names=["input"], output_names=["logits"],
                      dynamic_shapes=({0: batch},), external_data=False)


def write(name, model, example, outdir, lr=0.1, dynamo=False):
    model.eval()
    path = os.path.join(outdir, name + ".onnx")
    export(model, example, path, dynamo)
    loaded = onnx.load(path)
    onnx.checker.check_model(loaded)
    with torch.no_grad():
        out = model(example)
    losses = fine_tune(model, example, lr)
    for suffix, t in (("input", example), ("output", out), ("losses", losses)):
        proto = onnx.numpy_helper.from_array(t.numpy(), name=suffix)
        with open(os.path.join(outdir, f"{name}_{suffix}.pb"), "wb") as f:
            f.write(proto.SerializeToString())
    ops = sorted({n.op_type for n in loaded.graph.node})
    print(f"{name}: {os.path.getsize(path)} bytes, ir {loaded.ir_version}, ops {ops}, losses {losses.tolist()}")


def main():
    args = [a for a in sys.argv[1:] if a != "--resnet18"]
    outdir = args[0] if args else os.path.dirname(os.path.abspath(__file__))
    print("torch", torch.__version__, "onnx", onnx.__version__)
    if "--resnet18" in sys.argv:
        torch.manual_seed(48)
        write("pytorch_resnet18", resnet18(), torch.rand(ROWS, 3, 32, 32), outdir, lr=0.01)
        return
    torch.manual_seed(46)
    write("pytorch_mlp", mlp(), torch.rand(ROWS, 1, 28, 28), outdir)
    torch.manual_seed(47)
    write("pytorch_lenet5", lenet5(), torch.rand(ROWS, 1, 28, 28), outdir)
    torch.manual_seed(49)
    write("pytorch_view_cnn", ViewCnn(), torch.rand(ROWS, 1, 28, 28), outdir)
    torch.manual_seed(50)
    write("pytorch_lenet5_dynamo", lenet5(), torch.rand(ROWS, 1, 28, 28), outdir, dynamo=True)
    torch.manual_seed(51)
    write("pytorch_view_cnn_dynamo", ViewCnn(), torch.rand(ROWS, 1, 28, 28), outdir, dynamo=True)


if __name__ == "__main__":
    main()
