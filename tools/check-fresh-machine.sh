#!/usr/bin/env bash
# Proves that the README's two commands work on a bare Debian 12 machine.
#
#   tools/check-fresh-machine.sh            (as root; CI runs it)
#
# It makes a bare Debian 12 root with `mmdebstrap --variant=apt` (apt and the
# essential packages only: no compiler, no git, no python3, no CUDA), clones
# this repository's committed HEAD into it, and runs the commands of the
# README's first code block inside it, in order, exactly as written, as root
# in a chroot with an empty environment. Whatever a command needs must
# therefore be installed by the project's own scripts. The root has no
# /usr/local/cuda, so this is also the proof that the CPU-only path works.
#
# The compiler cache is shared into the root (a bind mount of $CCACHE_DIR,
# keyed on the compiler's content rather than its timestamp), so a second run
# rebuilds little. Set KEEP_FRESH_ROOT=1 to keep the root for inspection.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/tools/env.sh"
say() { echo "[fresh-machine] $*"; }
die() { echo "[fresh-machine] FAILED: $*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || die "must run as root (it uses mmdebstrap, mount and chroot)"
if ! command -v mmdebstrap >/dev/null; then
  say "installing mmdebstrap"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap >/dev/null
fi

# The README's commands: the lines of its first ```sh block, comments removed.
mapfile -t COMMANDS < <(awk '/^```sh/{inside=1; next} /^```/{if (inside) exit} inside' "$ROOT/README.md" |
                        sed -e 's/[[:space:]]*#.*$//' -e '/^[[:space:]]*$/d')
((${#COMMANDS[@]} >= 2)) || die "README.md's first sh block holds ${#COMMANDS[@]} command(s), expected 2"

WORK="$(mktemp -d "${TMPDIR:-/var/tmp}/magmadnn-fresh.XXXXXX")"
CHROOT="$WORK/root"
LOG="${FRESH_LOG:-$ROOT/build/fresh-machine.log}"
mkdir -p "$(dirname "$LOG")" "$CCACHE_DIR"
: >"$LOG"
cleanup() {
  # Unmount everything below the root (deepest first) before deleting it.
  for m in $(awk -v r="$CHROOT" 'index($2, r) == 1 {print $2}' /proc/mounts | sort -r); do
    umount -l "$m" 2>/dev/null || true
  done
  if [[ "${KEEP_FRESH_ROOT:-0}" == 1 ]]; then say "kept $CHROOT"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

t0=$SECONDS
say "making a bare Debian 12 root in $CHROOT"
mmdebstrap --quiet --variant=apt bookworm "$CHROOT" >>"$LOG" 2>&1 || { tail -20 "$LOG"; die "mmdebstrap"; }
[[ ! -e "$CHROOT/usr/local/cuda" ]] || die "the bare root has /usr/local/cuda"
for tool in gcc g++ cmake git python3; do
  [[ ! -e "$CHROOT/usr/bin/$tool" ]] || die "the bare root already has $tool; it is not bare"
done
cp /etc/resolv.conf "$CHROOT/etc/resolv.conf"
say "root ready after $((SECONDS - t0)) s; cloning $(git -C "$ROOT" rev-parse --short HEAD)"
git clone --quiet --no-hardlinks "$ROOT" "$CHROOT/root/magmadnn"

mount -t proc proc "$CHROOT/proc"
mount -t sysfs sys "$CHROOT/sys"
mount --rbind /dev "$CHROOT/dev"
mount -t tmpfs -o size=2g tmpfs "$CHROOT/dev/shm"  # OpenMPI's shared-memory transport and Chromium need it
mkdir -p "$CHROOT/root/.ccache"
mount --bind "$CCACHE_DIR" "$CHROOT/root/.ccache"

for cmd in "${COMMANDS[@]}"; do
  say "running in the root: $cmd"
  t=$SECONDS
  set +e
  chroot "$CHROOT" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin CCACHE_COMPILERCHECK=content \
    /bin/bash -c "cd /root/magmadnn && $cmd" 2>&1 | tee -a "$LOG" | sed -u 's/^/    /'
  rc=${PIPESTATUS[0]}
  set -e
  ((rc == 0)) || die "'$cmd' exited $rc inside the bare Debian 12 root (log: $LOG)"
  say "'$cmd' passed in $((SECONDS - t)) s"
done

# The CPU-only path: no CUDA anywhere in the root, and the build knew it.
[[ ! -e "$CHROOT/usr/local/cuda" ]] || die "/usr/local/cuda appeared in the root"
grep -q '^MAGMADNN_CUDA:BOOL=OFF' "$CHROOT/root/magmadnn/build/CMakeCache.txt" ||
  die "the build in the root was not configured CPU-only"
say "OK: ${#COMMANDS[@]} README commands passed on a bare Debian 12 without CUDA in $((SECONDS - t0)) s"
