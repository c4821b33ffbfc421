/* Item 13: dlopen() a module holding memobs, record (also from a second
   thread it starts, which lives on), dlclose() it, let the thread end,
   then raise(SIGTERM). argv[1]: the module. Prints each step; the caller
   checks the exit status (143: memobs' stop write, then the default
   action; 139 would be a handler left in unmapped code) and the outputs. */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
    void *h;
    void (*rec)(void);
    int (*thr)(int *, pthread_t *);
    int go[2], ready[2], fd[2], i;
    pthread_t t;
    char c = 0;
    if (argc < 2 || pipe(go) != 0 || pipe(ready) != 0) return 2;
    if (!(h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL))) return printf("dlopen: %s\n", dlerror()), 2;
    *(void **)&rec = dlsym(h, "lib_record");
    *(void **)&thr = dlsym(h, "lib_thread");
    if (!rec || !thr) return printf("dlsym failed\n"), 2;
    rec();
    fd[0] = go[0];
    fd[1] = ready[1];
    if (thr(fd, &t) != 0 || read(ready[0], &c, 1) != 1) return printf("thread failed\n"), 2;
    printf("recorded, second thread waiting\n");
    i = dlclose(h);
    printf("dlclose: %d\n", i);
    fflush(stdout);
    if (write(go[1], &c, 1) != 1) return 2;
    pthread_join(t, NULL);
    printf("second thread ended\n");
    fflush(stdout);
    raise(SIGTERM);
    printf("after SIGTERM\n");
    return 0;
}
