#!/usr/bin/env python3
"""A performance model of data-parallel training across hosts (issue 45,
point 5), fitted to bench/netns_scaling's measurements.

Allreduce of S bytes among H hosts joined by links of B bytes/s (one rank per
host; its part of the traffic leaves through its one link):

    T(S, H, B) = alpha_H + k_H * L(S, H, B),   L = 2 (H - 1) / H * S / B

L is the link time, the least time any allreduce needs; k_H (>= 1) is how
many link times the algorithm takes, alpha_H its fixed cost (latency and
start-up). Both are fitted per host count by least squares of the relative
error over every rate and size measured, and each point's error is reported.

Beyond the measured host counts, with G ranks per host joined by links of
B_intra: "flat" is one ring over all ranks (the slower link sets its pace,
2 (N - 1) latencies); "hierarchical" reduces and broadcasts inside each host
(2 S / B_intra) around a ring among the N / G hosts' leaders.

A training step of a network with P bytes of gradients, C seconds of compute
per rank (a fixed batch per rank: weak scaling) of which a share f is the
backward pass that gradient buckets overlap:

    step(N) = C + max(0, T(P, N, B) - f * C),   efficiency = C / step(N)

The rings take the best k fitted and, per message, half the alpha fitted at
2 hosts or --latency-us; rings are what NCCL and Open MPI's large-message
allreduce use. All of this is a prediction, not a measurement.

  bench/scaling_model.py fit scaling.json [--svg scaling_model.svg]
  bench/scaling_model.py predict scaling.json --networks networks.json

Python 3, standard library only.
"""
import argparse
import json
import math
import os
import sys

RATE_UNITS = {"kbit": 1e3 / 8, "mbit": 1e6 / 8, "gbit": 1e9 / 8}


def rate_bytes_per_s(rate):
    """tc's rate spelling ("100mbit") in bytes per second."""
    for unit, scale in RATE_UNITS.items():
        if rate.endswith(unit):
            return float(rate[: -len(unit)]) * scale
    raise ValueError(f"rate {rate!r}: expected a number followed by kbit, mbit or gbit")


def link_time(size, hosts, bandwidth):
    return 2.0 * (hosts - 1) / hosts * size / bandwidth


def least_squares(xs, ys):
    """(a, b) minimising sum ((a + b x - y) / y)^2: relative errors, so that
    the small messages count as much as the large ones."""
    if len(xs) < 2:
        raise ValueError("a fit needs at least two points")
    w = [1.0 / (y * y) for y in ys]
    sw = sum(w)
    sx = sum(wi * x for wi, x in zip(w, xs))
    sy = sum(wi * y for wi, y in zip(w, ys))
    sxx = sum(wi * x * x for wi, x in zip(w, xs))
    sxy = sum(wi * x * y for wi, x, y in zip(w, xs, ys))
    det = sw * sxx - sx * sx
    if det <= 0:
        raise ValueError("a fit needs points of at least two link times")
    a = (sxx * sy - sx * sxy) / det
    if a < 0:  # no negative fixed cost: the best line through the origin
        return 0.0, sxy / sxx
    return a, (sw * sxy - sx * sy) / det


def fit(cases):
    """{hosts: (alpha_s, k)} from netns_scaling cases of one rank per host,
    and the per-point relative errors [(case, predicted_s, error)]."""
    by_hosts = {}
    for c in cases:
        if c.get("ranks_per_host", 1) != 1 or c["rate"] == "none":
            continue
        x = link_time(c["bytes"], c["hosts"], rate_bytes_per_s(c["rate"]))
        by_hosts.setdefault(c["hosts"], []).append((c, x, c["magmadnn_us"] * 1e-6))
    params, errors = {}, []
    for hosts, points in sorted(by_hosts.items()):
        alpha, k = least_squares([p[1] for p in points], [p[2] for p in points])
        params[hosts] = (alpha, k)
        for c, x, y in points:
            predicted = alpha + k * x
            errors.append((c, predicted, (predicted - y) / y))
    return params, errors


def ring_time(size, ranks, bandwidth, latency, k):
    """A ring allreduce beyond the measured host counts."""
    return 2.0 * (ranks - 1) * latency + k * link_time(size, ranks, bandwidth)


def flat_time(size, ranks, per_host, bandwidth, intra, latency, k):
    """One ring over every rank, placed per_host to a host in rank order:
    each host's link carries one stream in and one out, so the slower of the
    two kinds of link sets the pace, and every step pays the latency."""
    slowest = intra if ranks <= per_host else min(bandwidth, intra)
    return ring_time(size, ranks, slowest, latency, k)


