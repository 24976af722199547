#!/usr/bin/env bash
# Set up keyramp in ./.venv (idempotent). `--test` also installs the test extras and
# Debian's chromium for the browser tests. The official emulators come with the
# Google Cloud CLI (gcloud, Java 17); without it, see docker-compose.yml.
set -euo pipefail
cd "$(dirname "$0")/.."
want_tests=0
[ "${1:-}" = "--test" ] && want_tests=1

python=${PYTHON:-python3}
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
  echo "setup: keyramp needs Python >= 3.11 (found $("$python" --version 2>&1))" >&2; exit 2; }
[ -x .venv/bin/python ] || "$python" -m venv .venv
export PIP_DISABLE_PIP_VERSION_CHECK=1
target=.; [ "$want_tests" = 1 ] && target='.[test]'
# pip's own chatter (build-backend warnings) only matters when the install fails.
pip_log=$(mktemp); trap 'rm -f "$pip_log"' EXIT
.venv/bin/pip install -q -e "$target" >"$pip_log" 2>&1 || { cat "$pip_log" >&2; echo "setup: pip install failed" >&2; exit 1; }
.venv/bin/python -c 'import keyramp, locust' || { echo "setup: installing keyramp failed" >&2; exit 1; }

if ! command -v gcloud >/dev/null 2>&1 || ! command -v java >/dev/null 2>&1; then
  echo "setup: the Google Cloud CLI (gcloud) and Java 17 are needed for the official emulators;" \
       "or run them with 'docker compose up emulators' and export the *_EMULATOR_HOST variables" >&2
fi

apt_install() {  # apt_install PACKAGE WHY [APT OPTION...]: Debian packages the tests need (root or sudo)
  local sudo="" pkg=$1 why=$2
  shift 2
  [ "$(id -u)" = 0 ] || { command -v sudo >/dev/null 2>&1 && sudo="sudo"; } || {
    echo "setup: install Debian's $pkg ($why): apt-get install $pkg" >&2; return 0; }
  ($sudo apt-get install -y -q "$@" "$pkg" >/dev/null 2>&1 || { $sudo apt-get update -q >/dev/null && $sudo apt-get install -y -q "$@" "$pkg" >/dev/null; }) \
    || echo "setup: could not install $pkg ($why)" >&2
}
if [ "$want_tests" = 1 ]; then
  # Browser tests drive Debian's chromium through Playwright (never `playwright install`).
  command -v chromium >/dev/null 2>&1 || apt_install chromium "browser tests"
  # docker-compose.yml is validated with `docker compose config` / `docker-compose config` (no engine needed).
  docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null 2>&1 \
    || apt_install docker-compose "compose file validation"
  # The metrics test scrapes a live run with a real Prometheus server (started and stopped by
  # the test itself on a free loopback port; the package's own service is not used).
  command -v prometheus >/dev/null 2>&1 || apt_install prometheus "metrics test" --no-install-recommends
fi
exit 0
