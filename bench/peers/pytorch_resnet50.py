#!/usr/bin/env python3
"""ResNet-50 training steps in PyTorch on synthetic ImageNet-shaped data: the
peer of bench_resnet50_step (issue 41's throughput comparison).

torchvision's resnet50 (v1.5: the stride on the 3x3 of each bottleneck,
25,557,032 parameters at 1,000 classes), randomly initialised; seeded random
3 x 224 x 224 images and labels made once before the clock starts (a
throughput measure, not of learning); softmax cross-entropy; SGD lr 0.1,
momentum 0.9, weight decay 1e-4. --warmup steps are run untimed, then each
of --steps steps is timed (forward, backward, optimizer step) alone.

--layout channels_last converts the model and the images to NHWC, as a user
who wants PyTorch's fastest CPU path does; --precision bf16 runs forward and
loss under torch.autocast("cpu", dtype=torch.bfloat16).

Prints one JSON record on stdout: per-step wall and process CPU seconds
(all threads), the median step's images/s, and the peak resident memory.

Usage: pytorch_resnet50.py --threads 2 --batch 32 --layout channels_last --precision fp32
"""
import argparse
import json
import resource
import statistics
import sys
import time


def parse():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--classes", type=int, default=1000)
    p.add_argument("--layout", choices=["nchw", "channels_last"], default="channels_last")
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--seed", type=int, default=1)
    return p.parse_args()


def main():
    args = parse()
    import torch
    import torchvision

    torch.set_num_threads(args.threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    torch.manual_seed(args.seed)
    model = torchvision.models.resnet50(weights=None, num_classes=args.classes)
    x = torch.randn(args.batch, 3, 224, 224)
    y = torch.randint(0, args.classes, (args.batch,))
    if args.layout == "channels_last":
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    loss_fn = torch.nn.CrossEntropyLoss()
    model.train()

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.precision == "bf16"):
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach().item()

    for _ in range(args.warmup):
        step()
    seconds, cpu = [], []
    for _ in range(args.steps):
        t, c = time.perf_counter(), time.process_time()
        loss = step()
        seconds.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    median = statistics.median(seconds)
    record = {
        "framework": "pytorch", "version": torch.__version__, "network": "resnet50",
        "parameters": sum(p.numel() for p in model.parameters()),
        "threads": args.threads, "batch": args.batch, "layout": args.layout, "precision": args.precision,
        "step_seconds": seconds, "step_cpu_seconds": cpu, "median_step_seconds": median, "images_per_second": args.batch / median,
        "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1024.0 * 1024.0),
        "last_loss": loss,
    }
    json.dump(record, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
