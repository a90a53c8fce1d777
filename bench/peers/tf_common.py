"""The TensorFlow training loop shared by tensorflow_mlp.py and
tensorflow_lenet5.py.

A whole epoch is one tf.function (the batch loop is a graph while-loop), the
fastest way we found to drive TF on the CPU: no Python work per batch. The
first epoch's trace is inside the timed span, as magmadnn's first-step
primitive creation is inside its train_seconds. The update is plain SGD with
L2 weight decay added to the gradient (w -= lr * (g + wd * w)) and optional
heavy-ball momentum, the same rule as torch.optim.SGD.
"""
import json
import os
import resource
import sys
import time


def setup_threads(threads):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    return tf


def train_and_report(tf, model, args, model_name, flatten):
    import numpy as np
    import fashion_mnist

    x, _, y = fashion_mnist.load("train", args.data_dir, flatten=flatten)
    xt, _, yt = fashion_mnist.load("t10k", args.data_dir, flatten=flatten)
    if not flatten:  # TF convolutions want NHWC
        x, xt = x.transpose(0, 2, 3, 1).copy(), xt.transpose(0, 2, 3, 1).copy()
    n, bs = x.shape[0], args.batch_size
    x_tf, y_tf = tf.constant(x), tf.constant(y)

    variables = model.trainable_variables
    velocity = [tf.Variable(tf.zeros_like(v)) for v in variables]
    lr, wd, mom = args.lr, args.weight_decay, args.momentum
    n_batches = (n + bs - 1) // bs
    cosine = getattr(args, "schedule", "constant") == "cosine"
    total = float(args.epochs * n_batches)
    gstep = tf.Variable(0.0)

    def rate():
        if not cosine:
            return lr
        import math
        return lr * 0.5 * (1.0 + tf.cos(math.pi * tf.minimum(gstep, total) / total))

    def step(xb, yb):
        with tf.GradientTape() as tape:
            logits = model(xb, training=True)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(yb, logits))
        grads = tape.gradient(loss, variables)
        lr_now = rate()
        gstep.assign_add(1.0)
        for v, g, buf in zip(variables, grads, velocity):
            if wd:
                g = g + wd * v
            if mom:
                buf.assign(mom * buf + g)
                g = buf
            v.assign_sub(lr_now * g)
        return loss

    @tf.function
    def epoch(xs, ys):
        loss = tf.constant(0.0)
        for b in tf.range(n_batches):
            lo = b * bs
            loss = step(xs[lo:lo + bs], ys[lo:lo + bs])
        return loss

    rng = np.random.default_rng(args.seed)
    loss = float("nan")
    start = time.perf_counter()
    for _ in range(args.epochs):
        if args.shuffle:
            perm = tf.constant(rng.permutation(n))
            xs, ys = tf.gather(x_tf, perm), tf.gather(y_tf, perm)
        else:
            xs, ys = x_tf, y_tf
        loss = epoch(xs, ys)
    loss = float(loss.numpy())  # waits for the last step
    seconds = time.perf_counter() - start

    logits = model(tf.constant(xt), training=False)
    accuracy = float(np.mean(np.argmax(logits.numpy(), axis=1) == yt))
    record = {
        "framework": "tensorflow", "model": model_name, "layers": getattr(args, "layers", 0),
        "threads": args.threads, "seconds": seconds, "test_accuracy": accuracy,
        "final_train_loss": loss, "epochs": args.epochs,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "batch_size": bs,
        "version": tf.__version__, "python": sys.executable,
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
    }
    print(json.dumps(record), flush=True)
    return record
