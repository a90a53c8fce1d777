#!/usr/bin/env python3
"""The small residual network of magmadnn's resnet preset in PyTorch, on
28x28 Fashion-MNIST: conv 3x3 16 (no bias) -> batch norm -> relu, then one
basic block per stage (16, 32 stride 2, 64 stride 2 channels; each block
conv 3x3 -> BN -> relu -> conv 3x3 -> BN, plus the input or, when the shape
changes, a 1x1 convolution with BN, then relu), global average pooling, fc
10, softmax cross-entropy; SGD lr 0.1 momentum 0.9, batch 128, cosine-
annealed per step over the run; 1 epoch by default (a timing run). He
(fan-in) initialisation of the convolutions, as magmadnn's.

Prints one JSON record on stdout. Usage: pytorch_resnet.py --threads 1
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fashion_mnist  # noqa: E402


def main():
    args = fashion_mnist.peer_args(__doc__,
                                   epochs=1, lr=0.1, momentum=0.9, weight_decay=0.0, batch_size=128,
                                   layers=0, schedule="cosine")
    import torch
    import torch_common

    torch_common.setup_threads(args.threads)
    torch.manual_seed(args.seed)
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.body = nn.Sequential(
                nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout))
            self.short = (nn.Identity() if cin == cout and stride == 1 else
                          nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)))

        def forward(self, x):
            return torch.relu(self.body(x) + self.short(x))

    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
        Block(16, 16, 1), Block(16, 32, 2), Block(32, 64, 2),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
    torch_common.train_and_report(model, args, "resnet", flatten=False)


if __name__ == "__main__":
    main()
