#!/usr/bin/env python3
"""Checks magmadnn's gradients of the resnet50 preset adapted to 28x28 Fashion-MNIST against PyTorch.

Input: a folder written by `bench_real_size_fmnist --preset resnet50 --train 32 --epochs 1 --schedule none
--lr 1 --momentum 0 --wd 0 --dump DIR` (one batch of 32, one step of plain SGD at lr 1, so the weights before
minus after are the gradient). Rebuilds the same graph with torch.nn.functional in float64 from the same
weights and images, prints the loss and, per weight, the relative error of magmadnn's gradient against
PyTorch's float64 one, then PyTorch's own float32 error against float64 (the rounding's share).
Usage: resnet50_fmnist_gradcheck.py DIR   (PyTorch and NumPy: Debian's python3-torch works)
"""
import sys, numpy as np, torch, torch.nn.functional as F
torch.set_num_threads(2)
d = sys.argv[1]
def load(tag):
    names, shapes = [], []
    for line in open(f"{d}/{tag}.txt"):
        p = line.split(); names.append(p[0]); shapes.append(tuple(int(s) for s in p[1:]))
    flat = np.fromfile(f"{d}/{tag}.bin", dtype=np.float32)
    out, o = [], 0
    for s in shapes:
        n = int(np.prod(s)); out.append(flat[o:o+n].reshape(s)); o += n
    assert o == flat.size
    return names, out
names, before = load("before"); _, after = load("after")
x = torch.from_numpy(np.fromfile(f"{d}/x.bin", dtype=np.float32).reshape(-1, 1, 28, 28).copy()).double()
y = torch.tensor([int(l) for l in open(f"{d}/labels.txt")])
P = [torch.tensor(b, dtype=torch.float64, requires_grad=True) for b in before]
it = iter(range(len(P)))
def nxt(): return P[next(it)]
def bn(h):
    g, b = nxt(), nxt()
    return F.batch_norm(h, None, None, g, b, training=True, eps=1e-5)
def forward(x, wide=True):
    h = F.conv2d(x, nxt(), stride=2, padding=3); h = F.relu(bn(h)); h = F.max_pool2d(h, 3, 2, 1)
    for stage, (w, n) in enumerate(zip([64, 128, 256, 512], [3, 4, 6, 3])):
        for b in range(n):
            s = 2 if b == 0 and stage > 0 else 1
            o = F.relu(bn(F.conv2d(h, nxt())))
            o = F.relu(bn(F.conv2d(o, nxt(), stride=s, padding=1)))
            o = bn(F.conv2d(o, nxt()))
            sc = bn(F.conv2d(h, nxt(), stride=s)) if b == 0 else h
            h = F.relu(o + sc)
    h = F.adaptive_avg_pool2d(h, 1).flatten(1)
    return F.linear(h, nxt(), nxt())
logits = forward(x)
loss = F.cross_entropy(logits, y)
loss.backward()
print("torch loss %.6f (magmadnn's step-0 loss is in its log)" % loss.item())
worst = []
for n, p, b, a in zip(names, P, before, after):
    gm = (b.astype(np.float64) - a.astype(np.float64)); gt = p.grad.numpy()
    rel = np.linalg.norm(gm - gt) / max(np.linalg.norm(gt), 1e-30)
    worst.append((rel, n, np.linalg.norm(gt), np.linalg.norm(gm)))
for r, n, nt, nm in worst:
    print("%-32s rel err %.3e  |g_torch| %.4e  |g_magmadnn| %.4e" % (n, r, nt, nm))
# PyTorch itself in float32 against float64: the rounding's own share of the differences.
P64 = [p.grad.numpy().copy() for p in P]
P = [torch.tensor(b, dtype=torch.float32, requires_grad=True) for b in before]
it = iter(range(len(P)))
loss32 = F.cross_entropy(forward(x.float()), y); loss32.backward()
print("float32 torch loss %.6f" % loss32.item())
for n, p, g64, (rel, *_ ) in zip(names, P, P64, worst):
    r32 = np.linalg.norm(p.grad.numpy() - g64) / max(np.linalg.norm(g64), 1e-30)
    print("f32 %-32s torch-f32 rel err %.3e   magmadnn rel err %.3e" % (n, r32, rel))
