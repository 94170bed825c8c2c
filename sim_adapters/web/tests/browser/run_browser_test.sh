#!/usr/bin/env bash
# The web console's browser test (console.test.mjs), as ctest runs it: checks
# that node, npm and Chromium are there (otherwise SKIPPED, exit 77), installs
# the pinned puppeteer-core into WORK_DIR with `npm ci` (only when the lock file
# changed; from npm's cache when it has it; no install scripts, no browser
# download), then runs the test with node's test runner.
#
# With SIMSYNC_BROWSER_TEST=required (CI sets it) a missing tool fails the test
# instead: scripts/setup-deps installs them, so a skip there would hide a bug.
#
# usage: run_browser_test.sh SIMSYNC_DEMO WORK_DIR SCREENSHOT_PNG
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
demo=${1:?usage: run_browser_test.sh SIMSYNC_DEMO WORK_DIR SCREENSHOT_PNG}
work=${2:?WORK_DIR}
shot=${3:?SCREENSHOT_PNG}
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
command -v npm >/dev/null || skip "npm not found"
[[ -x $chromium ]] || skip "no Chromium at $chromium"
major=$(node -p 'process.versions.node.split(".")[0]')
((major >= 18)) || skip "node $major is too old (puppeteer-core 24 needs node >= 18)"

mkdir -p "$work"
cp "$here/package.json" "$here/package-lock.json" "$here/console.test.mjs" "$work/"
if ! cmp -s "$here/package-lock.json" "$work/node_modules/.simsync-package-lock.json" 2>/dev/null; then
  echo "run_browser_test: npm ci in $work"
  (cd "$work" && npm ci --no-audit --no-fund --ignore-scripts --prefer-offline --loglevel=error)
  cp "$here/package-lock.json" "$work/node_modules/.simsync-package-lock.json"
fi
rm -f "$shot"
cd "$work"
SIMSYNC_DEMO=$demo SIMSYNC_SCREENSHOT=$shot CHROMIUM=$chromium node --test --test-reporter=spec console.test.mjs
[[ -s $shot ]] || { echo "FAIL: no screenshot at $shot"; exit 1; }
echo "screenshot: $shot"
