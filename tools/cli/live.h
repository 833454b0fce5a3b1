/*
 * --live: the per-partition progress table the CLI redraws on stderr about twice a second
 * (partition, position, end, lag, rate, worker, a bar). Pure rendering from rows the caller
 * snapshots, so it is unit-tested. Main thread only.
 */
#ifndef KC_CLI_LIVE_H
#define KC_CLI_LIVE_H

#include <stddef.h>
#include <stdint.h>

#include "format.h"

typedef struct kc_cli_live_row {
    const char *topic;
    int32_t partition;
    int64_t position; /* next offset to print; -1 before the first record */
    int64_t end;      /* -e end mark (high watermark at start); -1 unknown */
    int64_t records;  /* printed from this partition */
    double rate;      /* records/s over the last refresh */
    int worker;       /* worker (kc_worker_id) that ran the last batch; -1 none */
} kc_cli_live_row_t;

/* Appends the table (a header, one line per row, a total line) to out; every line ends with
 * "\x1b[K\n" when ansi (erase leftovers of the previous frame) else "\n". Returns the number of
 * lines written, or -1 when out of memory. */
int kc_cli_live_render(kc_cli_buf_t *out, const kc_cli_live_row_t *rows, size_t n, double secs,
                       int ansi);

#endif
