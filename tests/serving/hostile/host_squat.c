/* Item 14: another user binds the name memobs would claim first.
   host_squat run PATH: (as root) starts "setpriv --reuid=nobody
   --regid=nogroup --clear-groups host_squat bind PID PATH" for its own
   pid, waits until it has bound, then starts memobs (MEMOBS_SUMMARY=PATH
   from the caller), records and exits; stdout: "squatted NAME".
   host_squat bind PID PATH: binds the claim name of PATH in process PID
   (computed as memobs 1.0 computes it: "memobs-out.PID.HASH", the FNV-1a
   of the folder's device and inode and the file name) with a datagram
   socket and a listening stream socket, says "bound" and holds them until
   its stdin ends. */
#define _GNU_SOURCE
#define MEMOBS_NO_AUTOINIT
#define MEMOBS_IMPLEMENTATION
#include "memobs.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static socklen_t name_of(const char *path, long pid, struct sockaddr_un *a) {
    char dir[4096];
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    unsigned long long h = 1469598103934665603ull, v[2];
    struct stat st;
    size_t i;
    int n;
    if (!slash) strcpy(dir, ".");
    else snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    if (stat(dir, &st) != 0) return 0;
    v[0] = (unsigned long long)st.st_dev;
    v[1] = (unsigned long long)st.st_ino;
    for (i = 0; i < sizeof v; i++) h = (h ^ ((const unsigned char *)v)[i]) * 1099511628211ull;
    for (i = 0; base[i]; i++) h = (h ^ (unsigned char)base[i]) * 1099511628211ull;
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "memobs-out.%ld.%016llx", pid, h);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

int main(int argc, char **argv) {
    struct sockaddr_un a;
    socklen_t len;
    if (argc == 4 && strcmp(argv[1], "bind") == 0) {
        int d = socket(AF_UNIX, SOCK_DGRAM, 0), s = socket(AF_UNIX, SOCK_STREAM, 0);
        char c;
        if (!(len = name_of(argv[3], atol(argv[2]), &a))) return 2;
        if (bind(d, (struct sockaddr *)&a, len) != 0 || bind(s, (struct sockaddr *)&a, len) != 0 || listen(s, 8) != 0)
            return perror("bind"), 2;
        printf("bound uid %d\n", (int)getuid());
        fflush(stdout);
        while (read(0, &c, 1) > 0) {
        }
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "run") == 0) {
        int in[2], out[2], st;
        char pid[24], buf[64] = {0};
        pid_t p;
        if (pipe(in) != 0 || pipe(out) != 0) return 2;
        snprintf(pid, sizeof pid, "%ld", (long)getpid());
        if ((p = fork()) == 0) {
            dup2(in[0], 0);
            dup2(out[1], 1);
            close(in[1]);
            close(out[0]);
            execlp("setpriv", "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", argv[0], "bind", pid,
                   argv[2], (char *)NULL);
            _exit(127);
        }
        close(in[0]);
        close(out[1]);
        if (read(out[0], buf, sizeof buf - 1) <= 0 || strncmp(buf, "bound uid ", 10) != 0)
            return printf("squatter: %s\n", buf[0] ? buf : "no answer"), 2;
        len = name_of(argv[2], (long)getpid(), &a);
        printf("squatted @%.*s by %s", (int)(len - offsetof(struct sockaddr_un, sun_path) - 1), a.sun_path + 1, buf);
        fflush(stdout);
        memobs_init(); /* the claims are made here */
        MEMOBS_RECORD_H2D(4096, 1);
        close(in[1]);
        waitpid(p, &st, 0);
        return 0;
    }
    return 2;
}
