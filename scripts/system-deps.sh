#!/usr/bin/env bash
# System packages meta-agent's sandboxes need, installed with apt-get when missing.
#
#   scripts/system-deps.sh            install what is missing (root + apt-get), or say exactly what to install
#   scripts/system-deps.sh --check    only report; exit 1 if something is missing
#
#   bubblewrap   the `bwrap` sandbox: every harness command runs in it where no Docker engine answers
#   docker.io    the `docker` sandbox backend and its tests (the tests start a private dockerd)
#   debootstrap  builds the docker backend's base image without an image registry
#   chromium     the headless browser the test suite loads the lineage page in
#   npm          installs the external coders (--coder claude-code | codex) into .venv/coders
#
# META_AGENT_SYSTEM_DEPS=bwrap limits this to bubblewrap (no Docker backend, no test suite: enough to run);
# META_AGENT_SYSTEM_DEPS_PATH overrides where the commands are looked for (default: PATH + sbin).
# `make setup` runs this first, so `make test` and `make demo` provision a fresh machine; .ci/run
# goes through the same path.
set -uo pipefail

check_only=0
[ "${1:-}" = "--check" ] && check_only=1

# package -> the command that proves it is installed
declare -A provides=([bubblewrap]=bwrap [docker.io]=dockerd [debootstrap]=debootstrap [chromium]=chromium [npm]=npm)
declare -A why=(
  [bubblewrap]="the bwrap sandbox that runs every harness command"
  [docker.io]="the docker sandbox backend and its tests"
  [debootstrap]="building the docker backend's image without a registry"
  [chromium]="the test that loads the lineage page in a real (headless) browser"
  [npm]="installing the Claude Code and Codex CLI coders (node runs them in the sandbox)"
)
wanted=(bubblewrap docker.io debootstrap chromium npm)
[ "${META_AGENT_SYSTEM_DEPS:-all}" = "bwrap" ] && wanted=(bubblewrap)

# Where the commands are looked for: PATH plus the sbin dirs a non-root PATH often lacks.
search_path="${META_AGENT_SYSTEM_DEPS_PATH:-$PATH:/usr/sbin:/sbin}"
missing=()
for pkg in "${wanted[@]}"; do
  PATH="$search_path" command -v "${provides[$pkg]}" >/dev/null 2>&1 || missing+=("$pkg")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "system-deps: ${wanted[*]} already installed; nothing to do"
  exit 0
fi

explain() {
  for pkg in "${missing[@]}"; do echo "  $pkg: ${why[$pkg]}" >&2; done
}

if [ $check_only -eq 1 ]; then
  echo "system-deps: missing ${missing[*]}:" >&2
  explain
  exit 1
fi

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  reason="not root"
  [ "$(id -u)" -eq 0 ] && reason="no apt-get on this system"
  {
    echo "system-deps: cannot install ${missing[*]} ($reason). meta-agent needs:"
    explain
    echo "Install them as an administrator, e.g.: sudo apt-get install -y ${missing[*]}"
    echo "(other systems: the same packages from your package manager; bubblewrap alone is enough"
    echo " to run meta-agent: re-run with META_AGENT_SYSTEM_DEPS=bwrap)"
  } >&2
  exit 1
fi

echo "system-deps: installing ${missing[*]} with apt-get (up to about 400 MB of disk, a few minutes)"
export DEBIAN_FRONTEND=noninteractive
if ! apt-get update -q; then
  echo "system-deps: 'apt-get update' failed (see its error above); ${missing[*]} not installed" >&2
  exit 1
fi
if ! apt-get install -y -q --no-install-recommends "${missing[@]}"; then
  echo "system-deps: 'apt-get install ${missing[*]}' failed (see its error above)" >&2
  exit 1
fi
for pkg in "${missing[@]}"; do
  if [ "$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null)" != "installed" ]; then
    echo "system-deps: apt-get reported success but $pkg is not installed" >&2
    exit 1
  fi
done
echo "system-deps: installed ${missing[*]}"
