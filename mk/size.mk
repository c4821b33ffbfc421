# mk/size.mk - `make size` (included by the top-level Makefile).
#
#   make size                   text, data, bss and compile time of the
#                               implementation object (-O2): every exporter,
#                               each MEMOBS_NO_* switch, all of them
#   make size SIZE_REF=6c7c954  adds a row for that revision's memobs.h
.PHONY: size
size:
	@SIZE_REF=$(SIZE_REF) bash bench/size.sh $(BUILD)/size
