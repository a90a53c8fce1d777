#!/usr/bin/env python3
"""The paper's MLP trained data-parallel with PyTorch's DistributedDataParallel
on the gloo backend: the peer a PyTorch user would pick for CPU ranks.

Same workload as pytorch_mlp.py (784 -> N x 528 sigmoid -> 10, softmax
cross-entropy, SGD lr 0.05, weight decay 0.001, 5 epochs of Fashion-MNIST),
with --batch-size the GLOBAL batch: every step, each of the --ranks processes
takes its contiguous slice of the global batch (the seeded per-epoch order),
exactly as magmadnn's distributed sampler does, and DDP averages gradients.

The ranks are processes on this machine (torch.multiprocessing, one thread
each by default) meeting over a TCP store on 127.0.0.1. The timed span is
rank 0's, from a barrier before the first batch to the end of the last
optimizer step; test accuracy is rank 0's model after training.

Prints one JSON record on stdout. Usage:
  pytorch_ddp_mlp.py --ranks 2 --threads 1 --layers 4
"""
import argparse
import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fashion_mnist  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank, args, port, queue):
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import torch
    import torch.distributed as dist
    import torch_common

    torch_common.setup_threads(args.threads)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=args.ranks)
    torch.manual_seed(args.seed)  # the same initial weights on every rank; DDP also broadcasts rank 0's
    layers, fan_in = [], 784
    for _ in range(args.layers):
        layers += [torch.nn.Linear(fan_in, args.hidden), torch.nn.Sigmoid()]
        fan_in = args.hidden
    layers.append(torch.nn.Linear(fan_in, 10))
    model = torch.nn.Sequential(*layers)
    torch_common.glorot_(model)
    ddp = torch.nn.parallel.DistributedDataParallel(model)

    x, _, y = fashion_mnist.load("train", args.data_dir, flatten=True)
    xt, _, yt = fashion_mnist.load("t10k", args.data_dir, flatten=True)
    x, y = torch.from_numpy(x), torch.from_numpy(y)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    loss_fn = torch.nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(args.seed)
    n, gb = x.shape[0], args.batch_size

    dist.barrier()
    start = time.perf_counter()
    last_loss = float("nan")
    for _ in range(args.epochs):
        perm = torch.randperm(n, generator=gen)
        for i in range(0, n, gb):
            idx = perm[i:i + gb]
            # Rank r's contiguous slice of the global batch (sizes differ by at most one).
            lo = len(idx) * rank // args.ranks
            hi = len(idx) * (rank + 1) // args.ranks
            xb, yb = x[idx[lo:hi]], y[idx[lo:hi]]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(ddp(xb), yb)
            loss.backward()
            opt.step()
        last_loss = loss.item()
    seconds = time.perf_counter() - start

    if rank == 0:
        model.eval()
        xt_t, yt_t = torch.from_numpy(xt), torch.from_numpy(yt)
        with torch.no_grad():
            correct = sum((model(xt_t[i:i + 1000]).argmax(1) == yt_t[i:i + 1000]).sum().item()
                          for i in range(0, xt_t.shape[0], 1000))
        queue.put({
            "framework": "pytorch-ddp", "backend": "gloo", "model": "mlp", "layers": args.layers,
            "ranks": args.ranks, "threads_per_rank": args.threads, "seconds": seconds,
            "test_accuracy": correct / xt_t.shape[0], "final_train_loss": last_loss,
            "epochs": args.epochs, "global_batch": gb, "version": torch.__version__,
        })
    dist.destroy_process_group()


def main():
    p = fashion_mnist.common_args(argparse.ArgumentParser(description=__doc__))
    p.add_argument("--ranks", type=int, default=2)
    p.set_defaults(threads=1)
    args = p.parse_args()
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    port = free_port()
    procs = [ctx.Process(target=worker, args=(r, args, port, queue)) for r in range(args.ranks)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()
    bad = [r for r, proc in enumerate(procs) if proc.exitcode != 0]
    if bad:
        raise SystemExit(f"pytorch_ddp_mlp: ranks {bad} failed")
    print(json.dumps(queue.get()), flush=True)


if __name__ == "__main__":
    main()
