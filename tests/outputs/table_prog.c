/* tests/outputs/test_output_table.sh: memobs.h with two test-only rows of the
   output table (MEMOBS__TEST_OUTPUT_ROWS) and their writers, nothing
   else. Each writer appends a line to $TABLE_LOG saying which of the
   files in $TABLE_SEEN (space-separated paths) exist when it runs, then
   writes one line of text. Modes:
     rows        prints each row of memobs__out_info, tab-separated: id,
                 variable, alias, name, binary, api, env, crash
     exit        records a transfer and returns (the exit writes)
     flush       memobs_flush() (its result printed), then no exit outputs
     off         memobs_set_exit_outputs(0), then returns
     file PATH   table_a_file(PATH): the row's *_file call */
#define _POSIX_C_SOURCE 200809L
static void table_pre_b(unsigned which); /* a row's pre is declared before the table (its writer need not be) */
#define MEMOBS__TEST_OUTPUT_ROWS(X)                                                                      \
    X(TEST_A, "MEMOBS_TEST_A", 0, "test output A", 0, table_write_a, 0, "table_a_file", 0, 0, 0)         \
    X(TEST_B, "MEMOBS_TEST_B", "MEMOBS_TEST_B_OLD", "test output B", 1, table_write_b, table_pre_b, 0, 0, 0, 0)
#define MEMOBS_IMPLEMENTATION
#include "../../memobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void table_log(const char *who) {
    const char *log = getenv("TABLE_LOG"), *seen = getenv("TABLE_SEEN");
    char paths[4096], *p, *save = NULL;
    FILE *f;
    if (!log || !(f = fopen(log, "a"))) return;
    fprintf(f, "%s:", who);
    snprintf(paths, sizeof paths, "%s", seen ? seen : "");
    for (p = strtok_r(paths, " ", &save); p; p = strtok_r(NULL, " ", &save))
        if (access(p, F_OK) == 0) fprintf(f, " %s", strrchr(p, '/') ? strrchr(p, '/') + 1 : p);
    fputc('\n', f);
    fclose(f);
}

static int table_write_a(FILE *f, int fmt) {
    table_log("A");
    fprintf(f, "table output A (format %d)\n", fmt);
    return ferror(f) ? MEMOBS_ERR_IO : MEMOBS_OK;
}

static int table_write_b(FILE *f, int fmt) {
    (void)fmt;
    table_log("B");
    fputs("table output B\n", f);
    return ferror(f) ? MEMOBS_ERR_IO : MEMOBS_OK;
}

static void table_pre_b(unsigned which) { table_log(which == MEMOBS__OUT_TEST_B ? "pre B" : "pre ?"); }

/* The row's *_file call, as an exporter's public one is written. */
static int table_a_file(const char *path) { return memobs__output_file(MEMOBS__OUT_TEST_A, path, 0); }

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "exit";
    MEMOBS_RECORD_H2D(4096, 1);
    if (strcmp(mode, "rows") == 0) {
        unsigned i;
        for (i = 0; i < MEMOBS__OUTS; i++) {
            const memobs__output_row_t *r = &memobs__out_info[i];
            printf("%u\t%s\t%s\t%s\t%d\t%s\t%d\t%d\n", i, r->var, r->alias ? r->alias : "-", r->what, r->binary,
                   r->api ? r->api : "-", r->env, r->crash);
        }
        memobs_set_exit_outputs(0);
        return 0;
    }
    if (strcmp(mode, "flush") == 0) {
        printf("flush %d\n", memobs_flush());
        memobs_set_exit_outputs(0);
        return 0;
    }
    if (strcmp(mode, "off") == 0) {
        memobs_set_exit_outputs(0);
        return 0;
    }
    if (strcmp(mode, "file") == 0) {
        printf("file %d\n", table_a_file(argc > 2 ? argv[2] : ""));
        return 0;
    }
    return 0;
}
