# Hands a trained magmadnn network's weights to PyTorch through DLPack (no copies) and checks that
# both predict the same. Needs torch (pip install torch); says so and exits 0 without it.
# Usage: python3 to_pytorch.py [training samples]
import sys

import numpy as np

import magmadnn
from magmadnn import layer

try:
    import torch
except ImportError:
    print("to_pytorch.py: torch is not installed; nothing to compare")
    sys.exit(0)

n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
x, y = magmadnn.load_fashion_mnist("train")
inp = layer.input((-1, 1, 28, 28)); flat = layer.flatten(inp); fc1 = layer.fullyconnected(flat, 528)
act = layer.activation(fc1, "sigmoid"); fc2 = layer.fullyconnected(act, 10); out = layer.activation(fc2, "softmax")
net = magmadnn.NeuralNetwork([inp, flat, fc1, act, fc2, out], "cross_entropy", "sgd", magmadnn.Params(100, 1, 0.05))
net.fit(x[:n], y[:n])

# The parameters in layer order (W {out, in}, b {out} per dense layer), shared with torch without a copy.
w1, b1, w2, b2 = (torch.from_dlpack(p) for p in net.parameters)
model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 528), torch.nn.Sigmoid(),
                            torch.nn.Linear(528, 10), torch.nn.Softmax(dim=1))
with torch.no_grad():
    model[1].weight.set_(w1); model[1].bias.set_(b1); model[3].weight.set_(w2); model[3].bias.set_(b2)
    theirs = model(torch.from_numpy(x[:1000])).numpy()
ours = net.predict(x[:1000])
print(f"largest difference {np.abs(ours - theirs).max():.2e}; same classes: {(ours.argmax(1) == theirs.argmax(1)).mean():.4f}")
assert np.allclose(ours, theirs, atol=1e-5)
