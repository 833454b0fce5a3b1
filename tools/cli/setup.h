/*
 * kconsume's --help text and the configuration its flags make (-b, -G, -o with -G, --workers,
 * --stats, then every -X in order so an explicit -X wins). Main thread only; uses the public
 * configuration API and nothing else.
 */
#ifndef KC_CLI_SETUP_H
#define KC_CLI_SETUP_H

#include <stddef.h>
#include <stdio.h>

#include "kconsume.h"

#include "args.h"

/* The flags, the FORMAT conversions and the exit codes; the caller appends the -X reference. */
void kc_cli_usage(FILE *out);
/* Sets everything the flags say, then validates. -1 after printing to stderr what is wrong
 * (naming the flag or -X key): the exit code is then KC_CLI_EXIT_CONFIG. client_id (len bytes)
 * receives the effective client.id, for %M before joining. */
int kc_cli_build_conf(kc_conf_t *conf, const kc_cli_args_t *a, char *client_id, size_t len);

#endif
