"""Run under `mpirun -np 2 python3 mpi_train.py DATA_DIR` (CTest python_train_mpi_np2):
magmadnn.train trains data-parallel on the ranks, as `magmadnn train` does
under mpirun, and every rank gets the same summary."""
import sys

import magmadnn

summary = magmadnn.train(preset="mlp", epochs=1, batch_size=100, data__dir=sys.argv[1], data__limit_train=2000,
                         data__limit_test=500)
assert magmadnn.ranks() == 2, magmadnn.ranks()
assert summary["ranks"] == 2, summary["ranks"]
assert summary["strategy"] == "allreduce", summary["strategy"]
assert summary["train_samples"] + summary["validation_samples"] == 2000 and summary["test_samples"] == 500, summary
print(f"rank {magmadnn.rank()}: 2 ranks, test accuracy {summary['test_accuracy']:.4f}")
