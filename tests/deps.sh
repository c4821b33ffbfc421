#!/usr/bin/env bash
# Installs what `make test` needs when a fresh machine lacks it (Debian
# packages; needs root and apt-get). Quiet when everything is there.
need=()
command -v clang >/dev/null || need+=(clang)
command -v clang++ >/dev/null || need+=(clang)
command -v cmake >/dev/null || need+=(cmake)
command -v pkg-config >/dev/null || need+=(pkg-config)
command -v python3 >/dev/null || need+=(python3)
command -v g++ >/dev/null || need+=(g++)
# CPython's headers and libpython for memobs_python.h (python3-config)
command -v python3-config >/dev/null || need+=(python3-dev)
# a venv with pip (tests/python/test_pip.sh: python3 -m venv; Debian splits it out)
python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
# PyTorch on the CPU under the system Python (tests/python/test_torch.sh: memobs.torch)
/usr/bin/python3 -c 'import torch' 2>/dev/null || need+=(python3-torch)
# prometheus_client under the system Python (tests/python/test_prom_collector.sh:
# memobs.prometheus; tests/serving/test_prom_multiproc.sh: its multiprocess
# mode), and that Python's headers for the package built there
/usr/bin/python3 -c 'import prometheus_client' 2>/dev/null || need+=(python3-prometheus-client)
[ -x /usr/bin/python3-config ] || need+=(python3-dev)
# promtool (tests/serving/test_prom.sh: `promtool check metrics`) and the server
# (tests/serving/test_dashboard.sh), from Debian's prometheus
command -v promtool >/dev/null || need+=(prometheus)
command -v prometheus >/dev/null || need+=(prometheus)
# node_exporter's textfile collector (tests/serving/test_dashboard.sh)
command -v prometheus-node-exporter >/dev/null || need+=(prometheus-node-exporter)
# curl (tests/serving/test_dashboard.sh: waits for the servers)
command -v curl >/dev/null || need+=(curl)
# headless Chromium (tests/outputs/test_html.sh: opens the HTML report, screenshots)
command -v chromium >/dev/null || need+=(chromium)
[ ${#need[@]} -eq 0 ] && exit 0
echo "tests/deps.sh: installing ${need[*]}" >&2
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq >/dev/null 2>&1
    # all at once; if that fails, one by one, so one package that cannot be
    # had does not keep the others out
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null 2>&1; then
        for p in "${need[@]}"; do
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$p" >/dev/null 2>&1 ||
                echo "tests/deps.sh: could not install $p" >&2
        done
    fi
else
    echo "tests/deps.sh: cannot install (not root or no apt-get); tests that need them will fail" >&2
fi
exit 0
