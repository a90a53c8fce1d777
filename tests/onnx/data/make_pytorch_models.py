#!/usr/bin/env python3
"""Writes the PyTorch-exported test models of tests/onnx/test_onnx_pytorch.cpp.

Run with PyTorch (2.15 made the committed files) and the `onnx` package:
    python tests/onnx/data/make_pytorch_models.py tests/onnx/data
For each model NAME it writes NAME.onnx (torch.onnx.export, the classic
TorchScript exporter, opset 17, batch axis free as "N"), NAME_input.pb (a few
input rows) and NAME_output.pb (what the PyTorch model, in eval mode, computes
for them) and NAME_losses.pb (fine-tuning: PyTorch's mean cross-entropy of
those rows against the labels i % 10, before and after each of STEPS plain SGD
steps of learning rate LR on the whole batch), all three as ONNX TensorProto
files. The weights are PyTorch's default initialisation from a fixed seed; the
exported models are not trained.
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
LR = 0.1


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


def fine_tune(model, x):
    """The losses before and after each of STEPS SGD steps (labels i % 10)."""
    labels = torch.arange(x.shape[0]) % 10
    opt = torch.optim.SGD(model.parameters(), lr=LR)
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


def write(name, model, example, outdir):
    model.eval()
    path = os.path.join(outdir, name + ".onnx")
    torch.onnx.export(model, example, path, dynamo=False, opset_version=OPSET,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}})
    loaded = onnx.load(path)
    onnx.checker.check_model(loaded)
    with torch.no_grad():
        out = model(example)
    losses = fine_tune(model, example)
    for suffix, t in (("input", example), ("output", out), ("losses", losses)):
        proto = onnx.numpy_helper.from_array(t.numpy(), name=suffix)
        with open(os.path.join(outdir, f"{name}_{suffix}.pb"), "wb") as f:
            f.write(proto.SerializeToString())
    ops = sorted({n.op_type for n in loaded.graph.node})
    print(f"{name}: {os.path.getsize(path)} bytes, ir {loaded.ir_version}, ops {ops}, losses {losses.tolist()}")


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    print("torch", torch.__version__, "onnx", onnx.__version__)
    torch.manual_seed(46)
    write("pytorch_mlp", mlp(), torch.rand(ROWS, 1, 28, 28), outdir)
    torch.manual_seed(47)
    write("pytorch_lenet5", lenet5(), torch.rand(ROWS, 1, 28, 28), outdir)


if __name__ == "__main__":
    main()
