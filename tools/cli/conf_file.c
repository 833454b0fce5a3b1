/*
 * -F FILE's lines (see conf_file.h). Stateless.
 */
#include "conf_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

int kc_cli_conf_parse(const char *text, size_t len, kc_cli_conf_pair_fn fn, void *opaque, char *why,
                      size_t why_len)
{
    char line[4096];
    int no = 0;
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) : len, n = end - at;
        no++;
        if (memchr(text + at, '\0', n)) {
            snprintf(why, why_len, "line %d: a NUL byte (not a text file?)", no);
            return -1;
        }
        if (n >= sizeof line) {
            snprintf(why, why_len, "line %d: longer than %zu bytes", no, sizeof line - 1);
            return -1;
        }
        memcpy(line, text + at, n);
        line[n] = '\0';
        at = end + 1;
        char *s = line, *e = line + n;
        while (s < e && blank(*s))
            s++;
        while (e > s && blank(e[-1]))
            *--e = '\0';
        if (s == e || *s == '#')
            continue;
        char *eq = strchr(s, '=');
        if (!eq || eq == s) {
            snprintf(why, why_len, "line %d: expected key=value, got '%.60s'", no, s);
            return -1;
        }
        char *ke = eq, *v = eq + 1;
        while (ke > s && blank(ke[-1]))
            ke--;
        *ke = '\0';
        while (blank(*v))
            v++;
        int rc = fn(opaque, s, v, no);
        if (rc)
            return rc;
    }
    return 0;
}

const char *kc_cli_default_conf_file(char *buf, size_t len)
{
    const char *env = getenv("KCAT_CONFIG");
    if (env && *env) {
        snprintf(buf, len, "%s", env);
        return buf;
    }
    const char *home = getenv("HOME");
    if (!home || !*home)
        return NULL;
    int n = snprintf(buf, len, "%s/.config/kcat.conf", home);
    return n > 0 && (size_t)n < len && access(buf, F_OK) == 0 ? buf : NULL;
}
