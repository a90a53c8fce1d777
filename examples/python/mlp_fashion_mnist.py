# The MagmaDNN paper's MLP (784 -> 528 sigmoid -> 10 softmax, SGD, 5 epochs) on Fashion-MNIST, from Python.
# Usage: python3 mlp_fashion_mnist.py [training samples]   (PYTHONPATH=build/python in a build tree)
import sys, magmadnn
from magmadnn import layer
x, y = magmadnn.load_fashion_mnist("train"); n = int(sys.argv[1]) if len(sys.argv) > 1 else len(x)
inp = layer.input((-1, 1, 28, 28)); flat = layer.flatten(inp); fc1 = layer.fullyconnected(flat, 528)
act = layer.activation(fc1, "sigmoid"); fc2 = layer.fullyconnected(act, 10); out = layer.activation(fc2, "softmax")
net = magmadnn.NeuralNetwork([inp, flat, fc1, act, fc2, out], "cross_entropy", "sgd", magmadnn.Params(100, 5, 0.05))
net.fit(x[:n], y[:n], callbacks=[lambda r: print(f"epoch {r['epoch']}: loss {r['loss']:.4f} acc {r['accuracy']:.4f}")])
xt, yt = magmadnn.load_fashion_mnist("test")
print(f"test accuracy {net.evaluate(xt, yt)['accuracy']:.4f}")
