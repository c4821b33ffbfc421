# mk/install.mk - install / uninstall rules for memobs (included by the
# top-level Makefile).
#
#   make install   [PREFIX=/usr/local] [DESTDIR=]
#   make uninstall [PREFIX=/usr/local] [DESTDIR=]
#
# Installs, under $(DESTDIR)$(PREFIX):
#   include/memobs*.h                       every header at the repo root
#   lib/pkgconfig/memobs.pc                 from memobs.pc.in
#   lib/cmake/memobs/memobsConfig.cmake     from cmake/memobsConfig.cmake.in
#   lib/cmake/memobs/memobsConfigVersion.cmake
#                                           from cmake/memobsConfigVersion.cmake.in
#   lib/libmemobs_preload.so                the LD_PRELOAD library, built by
#                                           `make preload` (mk/preload.mk)
#   bin/memobs-run                          its launcher, preload/memobs-run
#   share/memobs/grafana/memobs.json        the Grafana dashboard (docs/dashboard.md)
#   lib/libnccl-profiler-memobs.so          the NCCL profiler plugin, built by
#                                           `make nccl-plugin` (mk/nccl.mk); no
#                                           libnccl-profiler.so link (that name
#                                           would take over another plugin's)
# The preload library is built against the CUDA Toolkit's headers
# (CUDA_INC, default /usr/local/cuda/include): where they are missing, or
# with MEMOBS_INSTALL_PRELOAD=0, it is left out (one line says so) and the
# launcher is still installed (it takes --lib PATH).
# The CMake package finds its headers relative to its own location, so the
# installed tree can be moved; the pkg-config file records PREFIX.
#
# Variables of our own are MEMOBS_* or memobs_* so that they do not collide
# with the including Makefile.

# Directory holding this repository, whatever the including Makefile's
# current directory: "." when included as mk/install.mk from the root.
memobs_mkdir := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
MEMOBS_SRCDIR := $(patsubst %/,%,$(dir $(memobs_mkdir)))

# Do not let our rules become the default goal of the including Makefile.
memobs_saved_default_goal := $(.DEFAULT_GOAL)

PREFIX ?= /usr/local

# Version, from the line   #define MEMOBS_VERSION "x.y.z"   of memobs.h
# (0.0.0 when there is none). The pattern avoids a literal hash sign.
ifndef MEMOBS_VERSION
MEMOBS_VERSION := $(or $(shell sed -n 's/^[[:space:]]*.[[:space:]]*define[[:space:]][[:space:]]*MEMOBS_VERSION[[:space:]][[:space:]]*"\([^"]*\)".*/\1/p' '$(MEMOBS_SRCDIR)/memobs.h' 2>/dev/null | head -n 1),0.0.0)
endif

# Headers: every memobs*.h at the repository root (evaluated when used).
MEMOBS_HEADERS = $(sort $(wildcard $(MEMOBS_SRCDIR)/memobs*.h))

memobs_prefix   = $(DESTDIR)$(PREFIX)
memobs_incdir   = $(memobs_prefix)/include
memobs_bindir   = $(memobs_prefix)/bin
memobs_libdir   = $(memobs_prefix)/lib
memobs_pcdir    = $(memobs_prefix)/lib/pkgconfig
memobs_cmakedir = $(memobs_prefix)/lib/cmake/memobs
memobs_sharedir = $(memobs_prefix)/share/memobs

# Escape a value for the replacement side of a sed s|...|...| command.
memobs_sed_escape = $(subst |,\|,$(subst &,\&,$(subst \,\\,$(1))))
memobs_subst = sed -e 's|@prefix@|$(call memobs_sed_escape,$(PREFIX))|g' \
                   -e 's|@MEMOBS_VERSION@|$(call memobs_sed_escape,$(MEMOBS_VERSION))|g'

memobs_templates = $(MEMOBS_SRCDIR)/memobs.pc.in \
                   $(MEMOBS_SRCDIR)/cmake/memobsConfig.cmake.in \
                   $(MEMOBS_SRCDIR)/cmake/memobsConfigVersion.cmake.in

# The preload library: built by mk/preload.mk's rule, when the CUDA headers
# are there (read here, before mk/preload.mk sets its own default).
CUDA_INC ?= /usr/local/cuda/include
memobs_preload_so := $(BUILD)/libmemobs_preload.so
ifndef MEMOBS_INSTALL_PRELOAD
MEMOBS_INSTALL_PRELOAD := $(if $(wildcard $(CUDA_INC)/cuda_runtime_api.h),1,0)
endif
memobs_install_so := $(if $(filter 1,$(MEMOBS_INSTALL_PRELOAD)),$(memobs_preload_so))

