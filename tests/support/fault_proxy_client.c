/*
 * Child-process handles on the testkit servers for C tests (see fault_proxy_client.h).
 *
 * Owner: the test thread that started the child.
 */
#include "fault_proxy_client.h"

#include <errno.h>
#include <stdbool.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

struct kc_fp {
    pid_t pid;
    char control[108];
    char dir[64];
    char bootstrap[1024];
};

static void binary_path(const char *name, char *out, size_t cap)
{
    const char *dir = getenv("KC_TESTKIT_BIN");
    if (dir) {
        snprintf(out, cap, "%s/%s", dir, name);
        return;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = '\0';
    snprintf(out, cap, "%s/testkit/%s", dirname(self), name);
}

pid_t kc_testkit_spawn(const char *name, const char *const *args, char *bootstrap, size_t cap)
{
    char path[PATH_MAX + 64];
    binary_path(name, path, sizeof path);
    const char *argv[64] = {path};
    int argc = 1;
    for (; args && args[argc - 1] && argc < 63; argc++)
        argv[argc] = args[argc - 1];
    argv[argc] = NULL;
    int pipefd[2];
    if (pipe(pipefd) != 0)
        return -1;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        /* A test that crashes (a sanitizer abort) never reaches kc_testkit_stop: the server
         * goes with it instead of holding the port and the test's output pipe open. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(0); /* the parent was already gone */
        dup2(pipefd[1], STDOUT_FILENO);
        close(pipefd[0]);
        close(pipefd[1]);
        execv(path, (char *const *)argv);
        fprintf(stderr, "exec %s: %s\n", path, strerror(errno));
        _exit(127);
    }
    close(pipefd[1]);
    FILE *f = fdopen(pipefd[0], "r");
    char line[1100];
    bool found = false;
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "BOOTSTRAP=", 10) == 0) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(bootstrap, cap, "%s", line + 10);
            found = true;
            break;
        }
    }
    if (f)
        fclose(f); /* the child's later stdout goes nowhere; it only prints at start */
    if (!found) {
        fprintf(stderr, "%s did not start (no BOOTSTRAP line)\n", path);
        kc_testkit_stop(pid);
        return -1;
    }
    return pid;
}

int kc_testkit_stop(pid_t pid)
{
    int st = 0;
    if (pid <= 0 || kill(pid, SIGTERM) != 0)
        return -1;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

kc_fp_t *kc_fp_start(const char *upstreams)
{
    kc_fp_t *fp = calloc(1, sizeof *fp);
    if (!fp)
        return NULL;
    snprintf(fp->dir, sizeof fp->dir, "/tmp/kc-fp-XXXXXX");
    if (!mkdtemp(fp->dir)) {
        free(fp);
        return NULL;
    }
    snprintf(fp->control, sizeof fp->control, "%s/ctl.sock", fp->dir);
    char map[1024] = "";
    char *list = strdup(upstreams), *save = NULL;
    for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        size_t n = strlen(map);
        snprintf(map + n, sizeof map - n, "%s0=%s", n ? "," : "", t);
    }
    free(list);
    const char *args[] = {"--map", map, "--control", fp->control, NULL};
    fp->pid = kc_testkit_spawn("kc-fault-proxy", args, fp->bootstrap, sizeof fp->bootstrap);
    if (fp->pid < 0) {
        rmdir(fp->dir);
        free(fp);
        return NULL;
    }
    return fp;
}

const char *kc_fp_bootstrap(const kc_fp_t *fp)
{
    return fp->bootstrap;
}

int kc_fp_cmd(kc_fp_t *fp, char *reply, size_t cap, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    strcat(line, "\n");
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", fp->control);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        if (fd >= 0)
            close(fd);
        snprintf(reply, cap, "ERR cannot reach %s", fp->control);
        return -1;
    }
    size_t len = strlen(line), off = 0;
    while (off < len) {
        ssize_t w = write(fd, line + off, len - off);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    size_t n = 0;
    for (ssize_t r; n + 1 < cap && (r = read(fd, reply + n, cap - 1 - n)) > 0;)
        n += (size_t)r;
    close(fd);
    reply[n] = '\0';
    reply[strcspn(reply, "\n")] = '\0';
    return strncmp(reply, "OK", 2) == 0 ? 0 : -1;
}

long kc_fp_stat(kc_fp_t *fp, const char *name)
{
    char reply[2048], key[128];
    if (kc_fp_cmd(fp, reply, sizeof reply, "stats") != 0)
        return -1;
    snprintf(key, sizeof key, " %s=", name);
    const char *p = strstr(reply, key);
    return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

int kc_fp_stop(kc_fp_t *fp)
{
    int st = kc_testkit_stop(fp->pid);
    unlink(fp->control);
    rmdir(fp->dir);
    free(fp);
    return st;
}

int kc_test_proxied_broker(const char *const *args, char *bootstrap, size_t cap, pid_t *pid,
                           kc_fp_t **fp)
{
    *fp = NULL;
    *pid = kc_testkit_spawn("kc-memory-broker", args, bootstrap, cap);
    if (*pid <= 0)
        return -1;
    if (!(*fp = kc_fp_start(bootstrap))) {
        kc_testkit_stop(*pid);
        *pid = -1;
        return -1;
    }
    return 0;
}

int kc_test_proxied_broker_stop(pid_t pid, kc_fp_t *fp)
{
    int rc = fp ? kc_fp_stop(fp) : 0;
    return kc_testkit_stop(pid) || rc;
}
