#!/usr/bin/env python3
"""LeNet-5 in TensorFlow, the same layout and defaults as pytorch_lenet5.py
and magmadnn's lenet5 preset: conv 5x5 6 "same" -> relu -> maxpool 2 ->
conv 5x5 16 (valid) -> relu -> maxpool 2 -> fc 120 -> relu -> fc 84 -> relu
-> fc 10; SGD lr 0.05 momentum 0.9, batch 64, cosine-annealed per step over
the run, 1 epoch.

Prints one JSON record on stdout. Usage: tensorflow_lenet5.py --threads 2
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fashion_mnist  # noqa: E402


def main():
    args = fashion_mnist.peer_args(__doc__,
                                   epochs=1, lr=0.05, momentum=0.9, weight_decay=0.0, batch_size=64,
                                   layers=0, schedule="cosine")
    import tf_common

    tf = tf_common.setup_threads(args.threads)
    import keras

    keras.utils.set_random_seed(args.seed)
    L = keras.layers
    model = keras.Sequential([
        keras.Input((28, 28, 1)),
        L.Conv2D(6, 5, padding="same", activation="relu"), L.MaxPooling2D(2),
        L.Conv2D(16, 5, activation="relu"), L.MaxPooling2D(2),
        L.Flatten(),
        L.Dense(120, activation="relu"), L.Dense(84, activation="relu"), L.Dense(10)])
    tf_common.train_and_report(tf, model, args, "lenet5", flatten=False)


if __name__ == "__main__":
    main()
