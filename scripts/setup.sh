#!/usr/bin/env bash
# Installs the Debian packages Switchboard's full test suite and embedded engines use, if missing:
#   postgresql            the scale-out store (tests start a throwaway cluster on loopback)
#   pocketsphinx(-en-us)  embedded speech recognition (model inside the package)
#   flite, sox            offline speech for test audio, and audio conversion
#   chromium              the real browser for the browser SDK and dashboard tests
#   haproxy               the load balancer of the multi-server test (and of docs/deploy.md)
#   baresip               a real SIP phone for the telephony tests (calls the SIP endpoint, answers its calls)
#   coturn                a real TURN server: the WebRTC test of a caller whose UDP is blocked (docs/deploy.md)
# Runs apt-get only when something is missing; needs root (or sudo).
set -euo pipefail
need=()
[ -x /usr/lib/postgresql/*/bin/initdb ] 2>/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
command -v pocketsphinx_continuous >/dev/null 2>&1 || need+=(pocketsphinx)
[ -d /usr/share/pocketsphinx/model/en-us ] || need+=(pocketsphinx-en-us)
command -v flite >/dev/null 2>&1 || need+=(flite)
command -v sox >/dev/null 2>&1 || need+=(sox)
[ -x /usr/bin/chromium ] || need+=(chromium)
command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || need+=(haproxy)
command -v baresip >/dev/null 2>&1 || need+=(baresip)
command -v turnserver >/dev/null 2>&1 || need+=(coturn)
# Only for `npm run bench`, with SETUP_BENCH=1: wrk (the HTTP load), and pulseaudio(-utils): the
# browser bench plays Chromium to a private sound server's null sink and records it with parec, to
# time what comes out of the speaker rather than only what its own taps see (bench/speaker.ts)
[ "${SETUP_BENCH:-0}" = 1 ] && ! command -v wrk >/dev/null 2>&1 && need+=(wrk)
[ "${SETUP_BENCH:-0}" = 1 ] && ! command -v pulseaudio >/dev/null 2>&1 && need+=(pulseaudio)
[ "${SETUP_BENCH:-0}" = 1 ] && ! command -v parec >/dev/null 2>&1 && need+=(pulseaudio-utils)
if [ ${#need[@]} -eq 0 ]; then
  echo "setup: all Debian packages present"
  exit 0
fi
echo "setup: installing ${need[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
echo "setup: done"
