# mk/tests.mk - the test programs that the suites build the same way, as
# make rules: each program's source and libraries are one line below, each
# build flavour's compiler and flags one variable, and make rebuilds a
# program only when its source, a header it includes (the compiler's -MMD
# list, read for the programs asked for only: suites side by side never read
# a list another one is writing), this file, or the compilers (CC, CXX)
# changed.
#
# The suites ask for their programs through tests/lib.sh's test_make (or
# tests/four_ways.sh), which runs
#   make -s -f mk/tests.mk TESTS_B=$BUILD CC=$CC CXX=$CXX $BUILD/PROGRAM_WAY
# (BUILD as tests/run.sh sets it, build/tests by default). Included by the
# Makefile too, so `make build/tests/core_c99` makes one by hand.

TESTS_B ?= $(BUILD)/tests
TESTS_W := -Wall -Wextra -Werror -I.

# The flavours (the WAY of a program's name): compiler and flags
TESTS_WAY_c99 = $(CC) -std=c99 -O2 -g
TESTS_WAY_cxx17 = $(CXX) -x c++ -std=c++17 -O2 -g
TESTS_WAY_asan = $(CC) -std=c11 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	-fno-sanitize-recover=undefined
TESTS_WAY_asan+ubsan = $(TESTS_WAY_asan)
TESTS_WAY_tsan = $(CC) -std=c11 -O1 -g -fsanitize=thread
TESTS_WAY_c++17 = $(TESTS_WAY_cxx17)
TESTS_WAY_table8 = $(CC) -std=c11 -O2 -g -DMEMOBS_MAX_REGIONS=8
TESTS_WAY_disabled = $(CC) -std=c99 -O2 -g -DMEMOBS_DISABLE
TESTS_WAY_disabled-c++ = $(CXX) -x c++ -std=c++17 -O2 -g -DMEMOBS_DISABLE
# the suite label a way gets in TEST_SUITE ("core-c++17")
TESTS_LABEL_c99 := c99
TESTS_LABEL_cxx17 := c++17
TESTS_LABEL_asan := asan+ubsan
TESTS_LABEL_tsan := tsan

# tests_prog PROGRAM SOURCE LIBS WAYS [SUITE [LABELS]]: $(TESTS_B)/PROGRAM_WAY
# for each WAY, built from SOURCE with LIBS last; with SUITE, -DTEST_SUITE=
# "SUITE-LABEL" (LABEL as TESTS_LABEL_WAY says, or the way's own name when
# LABELS is "ways")
define tests_prog
$(foreach w,$(4),$(eval $(call tests_rule,$(1)_$(w),$(2),$(3),$(w),$(if $(5),$(5)-$(if $(6),$(w),$(TESTS_LABEL_$(w)))))))
endef
# tests_rule TARGET SOURCE LIBS WAY [SUITE-LABEL]
define tests_rule
$(TESTS_B)/$(1): $(2) mk/tests.mk $(TESTS_B)/$(1).cc
	$$(TESTS_WAY_$(4)) $$(TESTS_EXTRA) $(TESTS_W) $(if $(5),-DTEST_SUITE='"$(5)"') -o $$@ $(2) $(3) -MMD -MP -MF $$@.d
$(TESTS_B)/$(1).cc: tests-force
	@mkdir -p $$(@D) && { echo '$$(CC) $$(CXX)' | cmp -s - $$@ || echo '$$(CC) $$(CXX)' >$$@; }
$(if $(filter $(TESTS_B)/$(1),$(MAKECMDGOALS)),-include $(TESTS_B)/$(1).d)
endef
.PHONY: tests-force
tests-force:

# The programs: PROGRAM (under $(TESTS_B)), SOURCE, LIBS, WAYS, SUITE, LABELS;
# a flavour's extra flags for one program as TESTS_EXTRA of its targets
TESTS_FOUR := c99 cxx17 asan tsan
$(call tests_prog,core,tests/core/test_core.c,-pthread -lm,$(TESTS_FOUR),core)
$(call tests_prog,storage,tests/core/test_storage.c,-pthread -lm,$(TESTS_FOUR),storage)
$(call tests_prog,attribution,tests/core/test_attribution.c,-pthread -lm,$(TESTS_FOUR),attribution)
$(call tests_prog,inflight,tests/core/test_inflight.c,-pthread -lm,$(TESTS_FOUR),inflight)
$(call tests_prog,track/track,tests/tracker/test_track.c,-pthread -rdynamic -lm,$(TESTS_FOUR),track)
$(call tests_prog,table/table,tests/tracker/test_table.c,-pthread -lm,$(TESTS_FOUR),table)
$(call tests_prog,prom/prom,tests/serving/test_prom.c,-pthread -lm,$(TESTS_FOUR),prom)
$(call tests_prog,requests/requests,tests/serving/test_requests.c,-pthread,c99 cxx17 asan+ubsan tsan,requests,ways)
$(call tests_prog,trace_write/tw,tests/outputs/test_trace_write.c,-pthread,c99 cxx17 asan+ubsan tsan)
$(call tests_prog,timeline/timeline,tests/outputs/test_timeline.c,-pthread,$(TESTS_FOUR),timeline)
$(call tests_prog,request_outputs/req_out,tests/outputs/test_request_outputs.c,-pthread,$(TESTS_FOUR),request-outputs)
$(call tests_prog,timeline/clock,tests/outputs/test_clock.c,-pthread,c99 tsan,clock)
$(call tests_prog,sampler/sampler,tests/tracker/test_sampler.c,-pthread -rdynamic -lm,$(TESTS_FOUR),sampler)
$(call tests_prog,cgroup/cgroup,tests/tracker/test_cgroup.c,-pthread -lm,$(TESTS_FOUR),cgroup)
$(TESTS_B)/sampler/sampler_asan $(TESTS_B)/sampler/sampler_tsan: TESTS_EXTRA := -DTEST_FORK_NO_THREADS
$(call tests_prog,crash/crash,tests/serving/crash/crash.c,-pthread -lm,$(TESTS_FOUR))
$(TESTS_B)/crash/crash_c99 $(TESTS_B)/crash/crash_cxx17: TESTS_EXTRA := -DCRASH_INTERPOSE
$(call tests_prog,churn/churn,tests/core/test_churn.c,-pthread,c99 cxx17 asan+ubsan tsan,churn,ways)
$(call tests_prog,regions/regions,tests/core/test_regions.c,-pthread,c99 c++17 asan+ubsan tsan table8 disabled disabled-c++,regions,ways)
$(call tests_prog,coll/coll,tests/nccl/test_coll.c,-pthread -lm,c99 c++17 asan+ubsan tsan disabled disabled-c++,coll,ways)
