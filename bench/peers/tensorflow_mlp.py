#!/usr/bin/env python3
"""The paper's MLP in TensorFlow (Keras layers, custom loop): 784 -> N x 528
sigmoid -> 10, softmax cross-entropy, SGD lr 0.05 with L2 weight decay 0.001
on every parameter, batch 100, 5 epochs, Fashion-MNIST.

Prints one JSON record on stdout. Usage: tensorflow_mlp.py --layers 2 --threads 2
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fashion_mnist  # noqa: E402


def main():
    args = fashion_mnist.peer_args(__doc__)
    import tf_common

    tf = tf_common.setup_threads(args.threads)
    import keras

    keras.utils.set_random_seed(args.seed)
    model = keras.Sequential([keras.Input((784,))] + [
        keras.layers.Dense(args.hidden, activation="sigmoid") for _ in range(args.layers)] + [
        keras.layers.Dense(10)])  # Dense defaults: Glorot-uniform weights, zero bias
    tf_common.train_and_report(tf, model, args, "mlp", flatten=True)


if __name__ == "__main__":
    main()
