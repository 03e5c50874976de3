/*
 * replay_main.c - runs LLVMFuzzerTestOneInput on saved inputs without
 * libFuzzer, printing TAP so that prove runs the fuzz corpus as a test:
 *
 *   fuzz_spec_replay FILE|DIR...
 *
 * A directory stands for the regular files in it, in name order. A crash
 * (or a sanitizer report) ends the run, which prove counts as a failure.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../src/util/util.h"

#define REPLAY_MAX_BYTES (8 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int n_tests, n_failed;

static void replay_file(const char *path)
{
    char *buf = NULL;
    size_t len = 0;
    int rc = sl_read_file(path, REPLAY_MAX_BYTES, &buf, &len);

    n_tests++;
    if (rc < 0) {
        n_failed++;
        printf("not ok %d - replays %s (cannot read: %s)\n", n_tests, path,
               strerror(-rc));
        return;
    }
    LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
    free(buf);
    printf("ok %d - replays %s\n", n_tests, path);
    fflush(stdout);
}

static int only_files_filter(const struct dirent *e)
{
    return e->d_name[0] != '.';
}

static void replay_dir(const char *dir)
{
    struct dirent **names = NULL;
    int n = scandir(dir, &names, only_files_filter, alphasort);

    if (n < 0) {
        n_tests++;
        n_failed++;
        printf("not ok %d - replays %s (cannot list)\n", n_tests, dir);
        return;
    }
    for (int i = 0; i < n; i++) {
        char path[4096];
        struct stat st;

        if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir,
                             names[i]->d_name) < sizeof(path) &&
            stat(path, &st) == 0 && S_ISREG(st.st_mode))
            replay_file(path);
        free(names[i]);
    }
    free(names);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        struct stat st;

        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
            replay_dir(argv[i]);
        else
            replay_file(argv[i]);
    }
    if (n_tests == 0)
        printf("1..0 # SKIP no inputs given\n");
    else
        printf("1..%d\n", n_tests);
    return n_failed ? 1 : 0;
}
