# The tests import the package from the build tree (build/python), which
# CTest puts on PYTHONPATH (tests/python/CMakeLists.txt); run by hand:
#   PYTHONPATH=build/python build-pyenv/bin/python -m pytest tests/python
import os

import pytest


@pytest.fixture(scope="session")
def fashion_mnist_dir():
    for d in ("/usr/share/datasets/fashion-mnist", "/usr/share/dataset-fashion-mnist"):
        if os.path.isdir(d):
            return d
    pytest.skip("Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)")
