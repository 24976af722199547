#!/usr/bin/env bash
# Set up keyramp in ./.venv (idempotent). `--test` also installs the test extras and the
# Debian packages the tests need (chromium, docker-compose, prometheus): apt works in the
# background while the Python packages install. The official emulators come with the
# Google Cloud CLI (gcloud, Java 17); without it, see docker-compose.yml. Quiet on success.
set -euo pipefail
cd "$(dirname "$0")/.."
want_tests=0
[ "${1:-}" = "--test" ] && want_tests=1

python=${PYTHON:-python3}
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
  echo "setup: keyramp needs Python >= 3.11 (found $("$python" --version 2>&1))" >&2; exit 2; }
logs=$(mktemp -d); trap 'rm -rf "$logs"' EXIT

# -- Debian packages (tests only), one apt job in the background -----------------------------
apt_job() {  # apt_job [APT OPTION...] -- PACKAGE...: install them (one retry after apt-get update)
  local opts=() sudo=""
  while [ "$1" != "--" ]; do opts+=("$1"); shift; done
  shift
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get install -y -q "${opts[@]}" "$@" >/dev/null 2>&1 \
    || { $sudo apt-get update -q >/dev/null 2>&1 && $sudo apt-get install -y -q "${opts[@]}" "$@" >/dev/null 2>&1; } \
    || echo "setup: could not install $* (apt-get install ${opts[*]} $*)"
}
apt_pid=""
if [ "$want_tests" = 1 ]; then
  with_recommends=() without=()
  # Browser tests drive Debian's chromium through Playwright (never `playwright install`).
  command -v chromium >/dev/null 2>&1 || with_recommends+=(chromium)
  # docker-compose.yml is validated with `docker compose config` / `docker-compose config` (no engine needed).
  docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null 2>&1 || with_recommends+=(docker-compose)
  # The metrics test scrapes a live run with a real Prometheus server (started and stopped by
  # the test itself on a free loopback port; the package's own service is not used).
  command -v prometheus >/dev/null 2>&1 || without+=(prometheus)
  if [ $(( ${#with_recommends[@]} + ${#without[@]} )) -gt 0 ]; then
    if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null 2>&1; then
      echo "setup: install Debian's ${with_recommends[*]} ${without[*]} (tests need them): apt-get install ..." >&2
    else
      # apt holds one lock: its installs run one after another, beside pip.
      { [ ${#with_recommends[@]} = 0 ] || apt_job -- "${with_recommends[@]}"
        [ ${#without[@]} = 0 ] || apt_job --no-install-recommends -- "${without[@]}"; } >"$logs/apt" 2>&1 &
      apt_pid=$!
    fi
  fi
fi

# -- Python packages ---------------------------------------------------------------------------
[ -x .venv/bin/python ] || "$python" -m venv .venv
export PIP_DISABLE_PIP_VERSION_CHECK=1
target=.; [ "$want_tests" = 1 ] && target='.[test]'
# uv resolves, downloads and unpacks in parallel (about 5x less time than pip for the test
# extras); pip is the fallback. Either compiles the bytecode now: every `keyramp run` a test
# starts is a fresh interpreter, and without .pyc files each would compile its imports again.
# Their chatter (build-backend warnings) only matters when the install fails.
py_install() {
  if .venv/bin/python -m pip install -q uv >"$logs/pip" 2>&1 \
      && .venv/bin/python -m uv pip install -q --python .venv/bin/python --compile-bytecode -e "$target" >"$logs/uv" 2>&1; then
    return 0
  fi
  .venv/bin/python -m pip install -q -e "$target" >"$logs/pip" 2>&1 || {
    cat "$logs/uv" "$logs/pip" >&2 2>/dev/null; echo "setup: pip install failed" >&2; return 1; }
}
py_install || exit 1
.venv/bin/python -c 'import keyramp, locust' || { echo "setup: installing keyramp failed" >&2; exit 1; }

if ! command -v gcloud >/dev/null 2>&1 || ! command -v java >/dev/null 2>&1; then
  echo "setup: the Google Cloud CLI (gcloud) and Java 17 are needed for the official emulators;" \
       "or run them with 'docker compose up emulators' and export the *_EMULATOR_HOST variables" >&2
fi
if [ -n "$apt_pid" ]; then
  wait "$apt_pid" || true
  cat "$logs/apt" >&2
fi
exit 0
