#!/usr/bin/env bash
# Packs a CUDA build made here for a run on the lent GPU machine, so that no
# device time goes into compiling (tools/gpu_run.sh unpacks and runs it).
#
# The lent machine has CUDA 13, cuBLAS, cuFFT and (in PyTorch's nvidia-*
# wheels) cuDNN 9 and NCCL 2, but none of our Debian packages. The bundle is
#   .gpu/build.tar.xz  the build tree without objects: test programs, the app,
#                      the library, and ctest's files (which name /work/main)
#   .gpu/root.tar.xz   the Debian libraries the programs and Open MPI load,
#                      Open MPI's launcher, components, help texts and
#                      configuration, at their Debian paths
#   .gpu/fashion-mnist.tar.xz  the data set's four IDX files, plain (xz packs
#                      them 5 MiB smaller than their gzip files), the training
#                      split cut to its first TRAIN_IMAGES (default 20000)
#                      images: with the repository's .git the whole set does
#                      not fit the 64 MiB. Every framework in gpu_run.sh's
#                      bench reads the same cut set.
# .gpu/ is ignored by git (.git/info/exclude): name it in the device tool's
# `carry`. Everything together must stay under the tool's 64 MiB.
#
# Usage: tools/gpu_bundle.sh [BUILD_DIR]   (default: build, configured with
#        MAGMADNN_CUDA=ON and CMAKE_CUDA_ARCHITECTURES=90)
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$(cd "${1:-$ROOT/build}" && pwd)"
DEST="$ROOT/.gpu"
[[ "$ROOT" == /work/main ]] || echo "note: ctest's files name $ROOT; gpu_run.sh links that path on the device"
grep -q "MAGMADNN_CUDA:BOOL=ON" "$BUILD/CMakeCache.txt" || { echo "$BUILD is not a CUDA build" >&2; exit 1; }

rm -rf "$DEST"
mkdir -p "$DEST"
grep -qx "/.gpu/" "$ROOT/.git/info/exclude" 2>/dev/null || echo "/.gpu/" >>"$ROOT/.git/info/exclude"

# -- the build tree, objects and static archives left out -------------------------
# Test outputs left in the tree (the rendered runs' checkpoints, the install
# test's prefix) are not carried: tests write their own there.
(cd "$ROOT" && find "${BUILD#"$ROOT"/}" \( -name CMakeFiles -o -name Testing -o -name 'rendered-*' -o -path '*/tests/install' \) -prune \
   -o -type f ! -name '*.o' ! -name '*.a' ! -name '.ninja_*' ! -name '*.log' -print -o -type l -print) \
  >"$DEST/build.list"
tar -C "$ROOT" -cf - -T "$DEST/build.list" | xz -T2 -9e >"$DEST/build.tar.xz"
rm "$DEST/build.list"

# -- libraries: what our programs and Open MPI's components load, less the C and
# C++ runtimes (the machine's are newer) and CUDA's (the machine's match its driver)
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
libs() { ldd "$@" 2>/dev/null | awk '$3 ~ /^\// {print $3}'; }
{
  find "$BUILD" -path "$BUILD/CMakeFiles" -prune -o -type f -executable -print | while read -r f; do libs "$f"; done
  libs /usr/bin/orterun /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/*.so \
       /usr/lib/x86_64-linux-gnu/pmix2/lib/pmix/*.so /usr/lib/x86_64-linux-gnu/pmix2/lib/*.so*
} | sort -u | grep -vE '/(libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+|libz)\.so|/usr/local/cuda|libmagmadnn' \
  >"$stage/libs.txt"
mkdir -p "$stage/root/usr/lib/x86_64-linux-gnu"
while read -r lib; do
  # Debian reaches some libraries (OpenBLAS) through alternatives links:
  # keep the name the programs ask for, with the real file's bytes.
  cp -L "$lib" "$stage/root/usr/lib/x86_64-linux-gnu/$(basename "$lib")"
done <"$stage/libs.txt"
for p in /usr/bin/orterun /usr/bin/orted /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 \
         /usr/share/openmpi /usr/share/pmix /etc/openmpi; do
  [[ -e "$p" ]] || continue
  mkdir -p "$stage/root$(dirname "$p")"
  cp -a "$p" "$stage/root$p"
done
# Headers and static archives are for building, which happens here.
find "$stage/root" -name include -type d -prune -exec rm -rf {} +
find "$stage/root" -name '*.a' -delete
ln -s orterun "$stage/root/usr/bin/mpiexec"
ln -s orterun "$stage/root/usr/bin/mpirun"
tar -C "$stage/root" -cf - . | xz -T2 -9e >"$DEST/root.tar.xz"

# -- the data set --------------------------------------------------------------------
mkdir -p "$stage/data/fashion-mnist"
python3 - "$stage/data/fashion-mnist" "${TRAIN_IMAGES:-20000}" <<'EOF'
import gzip, glob, os, struct, sys
dest, keep = sys.argv[1], int(sys.argv[2])
for path in glob.glob("/usr/share/datasets/fashion-mnist/*-ubyte.gz"):
    data = gzip.open(path).read()
    name = os.path.basename(path)[:-3]
    if name.startswith("train-"):  # header: magic (type, ndim), then ndim big-endian sizes
        ndim = data[3]
        dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
        n = min(keep, dims[0])
        per = 1
        for d in dims[1:]:
            per *= d
        head = 4 + 4 * ndim
        data = data[:4] + struct.pack(">I", n) + data[8:head] + data[head:head + n * per]
    open(os.path.join(dest, name), "wb").write(data)
EOF
tar -C "$stage/data" -cf - fashion-mnist | xz -T2 -9 >"$DEST/fashion-mnist.tar.xz"

total=$(du -cb "$DEST"/* | tail -1 | cut -f1)
echo "bundle in $DEST: $((total >> 20)) MiB (the device tool carries 64 MiB with the working tree)"
du -b "$DEST"/*
