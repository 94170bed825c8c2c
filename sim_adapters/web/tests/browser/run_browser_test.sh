#!/usr/bin/env bash
# The web console's browser test (console.test.mjs), as ctest runs it: checks
# that node, Chromium and the pinned puppeteer-core are there (otherwise
# SKIPPED, exit 77), then runs the test with node's test runner. It downloads
# nothing: scripts/setup-deps installs Chromium and node from Debian and
# puppeteer-core (`npm ci` of package-lock.json, no install scripts, no browser)
# into node_modules beside this script.
#
# With SIMSYNC_BROWSER_TEST=required (CI sets it) a missing tool fails the test
# instead: scripts/setup-deps installs them, so a skip there would hide a bug.
#
# The demo serves TLS with a certificate the test makes with openssl.
#
# usage: run_browser_test.sh SIMSYNC_DEMO SCREENSHOT_PNG DEMO_SCENARIO_YAML
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
demo=${1:?usage: run_browser_test.sh SIMSYNC_DEMO SCREENSHOT_PNG DEMO_SCENARIO_YAML}
shot=${2:?SCREENSHOT_PNG}
scenario=${3:?DEMO_SCENARIO_YAML}
chromium=${CHROMIUM:-/usr/bin/chromium}

skip() {
  if [[ ${SIMSYNC_BROWSER_TEST:-} == required ]]; then
    echo "FAIL: $* (SIMSYNC_BROWSER_TEST=required; scripts/setup-deps installs it)"
    exit 1
  fi
  echo "SKIPPED: $* (scripts/setup-deps installs it)"
  exit 77
}
command -v node >/dev/null || skip "node not found"
command -v openssl >/dev/null || skip "openssl not found (the test's certificate)"
[[ -x $chromium ]] || skip "no Chromium at $chromium"
major=$(node -p 'process.versions.node.split(".")[0]')
((major >= 18)) || skip "node $major is too old (puppeteer-core 24 needs node >= 18)"
[[ -f $here/node_modules/puppeteer-core/package.json ]] || skip "puppeteer-core is not installed in $here/node_modules"
cmp -s "$here/package-lock.json" "$here/node_modules/.simsync-package-lock.json" ||
  skip "$here/node_modules does not match package-lock.json (installed before the lock file changed)"

mkdir -p "$(dirname "$shot")"
rm -f "$shot"
# Run from here: node resolves puppeteer-core from the test file's directory.
SIMSYNC_DEMO=$demo SIMSYNC_DEMO_SCENARIO=$scenario SIMSYNC_SCREENSHOT=$shot CHROMIUM=$chromium PUPPETEER_SKIP_DOWNLOAD=1 \
  node --test --test-reporter=spec "$here/console.test.mjs"
[[ -s $shot ]] || { echo "FAIL: no screenshot at $shot"; exit 1; }
echo "screenshot: $shot"
