/* Item 12: a daemon that closes every descriptor after start-up, then opens
   a pipe and a log (which reuse the numbers memobs' claims had) and forks.
   argv[1]: "fork" (fork at once) or "identity" (memobs_set_identity with a
   new rank first: a %r output is resolved again); argv[2]: the log path.
   MEMOBS_SUMMARY is set by the caller. Prints "child pipe: ok|<error>",
   "child log: ok|<error>", "parent log: ok|<error>"; exit 0 when all ok. */
#define MEMOBS_IMPLEMENTATION
#include "memobs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int p[2], logfd, fd, st, bad = 0;
    char buf[128];
    ssize_t n;
    pid_t pid;
    if (argc < 3) return 2;
    memobs_init();
    MEMOBS_RECORD_H2D(4096, 1);
    for (fd = 3; fd < 1024; fd++) (void)close(fd); /* closefrom(3) */
    if (pipe(p) != 0) return perror("pipe"), 2;
    if ((logfd = open(argv[2], O_WRONLY | O_CREAT | O_APPEND, 0644)) < 0) return perror("open"), 2;
    printf("fds: pipe %d %d, log %d\n", p[0], p[1], logfd);
    if (strcmp(argv[1], "identity") == 0) memobs_set_identity("job", 1, 0, 2);
    fflush(stdout);
    if ((pid = fork()) < 0) return perror("fork"), 2;
    if (pid == 0) {
        char c;
        int e0 = fcntl(p[0], F_GETFD) >= 0 ? 0 : errno; /* the read end, still the pipe's */
        int e1 = write(p[1], "x", 1) == 1 ? 0 : errno;
        int e2 = write(logfd, "child\n", 6) == 6 ? 0 : errno;
        (void)c;
        printf("child pipe: %s %s\nchild log: %s\n", e0 ? strerror(e0) : "ok", e1 ? strerror(e1) : "ok",
               e2 ? strerror(e2) : "ok");
        fflush(stdout);
        _exit(e0 || e1 || e2);
    }
    alarm(20); /* a read that never ends (its descriptor replaced) fails the test */
    n = read(p[0], buf, 1);
    if (n != 1) printf("parent read: %s\n", n < 0 ? strerror(errno) : "end of file"), bad = 1;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) bad = 1;
    if (write(logfd, "parent\n", 7) != 7) printf("parent log: %s\n", strerror(errno)), bad = 1;
    else printf("parent log: ok\n");
    return bad;
}