def hierarchical_time(size, ranks, per_host, bandwidth, intra, latency, k):
    """Reduce inside each host and broadcast back (S each way over the host's
    own links), a ring among the hosts' leaders between them."""
    hosts = max(1, ranks // per_host)
    inside = 2.0 * size / intra if per_host > 1 else 0.0
    between = ring_time(size, hosts, bandwidth, latency, k) if hosts > 1 else 0.0
    return inside + between


def step_time(compute_s, overlap_share, allreduce_s):
    return compute_s + max(0.0, allreduce_s - overlap_share * compute_s)


def ring_parameters(params):
    """(per-message latency, k) for the ring: latency from 2 hosts (2 messages), the best k."""
    if 2 not in params:
        raise ValueError("the ring's latency is taken from 2 hosts, which the measurements lack")
    latency = max(params[2][0], 0.0) / 2.0
    k = min(p[1] for p in params.values())
    return latency, max(k, 1.0)


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except ValueError as e:
        raise ValueError(f"{path} is not JSON ({e})") from None


def cmd_fit(a):
    data = load(a.json)
    params, errors = fit(data["cases"])
    print("| hosts | alpha (ms) | k (link times) |")
    print("| ---: | ---: | ---: |")
    for hosts, (alpha, k) in params.items():
        print(f"| {hosts} | {alpha * 1e3:.2f} | {k:.2f} |")
    print()
    print("| rate | hosts | bytes | measured ms | model ms | error |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for c, predicted, err in errors:
        print(f"| {c['rate']} | {c['hosts']} | {c['bytes']} | {c['magmadnn_us'] / 1e3:.1f} | "
              f"{predicted * 1e3:.1f} | {err * 100:+.0f}% |")
    if a.svg:
        with open(a.svg, "w") as f:
            f.write(svg_plot(params, errors))
    worst = max(abs(e[2]) for e in errors)
    print(f"\nlargest error: {worst * 100:.0f}% over {len(errors)} points")
    return 0 if worst <= a.tolerance else 1


def cmd_predict(a):
    data = load(a.json)
    params, _ = fit(data["cases"])
    latency, k = ring_parameters(params)
    if a.latency_us is not None:
        latency = a.latency_us * 1e-6
    networks = load(a.networks)
    links = [(name, float(bw)) for name, bw in (x.split("=") for x in a.links.split(","))]
    ranks = [int(n) for n in a.ranks.split(",")]
    print(f"ring: {latency * 1e6:.0f} us per message, {k:.2f} link times; {a.per_host} ranks per host joined at "
          f"{a.intra:g} GB/s")
    print("| network | link | allreduce | " + " | ".join(f"{n} ranks" for n in ranks) + " |")
    print("| --- | --- | --- | " + " | ".join("---:" for _ in ranks) + " |")
    for net in networks:
        for name, gbytes in links:
            for kind, model in (("flat", flat_time), ("hierarchical", hierarchical_time)):
                cells = []
                for n in ranks:
                    ar = model(net["gradient_bytes"], n, a.per_host, gbytes * 1e9, a.intra * 1e9, latency, k)
                    step = step_time(net["compute_s"], net["backward_share"], ar)
                    cells.append(f"{net['compute_s'] / step * 100:.0f}%")
                print(f"| {net['name']} | {name} | {kind} | " + " | ".join(cells) + " |")
    return 0


def svg_plot(params, errors):
    """Measured allreduce times (dots) and the fitted model (lines) against
    the link time, log-log, one colour per host count (bench/seeds' charts)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds"))
    import seedlib

    chart = seedlib.Chart("allreduce time: measured (dots) and alpha + k x link time (lines)",
                          "link time 2(H-1)/H x bytes / rate (s)", "allreduce time (s)",
                          log_x=True, log_y=True, width=640, height=440)
    xs = [link_time(c["bytes"], c["hosts"], rate_bytes_per_s(c["rate"])) for c, _, _ in errors]
    lo, hi = math.log10(min(xs)), math.log10(max(xs))
    for i, (hosts, (alpha, k)) in enumerate(sorted(params.items())):
        colour = seedlib.PALETTE[i % len(seedlib.PALETTE)]
        measured = [(x, c["magmadnn_us"] * 1e-6) for x, (c, _, _) in zip(xs, errors) if c["hosts"] == hosts]
        chart.add(f"{hosts} hosts, measured", measured, markers=True, line=False, colour=colour)
        # a + k x bends on log-log axes: 40 points of the line.
        line = [(10 ** (lo + (hi - lo) * j / 39), 0.0) for j in range(40)]
        chart.add(f"{hosts} hosts: {alpha * 1e3:.1f} ms + {k:.2f} x link time",
                  [(x, alpha + k * x) for x, _ in line], colour=colour)
    return seedlib.figure([chart], columns=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fit", help="fit alpha and k per host count; exit 1 if a point is off by more than --tolerance")
    f.add_argument("json")
    f.add_argument("--tolerance", type=float, default=0.15)
    f.add_argument("--svg", help="also plot the measured points and the fitted lines into this SVG file")
    p = sub.add_parser("predict", help="scaling efficiency of networks on faster links, from the fit")
    p.add_argument("json")
    p.add_argument("--networks", required=True,
                   help="JSON list of {name, gradient_bytes, compute_s, backward_share}")
    p.add_argument("--links", default="10Gb/s=1.25,100Gb/s=12.5", help="NAME=GBYTES_PER_S,... between hosts")
    p.add_argument("--ranks", default="2,8,64,1024")
    p.add_argument("--per-host", type=int, default=8, help="ranks per host")
    p.add_argument("--intra", type=float, default=300.0, help="GB/s between the ranks of a host (NVLink-class: 300)")
    p.add_argument("--latency-us", type=float, help="per-message latency between hosts (default: the fitted one)")
    a = ap.parse_args()
    try:
        return cmd_fit(a) if a.cmd == "fit" else cmd_predict(a)
    except (ValueError, KeyError, OSError) as e:
        print(f"scaling_model: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
