#!/usr/bin/env python3
"""The paper's MLP in PyTorch: 784 -> N x 528 sigmoid -> 10, softmax
cross-entropy, SGD (lr 0.05, weight decay 0.001, L2 added to the gradient of
every parameter), batch 100, 5 epochs, Fashion-MNIST.

Prints one JSON record (framework, model, layers, threads, seconds,
test_accuracy, ...) on stdout. Usage: pytorch_mlp.py --layers 2 --threads 1
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fashion_mnist  # noqa: E402


def main():
    args = fashion_mnist.peer_args(__doc__)
    import torch
    import torch_common

    torch_common.setup_threads(args.threads)
    torch.manual_seed(args.seed)
    layers, fan_in = [], 784
    for _ in range(args.layers):
        layers += [torch.nn.Linear(fan_in, args.hidden), torch.nn.Sigmoid()]
        fan_in = args.hidden
    layers.append(torch.nn.Linear(fan_in, 10))
    model = torch.nn.Sequential(*layers)
    torch_common.glorot_(model)
    torch_common.train_and_report(model, args, "mlp", flatten=True)


if __name__ == "__main__":
    main()
