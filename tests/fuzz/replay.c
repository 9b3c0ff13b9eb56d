/* Replays fuzz inputs without libFuzzer: calls the harness's
 * LLVMFuzzerTestOneInput once on every regular file of each directory (or
 * file) named on the command line, in name order, with no mutation. A
 * missing directory counts as empty (a reader with no past crashes). A
 * crash, a sanitizer report or a harness abort ends the run with the
 * input's name printed first; otherwise prints the count and exits 0. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? 2 * cap : 65536;
            uint8_t *b = realloc(buf, cap);
            if (!b) {
                fprintf(stderr, "%s: out of memory\n", path);
                free(buf);
                fclose(f);
                return -1;
            }
            buf = b;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    const int bad = ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "%s: read error\n", path);
        free(buf);
        return -1;
    }
    fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
    /* a copy of exactly n bytes, so that ASan sees a read past the input */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(buf);
        return -1;
    }
    if (n) memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv)
{
    int files = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st)) continue; /* no such directory: nothing to replay */
        if (S_ISREG(st.st_mode)) {
            if (run_file(argv[i])) return 1;
            files++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d) {
            perror(argv[i]);
            return 1;
        }
        char **names = NULL;
        size_t n = 0, cap = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.') continue; /* ., .., and .gitkeep-style files */
            if (n == cap) {
                cap = cap ? 2 * cap : 64;
                char **nn = realloc(names, cap * sizeof *names);
                if (!nn) return 1;
                names = nn;
            }
            size_t l = strlen(argv[i]) + strlen(e->d_name) + 2;
            if (!(names[n] = malloc(l))) return 1;
            snprintf(names[n++], l, "%s/%s", argv[i], e->d_name);
        }
        closedir(d);
        if (n) qsort(names, n, sizeof *names, by_name);
        for (size_t k = 0; k < n; k++) {
            if (!stat(names[k], &st) && S_ISREG(st.st_mode)) {
                if (run_file(names[k])) return 1;
                files++;
            }
            free(names[k]);
        }
        free(names);
    }
    fprintf(stderr, "replay: %d inputs, no crash\n", files);
    return 0;
}
