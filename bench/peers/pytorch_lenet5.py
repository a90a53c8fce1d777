#!/usr/bin/env python3
"""LeNet-5 in PyTorch on 28x28 Fashion-MNIST, the layout and optimizer of
magmadnn's lenet5 preset: conv 5x5 6 with padding 2 (28 -> 28) -> relu ->
maxpool 2 -> conv 5x5 16 (14 -> 10) -> relu -> maxpool 2 -> 400 -> fc 120 ->
relu -> fc 84 -> relu -> fc 10, softmax cross-entropy; SGD lr 0.05 momentum
0.9, no weight decay, batch 64, cosine-annealed per step over the run; 1 epoch
by default (a timing run).

Prints one JSON record on stdout. Usage: pytorch_lenet5.py --threads 1
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fashion_mnist  # noqa: E402


def main():
    args = fashion_mnist.peer_args(__doc__,
                                   epochs=1, lr=0.05, momentum=0.9, weight_decay=0.0, batch_size=64,
                                   layers=0, schedule="cosine")
    import torch
    import torch_common

    torch_common.setup_threads(args.threads)
    torch.manual_seed(args.seed)
    nn = torch.nn
    model = nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * 5 * 5, 120), nn.ReLU(),
        nn.Linear(120, 84), nn.ReLU(),
        nn.Linear(84, 10))
    torch_common.glorot_(model)
    torch_common.train_and_report(model, args, "lenet5", flatten=False)


if __name__ == "__main__":
    main()
