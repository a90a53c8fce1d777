"""The PyTorch training loop shared by pytorch_mlp.py and pytorch_lenet5.py.

The timed span matches magmadnn's train_seconds: from the first batch of the
first epoch to the end of the last optimizer step. Data is already a torch
tensor in memory; test evaluation runs after the timer stops.
"""
import json
import os
import resource
import sys
import time

import torch

import fashion_mnist


def setup_threads(threads):
    # OMP_NUM_THREADS is also set by the harness before the interpreter starts;
    # set_num_threads covers a direct invocation.
    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass  # already fixed by an earlier parallel call; harmless here


def train_and_report(model, args, model_name, flatten):
    x, _, y = fashion_mnist.load("train", args.data_dir, flatten=flatten)
    xt, _, yt = fashion_mnist.load("t10k", args.data_dir, flatten=flatten)
    device = torch.device(getattr(args, "device", "cpu"))
    # On a GPU the whole data set lives on the device, as a user who wants
    # speed keeps it (60,000 float images are 188 MB); batches are gathered there.
    x, y = torch.from_numpy(x).to(device), torch.from_numpy(y).to(device)
    xt, yt = torch.from_numpy(xt).to(device), torch.from_numpy(yt).to(device)
    model = model.to(device)
    step_model = torch.compile(model) if getattr(args, "compile", False) else model

    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum,
                          weight_decay=args.weight_decay)
    loss_fn = torch.nn.CrossEntropyLoss()  # mean softmax cross-entropy over the batch
    gen = torch.Generator().manual_seed(args.seed)
    n, bs = x.shape[0], args.batch_size
    total = args.epochs * fashion_mnist.batches_per_epoch(n, bs)
    sched = None
    if getattr(args, "schedule", "constant") == "cosine":
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: fashion_mnist.cosine_factor(s, total))

    model.train()
    last_loss = float("nan")
    start = time.perf_counter()
    for _ in range(args.epochs):
        perm = torch.randperm(n, generator=gen).to(device) if args.shuffle else None
        for i in range(0, n, bs):
            if perm is None:
                xb, yb = x[i:i + bs], y[i:i + bs]
            else:
                idx = perm[i:i + bs]
                xb, yb = x[idx], y[idx]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(step_model(xb), yb)
            loss.backward()
            opt.step()
            if sched is not None:
                sched.step()
        last_loss = loss.item()  # also waits for the GPU's queue to drain
    seconds = time.perf_counter() - start

    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, xt.shape[0], 1000):
            correct += (model(xt[i:i + 1000]).argmax(1) == yt[i:i + 1000]).sum().item()
    record = {
        "framework": "pytorch", "model": model_name, "layers": getattr(args, "layers", 0),
        "threads": torch.get_num_threads(), "seconds": seconds,
        "test_accuracy": correct / xt.shape[0], "final_train_loss": last_loss,
        "epochs": args.epochs,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "batch_size": bs, "version": torch.__version__, "device": str(device),
        "compiled": bool(getattr(args, "compile", False)),
        "python": sys.executable, "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
    }
    print(json.dumps(record), flush=True)
    return record


def glorot_(model):
    """Glorot-uniform weights and zero biases, magmadnn's default initialisers."""
    for m in model.modules():
        if isinstance(m, (torch.nn.Linear, torch.nn.Conv2d)):
            torch.nn.init.xavier_uniform_(m.weight)
            torch.nn.init.zeros_(m.bias)