# The NCCL profiler plugin: needs no CUDA or NCCL header, always installed.
memobs_nccl_so := $(BUILD)/libnccl-profiler-memobs.so

.PHONY: install uninstall

install: $(memobs_templates) $(MEMOBS_SRCDIR)/preload/memobs-run $(MEMOBS_SRCDIR)/grafana/memobs.json \
         $(memobs_install_so) $(memobs_nccl_so)
	$(if $(MEMOBS_HEADERS),,$(error memobs install: no memobs*.h in $(MEMOBS_SRCDIR)))
	install -d '$(memobs_incdir)' '$(memobs_pcdir)' '$(memobs_cmakedir)'
	install -m 644 $(MEMOBS_HEADERS) '$(memobs_incdir)/'
	memobs_tmp=$$(mktemp -d "$${TMPDIR:-/tmp}/memobs-install.XXXXXX") || exit 1; \
	trap 'rm -rf "$$memobs_tmp"' EXIT; \
	$(memobs_subst) '$(MEMOBS_SRCDIR)/memobs.pc.in' > "$$memobs_tmp/memobs.pc" && \
	$(memobs_subst) '$(MEMOBS_SRCDIR)/cmake/memobsConfig.cmake.in' > "$$memobs_tmp/memobsConfig.cmake" && \
	$(memobs_subst) '$(MEMOBS_SRCDIR)/cmake/memobsConfigVersion.cmake.in' > "$$memobs_tmp/memobsConfigVersion.cmake" && \
	install -m 644 "$$memobs_tmp/memobs.pc" '$(memobs_pcdir)/memobs.pc' && \
	install -m 644 "$$memobs_tmp/memobsConfig.cmake" "$$memobs_tmp/memobsConfigVersion.cmake" '$(memobs_cmakedir)/' && \
	sed -e 's|^version=.*|version=$(call memobs_sed_escape,$(MEMOBS_VERSION))|' '$(MEMOBS_SRCDIR)/preload/memobs-run' > "$$memobs_tmp/memobs-run" && \
	install -d '$(memobs_bindir)' && \
	install -m 755 "$$memobs_tmp/memobs-run" '$(memobs_bindir)/memobs-run'
	install -d '$(memobs_sharedir)/grafana'
	install -m 644 '$(MEMOBS_SRCDIR)/grafana/memobs.json' '$(memobs_sharedir)/grafana/memobs.json'
	install -d '$(memobs_libdir)'
	install -m 755 '$(memobs_nccl_so)' '$(memobs_libdir)/libnccl-profiler-memobs.so'
	$(if $(memobs_install_so),install -m 755 '$(memobs_install_so)' '$(memobs_libdir)/libmemobs_preload.so',\
	    @echo 'memobs install: libmemobs_preload.so left out ($(if $(wildcard $(CUDA_INC)/cuda_runtime_api.h),MEMOBS_INSTALL_PRELOAD=0,no $(CUDA_INC)/cuda_runtime_api.h: set CUDA_INC)); bin/memobs-run will need --lib PATH' >&2)

# Removes what install put there, and the memobs-only CMake and share
# directories when they are left empty; shared directories (include,
# lib/pkgconfig, ...) stay.
uninstall:
	rm -f $(foreach h,$(notdir $(MEMOBS_HEADERS)),'$(memobs_incdir)/$(h)')
	rm -f '$(memobs_pcdir)/memobs.pc'
	rm -f '$(memobs_cmakedir)/memobsConfig.cmake' '$(memobs_cmakedir)/memobsConfigVersion.cmake'
	rm -f '$(memobs_libdir)/libmemobs_preload.so' '$(memobs_libdir)/libnccl-profiler-memobs.so' '$(memobs_bindir)/memobs-run'
	rm -f '$(memobs_sharedir)/grafana/memobs.json'
	if [ -d '$(memobs_cmakedir)' ]; then rmdir '$(memobs_cmakedir)' 2>/dev/null || true; fi
	if [ -d '$(memobs_sharedir)/grafana' ]; then rmdir '$(memobs_sharedir)/grafana' '$(memobs_sharedir)' 2>/dev/null || true; fi

.DEFAULT_GOAL := $(memobs_saved_default_goal)
