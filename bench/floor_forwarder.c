/* The kernel's floor for bench/proxy.py: bench/floor_forwarder.py's loop in C, so the
 * row shows what one wake-up, read and write per message cost on this machine without
 * Python. A reference row only, built by bench/proxy.py when a C compiler is there.
 *
 *     cc -O2 -pthread -o floor_forwarder_c bench/floor_forwarder.c
 *     ./floor_forwarder_c -- AGENT [ARGS...]
 */
#include <pthread.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

enum { READ_BYTES = 64 * 1024 };

static void copy(int source, int target) {
    static __thread char buffer[READ_BYTES];
    for (;;) {
        ssize_t got = read(source, buffer, sizeof buffer);
        if (got <= 0)
            return;
        for (ssize_t done = 0; done < got;) {
            ssize_t wrote = write(target, buffer + done, (size_t)(got - done));
            if (wrote <= 0)
                return;
            done += wrote;
        }
    }
}

static int agent_in;

static void *from_client(void *unused) {
    (void)unused;
    copy(0, agent_in);
    close(agent_in);
    return NULL;
}

int main(int argc, char **argv) {
    int first = 1;
    while (first < argc && strcmp(argv[first], "--") != 0)
        first++;
    if (first + 1 >= argc)
        return 2;
    int to_agent[2], from_agent[2];
    if (pipe(to_agent) || pipe(from_agent))
        return 1;
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        dup2(to_agent[0], 0);
        dup2(from_agent[1], 1);
        close(to_agent[0]); close(to_agent[1]); close(from_agent[0]); close(from_agent[1]);
        execvp(argv[first + 1], argv + first + 1);
        _exit(127);
    }
    close(to_agent[0]);
    close(from_agent[1]);
    agent_in = to_agent[1];
    pthread_t thread;
    pthread_create(&thread, NULL, from_client, NULL);
    copy(from_agent[0], 1);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
