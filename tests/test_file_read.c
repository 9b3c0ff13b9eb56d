/* The library's readers of whole files refuse what is not a regular file
 * (core/file_internal.h): /dev/zero (endless), a FIFO (whose open blocks
 * until a writer comes) and a directory are each "PATH: not a regular
 * file" in the reader's own words, at once and with nothing read. Every
 * call runs in a child process under an alarm and, outside the
 * sanitizers, a cap on its address space, so a reader that blocks or
 * reads without end fails this test instead of hanging it or eating the
 * machine's memory. A regular file still reads whole. */
#include "tg_test.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define TT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TT_ASAN 1
#endif
#endif

/* A reader of a path: true when it read the file, else its message in err. */
typedef bool (*reader_fn)(const char *path, tg_error *err);

static bool file_read(const char *path, tg_error *err)
{
    size_t len = 0;
    char *s = tg_file_read(path, &len, err);
    free(s);
    return s != NULL;
}

static bool st_load(const char *path, tg_error *err)
{
    tg_st_file *f = tg_st_load(path, err);
    tg_st_free(f);
    return f != NULL;
}

static bool tok_llama2c(const char *path, tg_error *err)
{
    tg_tokenizer *t = tg_tok_load_llama2c(path, 0, err);
    tg_tok_free(t);
    return t != NULL;
}

static bool tok_tiktoken(const char *path, tg_error *err)
{
    tg_tokenizer *t = tg_tok_load_tiktoken(path, err);
    tg_tok_free(t);
    return t != NULL;
}

static bool tok_any(const char *path, tg_error *err)
{
    tg_tokenizer *t = tg_tok_load(path, err);
    tg_tok_free(t);
    return t != NULL;
}

static bool token_file(const char *path, tg_error *err)
{
    tg_tokfile *f = tg_tokfile_open(path, TG_TOKFILE_AUTO, 50257, err);
    tg_tokfile_free(f);
    return f != NULL;
}

typedef struct reader {
    const char *name;
    reader_fn fn;
    const char *prefix; /* what the reader puts before "PATH: " */
} reader;

static const reader READERS[] = {
    {"tg_file_read", file_read, ""},
    {"tg_st_load", st_load, "safetensors: "},
    {"tg_tok_load_llama2c", tok_llama2c, "llama2.c tokenizer: "},
    {"tg_tok_load_tiktoken", tok_tiktoken, "tiktoken: "},
    {"tg_tok_load", tok_any, "tokenizer: "},
    {"tg_tokfile_open", token_file, "token file "},
};

/* Runs r on path in a child (an alarm of 5 s; outside the sanitizers at
 * most 1 GiB of address space): its message into msg, or, when the child
 * did not exit by itself (the alarm, out of memory), what stopped it. 1
 * when the reader refused the file, 0 when it read it, -1 when stopped. */
static int run_child(const reader *r, const char *path, char *msg, size_t size)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    fflush(stdout);
    fflush(stderr);
    const pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        signal(SIGALRM, SIG_DFL); /* Check's handler would kill the whole process group */
        alarm(5);
#ifndef TT_ASAN
        const struct rlimit cap = {(rlim_t)1 << 30, (rlim_t)1 << 30};
        setrlimit(RLIMIT_AS, &cap);
#endif
        tg_error err = {0};
        const bool ok = r->fn(path, &err);
        const size_t n = strlen(err.msg) + 1;
        _exit(write(fds[1], err.msg, n) == (ssize_t)n ? !ok : 2);
    }
    close(fds[1]);
    size_t got = 0;
    for (ssize_t k; got + 1 < size && (k = read(fds[0], msg + got, size - 1 - got)) > 0;) got += (size_t)k;
    msg[got] = 0;
    close(fds[0]);
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    if (WIFEXITED(st) && WEXITSTATUS(st) < 2) return WEXITSTATUS(st);
    snprintf(msg, size, "%s",
             WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM ? "still running after 5 s (blocked, or reading "
                                                          "without end)"
                 : WIFSIGNALED(st)                      ? "killed by a signal"
                                                        : "the child could not report");
    return -1;
}

START_TEST(what_is_not_a_regular_file_is_refused_unread)
{
    const char *fifo = tt_path("fifo"), *dir = tt_path("dir");
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    const char *paths[] = {"/dev/zero", fifo, dir};
    char wrong[8192] = ""; /* every reader and path that went wrong, reported together */
    for (size_t i = 0; i < sizeof READERS / sizeof READERS[0]; i++)
        for (size_t p = 0; p < 3; p++) {
            const reader *r = &READERS[i];
            char msg[1024], want[1024];
            const int rc = run_child(r, paths[p], msg, sizeof msg);
            snprintf(want, sizeof want, "%s%s: not a regular file", r->prefix, paths[p]);
            if (rc != 1 || strcmp(msg, want))
                snprintf(wrong + strlen(wrong), sizeof wrong - strlen(wrong), "\n  %s(%s): %s\"%s\"", r->name, paths[p],
                         rc == 0 ? "read it: " : "", msg);
        }
    ck_assert_msg(!wrong[0], "want \"<reader's prefix>PATH: not a regular file\" from each:%s", wrong);
    ck_assert_int_eq(unlink(fifo), 0);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

START_TEST(a_regular_file_reads_whole)
{
    const char *path = tt_path("text.txt");
    tg_error err = {0};
    size_t len = 99;
    ck_assert_int_eq(tg_atomic_write_file(path, "", 0, &err), 0);
    char *s = tg_file_read(path, &len, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    ck_assert_uint_eq(len, 0);
    ck_assert_int_eq(s[0], 0);
    free(s);
    char big[200000];
    for (size_t i = 0; i < sizeof big; i++) big[i] = (char)('a' + i * 7 % 26);
    big[1000] = 0; /* a NUL inside: the length is the file's, not strlen's */
    ck_assert_int_eq(tg_atomic_write_file(path, big, sizeof big, &err), 0);
    s = tg_file_read(path, &len, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    ck_assert_uint_eq(len, sizeof big);
    ck_assert_mem_eq(s, big, sizeof big);
    ck_assert_int_eq(s[len], 0);
    free(s);
    char want[600];
    snprintf(want, sizeof want, "%s: No such file or directory", tt_path("missing.txt"));
    ck_assert_ptr_null(tg_file_read(tt_path("missing.txt"), &len, &err));
    ck_assert_str_eq(err.msg, want);
    ck_assert_int_eq(unlink(path), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("file_read");
    tt_tcase(s, "regular", 60, TT_TESTS(what_is_not_a_regular_file_is_refused_unread, a_regular_file_reads_whole));
    return tt_run_in_tmpdir(s, "tg_file_read_test", false);
}
