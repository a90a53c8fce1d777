"""Run under `mpirun -np 2 python3 mpi4py_coexist.py DATA_DIR` (CTest
python_mpi4py_np2): a program that started MPI through mpi4py first, as an
mpi4py user's does, then trains with magmadnn.train. MPI is started once
(mpi4py's; magmadnn takes it as it is and leaves MPI_Finalize to it), the
training is data-parallel on mpi4py's ranks, and mpi4py's own
communicator still works after it and agrees with magmadnn's summary."""
import sys

from mpi4py import MPI  # MPI_Init_thread happens here, before magmadnn

import magmadnn

world = MPI.COMM_WORLD
assert MPI.Is_initialized() and MPI.Query_thread() == MPI.THREAD_MULTIPLE, MPI.Query_thread()
summary = magmadnn.train(preset="mlp", epochs=1, batch_size=100, data__dir=sys.argv[1], data__limit_train=2000,
                         data__limit_test=500)
assert magmadnn.ranks() == world.Get_size() == 2, (magmadnn.ranks(), world.Get_size())
assert magmadnn.rank() == world.Get_rank(), (magmadnn.rank(), world.Get_rank())
assert summary["ranks"] == 2 and summary["strategy"] == "allreduce", summary
assert not MPI.Is_finalized()  # magmadnn did not finalize mpi4py's MPI
# Every rank reports the same test accuracy, checked through mpi4py.
accuracies = world.allgather(summary["test_accuracy"])
assert accuracies[0] == accuracies[1], accuracies
print(f"rank {world.Get_rank()}: mpi4py {MPI.Get_version()}, magmadnn on 2 ranks, test accuracy {accuracies[0]:.4f}")
