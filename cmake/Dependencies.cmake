# Finds every dependency and records what is enabled. Optional parts that are
# asked for but missing are switched off with a message, never a hard error,
# so the same tree builds on a laptop and on a GPU node.

find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)

# oneDNN: CPU matrix products with fused post-ops (required for the CPU backend).
find_package(dnnl REQUIRED CONFIG)

# OpenBLAS: the plain BLAS (level 1/2 and the GEMM floor in bench/).
find_path(OPENBLAS_INCLUDE_DIR cblas.h
  PATHS /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/openblas /usr/include)
find_library(OPENBLAS_LIBRARY NAMES openblas)
if(NOT OPENBLAS_INCLUDE_DIR OR NOT OPENBLAS_LIBRARY)
  message(FATAL_ERROR "OpenBLAS not found: apt-get install libopenblas-dev")
endif()
add_library(magmadnn_openblas INTERFACE)
target_include_directories(magmadnn_openblas INTERFACE ${OPENBLAS_INCLUDE_DIR})
target_link_libraries(magmadnn_openblas INTERFACE ${OPENBLAS_LIBRARY})

# zlib: reads gzip-compressed data sets (the Debian Fashion-MNIST files are .gz).
find_package(ZLIB REQUIRED)

# FFTW (float and double) for FFT convolution on the CPU.
set(MAGMADNN_HAVE_FFTW 0)
if(MAGMADNN_FFTW)
  find_path(FFTW_INCLUDE_DIR fftw3.h)
  find_library(FFTW_LIBRARY NAMES fftw3)
  find_library(FFTWF_LIBRARY NAMES fftw3f)
  if(FFTW_INCLUDE_DIR AND FFTW_LIBRARY AND FFTWF_LIBRARY)
    set(MAGMADNN_HAVE_FFTW 1)
  else()
    message(STATUS "magmadnn: FFTW not found (apt-get install libfftw3-dev); FFT convolution on the CPU disabled")
  endif()
endif()

# libjpeg-turbo's TurboJPEG and libpng: JPEG and PNG image folders
# (data/image_folder.h, "dataset": "folder"). Without them the rest builds,
# and a folder data set is refused with a message saying what to install.
set(MAGMADNN_HAVE_IMAGES 0)
if(MAGMADNN_IMAGES)
  find_path(TURBOJPEG_INCLUDE_DIR turbojpeg.h)
  find_library(TURBOJPEG_LIBRARY NAMES turbojpeg)
  find_package(PNG QUIET)
  if(TURBOJPEG_INCLUDE_DIR AND TURBOJPEG_LIBRARY AND PNG_FOUND)
    set(MAGMADNN_HAVE_IMAGES 1)
  else()
    message(STATUS "magmadnn: TurboJPEG or libpng not found (apt-get install libturbojpeg0-dev libpng-dev); "
                   "image folders (\"dataset\": \"folder\") disabled")
  endif()
endif()

# MPI for processes and collectives.
set(MAGMADNN_HAVE_MPI 0)
if(MAGMADNN_MPI)
  find_package(MPI COMPONENTS CXX)
  if(MPI_CXX_FOUND)
    set(MAGMADNN_HAVE_MPI 1)
  else()
    message(STATUS "magmadnn: MPI not found (apt-get install libopenmpi-dev openmpi-bin); MAGMADNN_HAVE_MPI off")
  endif()
endif()

# CUDA and its libraries.
set(MAGMADNN_HAVE_CUDA 0)
set(MAGMADNN_HAVE_CUDNN 0)
set(MAGMADNN_HAVE_NCCL 0)
if(MAGMADNN_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    # Hopper (the lent H100/H200) by default; override with -DCMAKE_CUDA_ARCHITECTURES=...
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  enable_language(CUDA)
  if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)  # CMake < 3.26 knows no C++20 flag for nvcc
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  find_package(CUDAToolkit REQUIRED)
  set(MAGMADNN_HAVE_CUDA 1)
  if(MAGMADNN_CUDNN)
    find_library(CUDNN_LIBRARY NAMES cudnn HINTS ${CUDAToolkit_LIBRARY_DIR})
    find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    if(CUDNN_LIBRARY AND CUDNN_INCLUDE_DIR)
      set(MAGMADNN_HAVE_CUDNN 1)
    else()
      message(STATUS "magmadnn: cuDNN not found; cuDNN convolutions disabled")
    endif()
  endif()
  if(MAGMADNN_NCCL)
    find_library(NCCL_LIBRARY NAMES nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
    find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    if(NCCL_LIBRARY AND NCCL_INCLUDE_DIR AND NOT MAGMADNN_HAVE_MPI)
      # NcclCommunicator sends NCCL's unique id over MPI.
      message(STATUS "magmadnn: NCCL found, but MPI is not; the NCCL communicator needs MPI, MAGMADNN_HAVE_NCCL off")
    elseif(NCCL_LIBRARY AND NCCL_INCLUDE_DIR)
      set(MAGMADNN_HAVE_NCCL 1)
    else()
      message(STATUS "magmadnn: NCCL not found; MAGMADNN_HAVE_NCCL off")
    endif()
  endif()
endif()

# nlohmann/json (header-only): the run specification (magmadnn/run/) is a
# JSON document, for the library's run_training as for the command.
find_package(nlohmann_json 3 QUIET)
if(NOT nlohmann_json_FOUND)
  message(FATAL_ERROR "magmadnn: nlohmann_json not found (apt-get install nlohmann-json3-dev, or tools/install-deps.sh)")
endif()

# ONNX export and import (magmadnn/onnx/, the magmadnn_onnx library): ONNX's
# own protobuf schema and checker from Debian's libonnx-dev, on
# libprotobuf-dev. Protobuf first: Debian 12's ONNXConfig.cmake (1.12)
# names protobuf::libprotobuf without finding it; Debian 13's (1.17) finds
# it itself. The imported target is `onnx` on 1.12 and `ONNX::onnx` on 1.17.
set(MAGMADNN_HAVE_ONNX 0)
if(MAGMADNN_ONNX)
  find_package(Protobuf QUIET)
  if(Protobuf_FOUND)
    find_package(ONNX CONFIG QUIET)
  endif()
  if(TARGET ONNX::onnx)
    set(MAGMADNN_ONNX_TARGET ONNX::onnx)
  elseif(TARGET onnx)
    set(MAGMADNN_ONNX_TARGET onnx)
  endif()
  if(Protobuf_FOUND AND MAGMADNN_ONNX_TARGET)
    set(MAGMADNN_HAVE_ONNX 1)
  else()
    message(STATUS "magmadnn: ONNX or protobuf not found (apt-get install libonnx-dev libprotobuf-dev); "
                   "ONNX export and import (magmadnn_onnx) disabled")
  endif()
endif()

if(MAGMADNN_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
