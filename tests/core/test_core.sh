#!/usr/bin/env bash
# tests/core/test_core.c built four ways (mk/tests.mk): C99, C++17, ASan+UBSan, TSan.
cd "$(dirname "$0")/../.." || exit 2
exec bash tests/four_ways.sh core
