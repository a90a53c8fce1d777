#!/usr/bin/env python3
"""bench/scaling_model.py: the fit recovers the parameters of data made from
known ones, flags a point the model misses, refuses bad input, and its
predictions move the way a ring allreduce must."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "bench", "scaling_model.py")
sys.path.insert(0, os.path.dirname(SCRIPT))
import scaling_model as sm  # noqa: E402

TRUTH = {2: (0.004, 1.1), 3: (0.006, 1.2), 4: (0.03, 3.5)}


def cases(truth=TRUTH, skew=None):
    out = []
    for hosts, (alpha, k) in truth.items():
        for rate in ("20mbit", "100mbit", "200mbit"):
            for size in (65536, 1048576, 8388608):
                t = alpha + k * sm.link_time(size, hosts, sm.rate_bytes_per_s(rate))
                if skew and skew == (hosts, rate, size):
                    t *= 1.5
                out.append({"rate": rate, "hosts": hosts, "ranks_per_host": 1, "ranks": hosts, "bytes": size,
                            "magmadnn_us": t * 1e6, "raw_us": t * 1e6, "repeats": 1})
    # Points the fit must ignore: two ranks per host, unshaped links.
    out.append({"rate": "100mbit", "hosts": 2, "ranks_per_host": 2, "ranks": 4, "bytes": 65536,
                "magmadnn_us": 1e9, "raw_us": 1.0, "repeats": 1})
    out.append({"rate": "none", "hosts": 2, "ranks_per_host": 1, "ranks": 2, "bytes": 65536,
                "magmadnn_us": 1e9, "raw_us": 1.0, "repeats": 1})
    return out


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


class ScalingModel(unittest.TestCase):
    def write(self, data):
        f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump(data, f)
        f.close()
        self.addCleanup(os.unlink, f.name)
        return f.name

    def test_the_fit_recovers_known_parameters(self):
        params, errors = sm.fit(cases())
        self.assertEqual(sorted(params), [2, 3, 4])
        for hosts, (alpha, k) in TRUTH.items():
            self.assertAlmostEqual(params[hosts][0], alpha, places=9)
            self.assertAlmostEqual(params[hosts][1], k, places=9)
        self.assertEqual(len(errors), 27)
        self.assertLess(max(abs(e[2]) for e in errors), 1e-9)
        svg = self.write({})
        r = run("fit", self.write({"cases": cases()}), "--svg", svg)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("| 4 | 30.00 | 3.50 |", r.stdout)
        plot = open(svg).read()
        self.assertEqual(plot.count("<circle"), 27)
        self.assertIn('data-name="4 hosts: 30.0 ms + 3.50 x link time" data-points="40"', plot)

    def test_a_point_the_model_misses_fails_the_tolerance(self):
        r = run("fit", self.write({"cases": cases(skew=(3, "200mbit", 8388608))}))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("largest error:", r.stdout)

    def test_bad_input_is_named(self):
        bad = cases()
        bad[0]["rate"] = "fast"
        r = run("fit", self.write({"cases": bad}))
        self.assertEqual(r.returncode, 2)
        self.assertIn("rate 'fast': expected a number followed by kbit, mbit or gbit", r.stderr)
        r = run("fit", self.write({"cases": [c for c in cases() if c["hosts"] == 4][:1]}))
        self.assertEqual(r.returncode, 2)
        self.assertIn("a fit needs at least two points", r.stderr)
        empty = self.write({})
        open(empty, "w").close()
        r = run("fit", empty)
        self.assertEqual(r.returncode, 2)
        self.assertIn(empty + " is not JSON", r.stderr)

    def test_predictions_fall_with_ranks_and_rise_with_bandwidth(self):
        latency, k = sm.ring_parameters(sm.fit(cases())[0])
        self.assertAlmostEqual(latency, 0.002)
        self.assertAlmostEqual(k, 1.1)
        eff = lambda n, bw: 0.1 / sm.step_time(0.1, 0.6, sm.ring_time(1e8, n, bw, latency, k))
        for bw in (1.25e9, 12.5e9):
            effs = [eff(n, bw) for n in (2, 8, 64, 1024)]
            self.assertEqual(effs, sorted(effs, reverse=True))
        self.assertGreater(eff(64, 12.5e9), eff(64, 1.25e9))
        # A step whose allreduce hides inside its backward pass scales perfectly.
        self.assertEqual(sm.step_time(1.0, 0.6, 0.5), 1.0)
        # Many ranks per host: the hierarchical allreduce pays N/G, not N, latencies.
        flat = sm.flat_time(1e8, 1024, 8, 12.5e9, 300e9, 1e-5, 1.0)
        hier = sm.hierarchical_time(1e8, 1024, 8, 12.5e9, 300e9, 1e-5, 1.0)
        self.assertAlmostEqual(flat, 2 * 1023 * 1e-5 + 2 * 1023 / 1024 * 1e8 / 12.5e9)
        self.assertAlmostEqual(hier, 2 * 1e8 / 300e9 + 2 * 127 * 1e-5 + 2 * 127 / 128 * 1e8 / 12.5e9)
        self.assertLess(hier, flat)
        # Inside one host the flat ring runs at the host's own links.
        self.assertAlmostEqual(sm.flat_time(1e8, 8, 8, 12.5e9, 300e9, 0.0, 1.0), 2 * 7 / 8 * 1e8 / 300e9)
        # A fixed cost is never negative: the fit goes through the origin instead.
        self.assertEqual(sm.least_squares([1.0, 2.0, 3.0], [0.9, 2.1, 3.3])[0], 0.0)
        nets = self.write([{"name": "toy", "gradient_bytes": 1e8, "compute_s": 1.0, "backward_share": 0.6}])
        r = run("predict", self.write({"cases": cases()}), "--networks", nets, "--ranks", "2,1024")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("| toy | 10Gb/s | flat |", r.stdout)
        self.assertIn("| toy | 10Gb/s | hierarchical |", r.stdout)


if __name__ == "__main__":
    unittest.main()
