# The Python package (python/, docs/python.md): the extension module
# magmadnn._magmadnn, built with nanobind against the libraries of this
# build (it links them, so it adds no second build of the library).
# On by default when a Python 3 with its development headers and nanobind is
# found; otherwise switched off with a message saying what is missing.
# tools/install-deps.sh --tests makes a virtual environment with nanobind and
# scikit-build-core (MAGMADNN_PYENV, build-pyenv/ by default) and the build
# scripts hand its interpreter to CMake as Python_EXECUTABLE.
set(MAGMADNN_HAVE_PYTHON 0)
set(MAGMADNN_PYTHON_WHY "")
if(MAGMADNN_PYTHON AND (MAGMADNN_SANITIZE OR MAGMADNN_FUZZ))
  # An instrumented extension would need the sanitizer runtime preloaded
  # into the interpreter; the sanitizer builds test the C++ side.
  set(MAGMADNN_PYTHON_WHY "not with MAGMADNN_SANITIZE or MAGMADNN_FUZZ")
elseif(MAGMADNN_PYTHON)
  # A virtual environment named by Python_EXECUTABLE comes first.
  set(Python_FIND_VIRTUALENV FIRST)
  find_package(Python 3.9 COMPONENTS Interpreter Development.Module QUIET)
  if(NOT Python_Interpreter_FOUND OR NOT Python_Development.Module_FOUND)
    set(MAGMADNN_PYTHON_WHY "no Python 3 with development headers (apt-get install python3-dev)")
  else()
    execute_process(COMMAND "${Python_EXECUTABLE}" -m nanobind --cmake_dir
      OUTPUT_VARIABLE _nanobind_dir OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _nanobind_rc ERROR_QUIET)
    if(NOT _nanobind_rc EQUAL 0)
      set(MAGMADNN_PYTHON_WHY "no nanobind for ${Python_EXECUTABLE} (tools/install-deps.sh --tests makes build-pyenv/ with it; configure with -DPython_EXECUTABLE=build-pyenv/bin/python)")
    else()
      find_package(nanobind CONFIG PATHS "${_nanobind_dir}" NO_DEFAULT_PATH)
      if(nanobind_FOUND)
        set(MAGMADNN_HAVE_PYTHON 1)
      else()
        set(MAGMADNN_PYTHON_WHY "nanobind's CMake files not found in ${_nanobind_dir}")
      endif()
    endif()
  endif()
  if(NOT MAGMADNN_HAVE_PYTHON)
    message(STATUS "magmadnn: Python package disabled: ${MAGMADNN_PYTHON_WHY}")
  endif()
endif()
