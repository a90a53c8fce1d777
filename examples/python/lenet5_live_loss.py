# LeNet-5 on Fashion-MNIST with a Python callback that follows the loss batch by batch: a live
# matplotlib plot when matplotlib and a display are there, otherwise a line every 100 batches.
# Usage: python3 lenet5_live_loss.py [training samples] [epochs]
import sys

import magmadnn
from magmadnn import layer

n = int(sys.argv[1]) if len(sys.argv) > 1 else 60000
epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
x, y = magmadnn.load_fashion_mnist("train")
xt, yt = magmadnn.load_fashion_mnist("test")

inp = layer.input((-1, 1, 28, 28))
c1 = layer.conv2d(inp, (5, 5), 6, padding=(2, 2), use_bias=True); a1 = layer.activation(c1, "relu")
p1 = layer.pooling(a1, (2, 2), strides=(2, 2))
c2 = layer.conv2d(p1, (5, 5), 16, use_bias=True); a2 = layer.activation(c2, "relu")
p2 = layer.pooling(a2, (2, 2), strides=(2, 2))
f = layer.flatten(p2)
d1 = layer.fullyconnected(f, 120); r1 = layer.activation(d1, "relu")
d2 = layer.fullyconnected(r1, 84); r2 = layer.activation(d2, "relu")
d3 = layer.fullyconnected(r2, 10); out = layer.activation(d3, "softmax")
layers = [inp, c1, a1, p1, c2, a2, p2, f, d1, r1, d2, r2, d3, out]
net = magmadnn.NeuralNetwork(layers, "cross_entropy", "sgd", magmadnn.Params(64, epochs, 0.05))


class LiveLoss(magmadnn.Callback):
    def __init__(self):
        self.losses = []
        try:
            import os
            import matplotlib.pyplot as plt
            if not os.environ.get("DISPLAY"):
                raise ImportError("no display")
            plt.ion()
            self.plt, (self.fig, self.ax) = plt, plt.subplots()
        except ImportError:
            self.plt = None

    def on_batch_end(self, logs):
        self.losses.append(logs["loss"])
        if self.plt and len(self.losses) % 20 == 0:
            self.ax.clear(); self.ax.plot(self.losses); self.ax.set_xlabel("batch"); self.ax.set_ylabel("loss")
            self.plt.pause(0.001)
        elif not self.plt and logs["batch"] % 100 == 0:
            print(f"epoch {logs['epoch']} batch {logs['batch']}/{logs['batches']}: loss {logs['loss']:.4f}")

    def on_epoch_end(self, record):
        print(f"epoch {record['epoch']}: loss {record['loss']:.4f}, accuracy {record['accuracy']:.4f}")


net.fit(x[:n], y[:n], callbacks=[LiveLoss()])
print(f"test accuracy {net.evaluate(xt, yt)['accuracy']:.4f}")
