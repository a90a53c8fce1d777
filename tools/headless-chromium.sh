# Sourced by the tools/screenshot-*.sh page checks: finds (or, as root,
# installs) Debian's `chromium` and `poppler-utils`, makes a scratch folder
# $WORK removed on exit, and defines
#   chrome ARGS...   headless Chromium at WIDTH x HEIGHT, device scale 1, a
#                    private profile per call (parallel runs neither share nor
#                    lock one; no network is needed), stderr in $WORK/chromium.log;
#   screenshot PAGE OUT   a PNG of the window at OUT (replaced), or fail();
#   print_text PAGE TXT   the page printed to PDF and read back as text into
#                    TXT by pdftotext, or fail().
# Requires, before sourcing: WIDTH, HEIGHT, and fail() (print and exit).
# shellcheck shell=bash

install_package() {  # install_package DEBIAN_PACKAGE COMMAND
  command -v "$2" >/dev/null && return 0
  [[ $(id -u) -eq 0 ]] || fail "$2 is missing; install the Debian package $1 (needs root)"
  echo "$(basename "$0" .sh): installing $1 (Debian package)" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$1" >/dev/null ||
    { apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$1" >/dev/null; } ||
    fail "could not install $1"
}
if ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then
  install_package chromium chromium
fi
CHROMIUM="$(command -v chromium || command -v chromium-browser)"
install_package poppler-utils pdftotext

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
chrome() {
  local profile
  profile="$(mktemp -d -p "$WORK")"
  timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars --force-device-scale-factor=1 \
    --user-data-dir="$profile" --window-size="$WIDTH,$HEIGHT" "$@" 2>"$WORK/chromium.log"
}
screenshot() {
  rm -f "$2"
  chrome --screenshot="$2" "file://$1" >/dev/null || true
  [[ -s "$2" ]] || fail "chromium wrote no screenshot to $2 ($(tail -n 3 "$WORK/chromium.log"))"
}
print_text() {
  rm -f "$WORK/print.pdf"
  chrome --no-pdf-header-footer --print-to-pdf="$WORK/print.pdf" "file://$1" >/dev/null || true
  [[ -s "$WORK/print.pdf" ]] || fail "chromium printed no PDF ($(tail -n 3 "$WORK/chromium.log"))"
  pdftotext "$WORK/print.pdf" "$2" || fail "pdftotext could not read the printed page"
}
