#!/usr/bin/env python3
"""The small residual network of magmadnn's resnet preset in TensorFlow
(Keras functional API), the same layout and defaults as pytorch_resnet.py:
a 3x3 stem with batch norm, one basic block per stage (16, 32 stride 2, 64
stride 2), global average pooling, fc 10; SGD lr 0.1 momentum 0.9, batch
128, cosine-annealed per step, 1 epoch. Batch norm with PyTorch's and
magmadnn's running-average weight (Keras momentum 0.9) and epsilon 1e-5.

Prints one JSON record on stdout. Usage: tensorflow_resnet.py --threads 2
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fashion_mnist  # noqa: E402


def main():
    args = fashion_mnist.peer_args(__doc__,
                                   epochs=1, lr=0.1, momentum=0.9, weight_decay=0.0, batch_size=128,
                                   layers=0, schedule="cosine")
    import tf_common

    tf = tf_common.setup_threads(args.threads)
    import keras

    keras.utils.set_random_seed(args.seed)
    L = keras.layers

    def bn(x):
        return L.BatchNormalization(momentum=0.9, epsilon=1e-5)(x)

    def conv(x, c, k, s):
        return L.Conv2D(c, k, strides=s, padding="same", use_bias=False, kernel_initializer="he_normal")(x)

    def block(x, c, s):
        y = L.ReLU()(bn(conv(x, c, 3, s)))
        y = bn(conv(y, c, 3, 1))
        short = x if (x.shape[-1] == c and s == 1) else bn(conv(x, c, 1, s))
        return L.ReLU()(L.Add()([y, short]))

    inp = keras.Input((28, 28, 1))
    x = L.ReLU()(bn(conv(inp, 16, 3, 1)))
    x = block(x, 16, 1)
    x = block(x, 32, 2)
    x = block(x, 64, 2)
    x = L.GlobalAveragePooling2D()(x)
    model = keras.Model(inp, L.Dense(10)(x))
    tf_common.train_and_report(tf, model, args, "resnet", flatten=False)


if __name__ == "__main__":
    main()
