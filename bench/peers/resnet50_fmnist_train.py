#!/usr/bin/env python3
"""The resnet50 preset adapted to 28x28 Fashion-MNIST trained in PyTorch on the images and initial weights
that `bench_real_size_fmnist --dump DIR` wrote, at the preset's rates (0.1 per 256 scaled to the batch, linear
warm-up over a quarter epoch, cosine), to compare loss curves with magmadnn's.
Options: --init magmadnn|torchvision, --zir 1 (zero-init the bn3 scales), --stem imagenet|cifar, --lr, --wd,
--epochs, --batch, --warmup. Usage: resnet50_fmnist_train.py DIR [options]
"""
import argparse, math, sys, numpy as np, torch, torch.nn as nn, torch.nn.functional as F
ap = argparse.ArgumentParser()
ap.add_argument("dump"); ap.add_argument("--init", default="magmadnn"); ap.add_argument("--zir", type=int, default=0)
ap.add_argument("--stem", default="imagenet"); ap.add_argument("--lr", type=float, default=0.1)
ap.add_argument("--wd", type=float, default=1e-4); ap.add_argument("--epochs", type=int, default=2)
ap.add_argument("--batch", type=int, default=32); ap.add_argument("--warmup", type=float, default=0.25)
ap.add_argument("--seed", type=int, default=0); ap.add_argument("--fcinit", default="same")
a = ap.parse_args()
torch.set_num_threads(2); torch.manual_seed(a.seed)
d = a.dump
def load(tag):
    names, shapes = [], []
    for line in open(f"{d}/{tag}.txt"):
        p = line.split(); names.append(p[0]); shapes.append(tuple(int(s) for s in p[1:]))
    flat = np.fromfile(f"{d}/{tag}.bin", dtype=np.float32); out, o = [], 0
    for s in shapes:
        n = int(np.prod(s)); out.append(flat[o:o+n].reshape(s)); o += n
    return names, out
names, before = load("before")
X = torch.from_numpy(np.fromfile(f"{d}/x.bin", dtype=np.float32).reshape(-1, 1, 28, 28).copy())
Y = torch.tensor([int(l) for l in open(f"{d}/labels.txt")])
class Net(nn.Module):
    def __init__(s):
        super().__init__(); s.ps = nn.ParameterList(); s.bns = nn.ModuleList(); s.shapes = []
    def p(s, shape):
        t = nn.Parameter(torch.empty(shape)); s.ps.append(t); return t
net = Net()
convs, bns = [], []
def conv(cin, cout, k, stride=1, pad=0):
    w = net.p((cout, cin, k, k)); convs.append((w, stride, pad)); return len(convs) - 1
def bn(c):
    g = net.p((c,)); b = net.p((c,)); m = nn.BatchNorm2d(c, affine=False); net.bns.append(m); bns.append((g, b, m)); return len(bns) - 1
cifar = a.stem == "cifar"
stem = (conv(1, 64, 3, 1, 1) if cifar else conv(1, 64, 7, 2, 3), bn(64))
blocks = []; cin = 64
for stage, (w, n) in enumerate(zip([64, 128, 256, 512], [3, 4, 6, 3])):
    for b in range(n):
        s = 2 if b == 0 and stage > 0 else 1
        blk = [conv(cin, w, 1), bn(w), conv(w, w, 3, s, 1), bn(w), conv(w, 4 * w, 1), bn(4 * w)]
        blk += [conv(cin, 4 * w, 1, s), bn(4 * w)] if b == 0 else []
        blocks.append(blk); cin = 4 * w
fcW = net.p((10, 2048)); fcb = net.p((10,))
if a.init == "magmadnn" and not cifar:
    for p, v in zip(net.ps, before): p.data.copy_(torch.from_numpy(v))
else:  # torchvision's ResNet init
    for w, _, _ in convs: nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    for g, b, _ in bns: nn.init.ones_(g); nn.init.zeros_(b)
    if a.fcinit == "same": nn.init.kaiming_uniform_(fcW, a=math.sqrt(5)); nn.init.uniform_(fcb, -1 / math.sqrt(2048), 1 / math.sqrt(2048))
    else: fcW.data.copy_(torch.from_numpy(before[-2])); fcb.data.copy_(torch.from_numpy(before[-1]))
if a.zir:
    for blk in blocks: nn.init.zeros_(bns[blk[5]][0])
def C(i, h): w, s, p = convs[i]; return F.conv2d(h, w, stride=s, padding=p)
def B(i, h): g, b, m = bns[i]; return F.batch_norm(h, m.running_mean, m.running_var, g, b, training=net.training, momentum=0.1, eps=1e-5)
def forward(h):
    h = F.relu(B(stem[1], C(stem[0], h)))
    if not cifar: h = F.max_pool2d(h, 3, 2, 1)
    for blk in blocks:
        o = F.relu(B(blk[1], C(blk[0], h))); o = F.relu(B(blk[3], C(blk[2], o))); o = B(blk[5], C(blk[4], o))
        sc = B(blk[7], C(blk[6], h)) if len(blk) > 6 else h
        h = F.relu(o + sc)
    return F.linear(F.adaptive_avg_pool2d(h, 1).flatten(1), fcW, fcb)
steps_per_epoch = math.ceil(len(X) / a.batch); total = steps_per_epoch * a.epochs
target = a.lr * a.batch / 256; W = round(a.warmup * steps_per_epoch)
def lr_at(s):
    if s < W: return target * (s + 1) / W
    return 0.5 * target * (1 + math.cos(math.pi * (s - W) / max(1, total - W)))
opt = torch.optim.SGD(net.parameters(), lr=target, momentum=0.9, weight_decay=a.wd)
step = 0; losses = []
for e in range(a.epochs):
    net.train(); perm = torch.randperm(len(X)); tot = 0
    for i in range(0, len(X), a.batch):
        idx = perm[i:i + a.batch]
        for gp in opt.param_groups: gp["lr"] = lr_at(step)
        loss = F.cross_entropy(forward(X[idx]), Y[idx]); opt.zero_grad(); loss.backward(); opt.step()
        losses.append(loss.item()); tot += loss.item() * len(idx); step += 1
    print("epoch %d train loss %.4f" % (e + 1, tot / len(X)))
print("step losses", " ".join("%.2f" % l for l in losses))
