#!/usr/bin/env bash
# Proves that the README's two commands work on a bare Debian 12 or 13 machine.
#
#   tools/check-fresh-machine.sh [bookworm|trixie]   (as root; CI runs both)
#
# bookworm (Debian 12, the default): GCC 12, oneDNN 2.6, Open MPI 4.1.
# trixie (Debian 13): GCC 14, oneDNN 3.7, Open MPI 5.0.
#
# It makes a bare root of that release with `mmdebstrap --variant=apt` (apt
# and the essential packages only: no compiler, no git, no python3, no
# CUDA), clones this repository's committed HEAD into it, and runs the
# commands of the README's first code block inside it, in order, exactly as
# written, as root in a chroot with an empty environment. Whatever a command
# needs must therefore be installed by the project's own scripts. The root
# has no /usr/local/cuda, so this is also the proof that the CPU-only path
# works.
#
# Shared with the host, so that a second run (or the other release) redoes
# little: the compiler cache (a bind mount of $CCACHE_DIR, keyed on the
# compiler's content rather than its timestamp, so each release's GCC gets
# its own entries and a rerun hits them), and apt's downloaded packages (a
# bind mount of $FRESH_APT_CACHE/<release>, by default
# /var/cache/magmadnn-fresh/<release>). Set KEEP_FRESH_ROOT=1 to keep the
# root for inspection.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/tools/env.sh"
DIST="${1:-bookworm}"
case "$DIST" in
  bookworm) RELEASE="Debian 12" ;;
  trixie) RELEASE="Debian 13" ;;
  *) echo "usage: $0 [bookworm|trixie]" >&2; exit 2 ;;
esac
say() { echo "[fresh-machine $DIST] $*"; }
die() { echo "[fresh-machine $DIST] FAILED: $*" >&2; exit 1; }

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
LOG="${FRESH_LOG:-$ROOT/build/fresh-machine-$DIST.log}"
APT_CACHE="${FRESH_APT_CACHE:-/var/cache/magmadnn-fresh}/$DIST"
mkdir -p "$(dirname "$LOG")" "$CCACHE_DIR" "$APT_CACHE/partial"
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
say "making a bare $RELEASE root in $CHROOT"
mmdebstrap --quiet --variant=apt "$DIST" "$CHROOT" >>"$LOG" 2>&1 || { tail -20 "$LOG"; die "mmdebstrap"; }
[[ ! -e "$CHROOT/usr/local/cuda" ]] || die "the bare root has /usr/local/cuda"
for tool in gcc g++ cmake git python3; do
  [[ ! -e "$CHROOT/usr/bin/$tool" ]] || die "the bare root already has $tool; it is not bare"
done
cp /etc/resolv.conf "$CHROOT/etc/resolv.conf"
# The machine's own name, as Debian's installer writes it into /etc/hosts
# (a bare root has no /etc/hosts). Without it every lookup of the host name
# waits for the resolver to give up: `mpirun -np 2` took 5.5-5.7 s to start
# in a bare Debian 12 root against 0.44 s with it, and the root's 100-odd
# MPI tests start hundreds of jobs.
printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n' "$(hostname)" >"$CHROOT/etc/hosts"
# The network's trust, as resolv.conf is its names: where this host reaches
# HTTPS through an intercepting proxy, its extra certificate authorities and
# pip's pointer at the system bundle go into the root, so that pip reaches
# PyPI there as it does here (without them a bare root's pip failed with
# CERTIFICATE_VERIFY_FAILED: self-signed certificate in certificate chain).
# The root's update-ca-certificates adds them to its bundle when
# install-deps installs ca-certificates. A machine on the open internet needs
# none of this.
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  mkdir -p "$CHROOT/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$CHROOT/usr/local/share/ca-certificates/"
  [[ ! -x "$CHROOT/usr/sbin/update-ca-certificates" ]] || chroot "$CHROOT" /usr/sbin/update-ca-certificates >/dev/null
fi
[[ ! -f /etc/pip.conf ]] || cp /etc/pip.conf "$CHROOT/etc/pip.conf"
say "root ready after $((SECONDS - t0)) s; cloning $(git -C "$ROOT" rev-parse --short HEAD)"
git clone --quiet --no-hardlinks "$ROOT" "$CHROOT/root/magmadnn"

mount -t proc proc "$CHROOT/proc"
mount -t sysfs sys "$CHROOT/sys"
# The control groups, as a booted machine has them under /sys/fs/cgroup
# (a fresh sysfs mount has none): Slurm's slurmd needs them (tests/slurm).
[[ ! -d /sys/fs/cgroup ]] || mount --rbind /sys/fs/cgroup "$CHROOT/sys/fs/cgroup"
mount --rbind /dev "$CHROOT/dev"
mount -t tmpfs -o size=2g tmpfs "$CHROOT/dev/shm"  # OpenMPI's shared-memory transport and Chromium need it
mkdir -p "$CHROOT/root/.ccache"
mount --bind "$CCACHE_DIR" "$CHROOT/root/.ccache"
mount --bind "$APT_CACHE" "$CHROOT/var/cache/apt/archives"

for cmd in "${COMMANDS[@]}"; do
  say "running in the root: $cmd"
  t=$SECONDS
  set +e
  chroot "$CHROOT" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin CCACHE_COMPILERCHECK=content \
    /bin/bash -c "cd /root/magmadnn && $cmd" 2>&1 | tee -a "$LOG" | sed -u 's/^/    /'
  rc=${PIPESTATUS[0]}
  set -e
  ((rc == 0)) || die "'$cmd' exited $rc inside the bare $RELEASE root (log: $LOG)"
  say "'$cmd' passed in $((SECONDS - t)) s"
done

# The CPU-only path: no CUDA anywhere in the root, and the build knew it.
[[ ! -e "$CHROOT/usr/local/cuda" ]] || die "/usr/local/cuda appeared in the root"
grep -q '^MAGMADNN_CUDA:BOOL=OFF' "$CHROOT/root/magmadnn/build/CMakeCache.txt" ||
  die "the build in the root was not configured CPU-only"
say "OK: ${#COMMANDS[@]} README commands passed on a bare $RELEASE without CUDA in $((SECONDS - t0)) s"
