"""Starts an MPI bench program on N ranks of this machine, for the bench runners.

Two transports, each rank bound to its own core (round robin over the cores
when there are more ranks than cores, the same mapping for both):

  shm: plain `mpirun -np N`: the ranks share one host, so Open MPI moves the
       data through shared memory;
  tcp: tools/mpi-netns-run.sh: every rank in its own network namespace, Open
       MPI's TCP transport only, over veth pairs joined by a bridge. The
       launcher prints the bytes each rank's eth0 received; run() returns
       them, and the launcher fails the job when a rank received fewer than
       min_rx_bytes, so a figure labelled tcp provably crossed the veths.

The launcher needs root and `ip netns` (exit status 77 otherwise).

Python 3, standard library only.
"""
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

NETNS_RUN = Path(__file__).resolve().parent.parent / "tools" / "mpi-netns-run.sh"
TRANSPORTS = ("shm", "tcp")
_RX = re.compile(r"^mpi-netns-run: rank (\d+) .*eth0 received (\d+) bytes, sent (\d+) bytes$")


class Launcher:
    def __init__(self, mpirun="mpirun", netns_run=NETNS_RUN, min_rx_bytes=1 << 20, timeout_s=300):
        self.mpirun = mpirun
        self.netns_run = str(netns_run)
        self.min_rx_bytes = min_rx_bytes
        self.timeout_s = timeout_s
        self.cores = len(os.sched_getaffinity(0))

    def command(self, transport, ranks, program, rankfile=None):
        """The command line that starts `program` (a list) on `ranks` ranks."""
        if transport == "shm":
            bind = "core" if ranks <= self.cores else "core:overload-allowed"
            return [self.mpirun, "-np", str(ranks), "--bind-to", bind] + program
        if transport != "tcp":
            raise ValueError(f"unknown transport '{transport}' (expected one of {TRANSPORTS})")
        # Each namespace is a host of its own to Open MPI, and each daemon
        # would bind its one rank to the first core; the rankfile spreads them
        # over the cores as mpirun does on one host. The host names are the
        # addresses mpi-netns-run.sh gives rank i's namespace: 10.77.0.(i+1).
        return [self.netns_run, "-n", str(ranks), "--min-rx-bytes", str(self.min_rx_bytes),
                "--timeout", str(self.timeout_s), "--", "--rankfile", rankfile] + program

    def run(self, transport, ranks, program, env):
        """Runs the job and returns (stdout, eth0 bytes received per rank; [] for shm).
        Exits with the job's output when it fails."""
        with tempfile.NamedTemporaryFile("w", prefix="mpi-launch-rankfile.", suffix=".txt") as rankfile:
            for i in range(ranks):
                rankfile.write(f"rank {i}=10.77.0.{i + 1} slot={i % self.cores}\n")
            rankfile.flush()
            cmd = self.command(transport, ranks, program, rankfile.name)
            proc = subprocess.run(cmd, env=dict(env, MPIRUN=self.mpirun), capture_output=True, text=True)
        if proc.returncode == 77 and transport == "tcp":
            sys.exit(f"{self.netns_run} cannot run here (it needs root and `ip netns`):\n{proc.stderr}")
        if proc.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        rx = {int(m.group(1)): int(m.group(2)) for m in map(_RX.match, proc.stderr.splitlines()) if m}
        if transport == "tcp" and sorted(rx) != list(range(ranks)):
            sys.exit(f"{self.netns_run} did not report every rank's eth0 counters:\n{proc.stderr}")
        return proc.stdout, [rx[i] for i in sorted(rx)]


def bytes_range(samples):
    """'a - b bytes' over every rank of every run (a list of per-run lists)."""
    flat = [b for run in samples for b in run]
    return f"{min(flat):,} - {max(flat):,} bytes" if flat else "-"
