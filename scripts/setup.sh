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
if [ "$want_tests" = 1 ]; then
  .venv/bin/pip install -q -e '.[test]' 2>&1 | grep -v '^WARNING: Location' || true
else
  .venv/bin/pip install -q -e . 2>&1 | grep -v '^WARNING: Location' || true
fi
.venv/bin/python -c 'import keyramp, locust' || { echo "setup: installing keyramp failed" >&2; exit 1; }

if ! command -v gcloud >/dev/null 2>&1 || ! command -v java >/dev/null 2>&1; then
  echo "setup: the Google Cloud CLI (gcloud) and Java 17 are needed for the official emulators;" \
       "or run them with 'docker compose up emulators' and export the *_EMULATOR_HOST variables" >&2
fi

if [ "$want_tests" = 1 ] && ! command -v chromium >/dev/null 2>&1; then
  # Browser tests drive Debian's chromium through Playwright (never `playwright install`).
  if [ "$(id -u)" = 0 ]; then
    (apt-get install -y -q chromium >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null; }) \
      || echo "setup: could not install chromium; browser tests will fail" >&2
  elif command -v sudo >/dev/null 2>&1; then
    sudo apt-get update -q >/dev/null && sudo apt-get install -y -q chromium >/dev/null \
      || echo "setup: could not install chromium; browser tests will fail" >&2
  else
    echo "setup: install Debian's chromium for the browser tests (apt-get install chromium)" >&2
  fi
fi
exit 0
