/* core: files written all or nothing (core/atomic_file.h). The bytes land
 * whole or not at all; a new file gets 0666 minus the umask and a
 * replaced one keeps its mode; the temporary is "<path>.tmp.<pid>.XXXXXX"
 * beside the path and never outlives a failure (no such directory, an
 * unwritable one, a parent that is a file, a write cut off half-way, a
 * rename over a directory); several files are committed together or
 * aborted together; a failure sticks and names its step. A writer killed
 * with SIGKILL leaves its temporary, and the next write of the same path
 * removes it, and every other temporary of that path whose process is
 * gone, keeping live writers' and other names. */
#include "tg_test.h"

#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define P tt_path /* a file in the scratch directory */

/* The whole file as a NUL-terminated string (malloc'd), its size in *n. */
static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    char *p = malloc(1 << 17);
    *n = fread(p, 1, (1 << 17) - 1, f);
    p[*n] = 0;
    fclose(f);
    return p;
}

static void assert_contents(const char *path, const char *want)
{
    size_t n;
    char *got = slurp(path, &n);
    ck_assert_uint_eq(n, strlen(want));
    ck_assert_str_eq(got, want);
    free(got);
}

static unsigned mode_of(const char *path)
{
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    return st.st_mode & 07777;
}

/* The temporaries in dir. */
static int temporaries(const char *dir) { return tt_count_names(dir, ".tmp."); }

/* The temporary's name is exactly "<path>.tmp.<this process's pid>." and
 * six letters or digits. */
static void assert_temp_name(const tg_atomic_file *f, const char *path)
{
    ck_assert_ptr_nonnull(f->tmp);
    char head[600];
    snprintf(head, sizeof head, "%s.tmp.%d.", path, (int)getpid());
    const size_t n = strlen(head);
    ck_assert_msg(strncmp(f->tmp, head, n) == 0, "temporary %s, want %sXXXXXX", f->tmp, head);
    ck_assert_uint_eq(strlen(f->tmp + n), 6);
    for (const char *c = f->tmp + n; *c; c++)
        ck_assert_msg((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9'), "%s", f->tmp);
    ck_assert_int_eq(access(f->tmp, F_OK), 0);
}

START_TEST(one_file_and_its_mode)
{
    tg_error err = {0};
    /* a new file: 0666 minus the umask, whichever umask */
    mode_t old_mask = umask(022);
    ck_assert_int_eq(tg_atomic_write_file(P("a.txt"), "hello", 5, &err), 0);
    umask(077);
    ck_assert_int_eq(tg_atomic_write_file(P("b.txt"), "", 0, &err), 0);
    umask(old_mask);
    assert_contents(P("a.txt"), "hello");
    assert_contents(P("b.txt"), "");
    ck_assert_uint_eq(mode_of(P("a.txt")), 0644);
    ck_assert_uint_eq(mode_of(P("b.txt")), 0600);
    /* a replaced file keeps its own mode, whatever the umask says */
    ck_assert_int_eq(chmod(P("a.txt"), 0640), 0);
    ck_assert_int_eq(tg_atomic_write_file(P("a.txt"), "bye", 3, &err), 0);
    assert_contents(P("a.txt"), "bye");
    ck_assert_uint_eq(mode_of(P("a.txt")), 0640);
    ck_assert_int_eq(temporaries(tt_dir), 0);
    remove(P("a.txt"));
    remove(P("b.txt"));
}
END_TEST

START_TEST(failures_leave_the_path_alone)
{
    tg_error err = {0};
    ck_assert_int_eq(tg_atomic_write_file(P("old.txt"), "old", 3, &err), 0);

    /* a directory that does not exist: nothing is created */
    ck_assert_int_eq(tg_atomic_write_file(P("no/such/x.txt"), "x", 1, &err), -1);
    ck_assert_msg(strstr(err.msg, "atomic_write_file: '") &&
                      strstr(err.msg,
                             "no/such/x.txt': cannot create a temporary "
                             "file beside it: No such file or directory"),
                  "%s", err.msg);
    ck_assert_int_eq(access(P("no"), F_OK), -1);

    /* a parent that is a regular file */
    ck_assert_int_eq(tg_atomic_write_file(P("old.txt/x.txt"), "x", 1, &err), -1);
    ck_assert_msg(strstr(err.msg, "cannot create a temporary file beside it: Not a directory"), "%s", err.msg);

    /* an unwritable directory (mode 0555). Root passes any mode, so as
     * root the call runs with the effective user nobody. */
    ck_assert_int_eq(mkdir(P("ro"), 0555), 0);
    ck_assert_int_eq(chmod(tt_dir, 0711), 0); /* nobody may pass through the scratch directory */
    const bool root = geteuid() == 0;
    const bool as_nobody = root && seteuid(65534) == 0;
    int rc = 0;
    if (!root || as_nobody) rc = tg_atomic_write_file(P("ro/x.txt"), "x", 1, &err);
    const int back = as_nobody ? seteuid(0) : 0; /* before any assertion: a failed one jumps out */
    ck_assert_int_eq(back, 0);
    ck_assert_int_eq(chmod(tt_dir, 0700), 0);
    if (root && !as_nobody) {
        printf("failures_leave_the_path_alone: skipped the unwritable directory (root, and seteuid(nobody) "
               "failed: %s)\n",
               strerror(errno));
    } else {
        ck_assert_int_eq(rc, -1);
        ck_assert_msg(strstr(err.msg, "ro/x.txt': cannot create a temporary file beside it: Permission denied"), "%s",
                      err.msg);
        ck_assert_int_eq(temporaries(P("ro")), 0);
    }
    ck_assert_int_eq(rmdir(P("ro")), 0);

    /* a write cut off half-way (the file size limit): the temporary is
     * removed and the old file is as it was */
    static char big[1 << 16];
    memset(big, 'b', sizeof big);
    struct rlimit saved;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &saved), 0);
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = {4096, saved.rlim_max};
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &small), 0);
    rc = tg_atomic_write_file(P("old.txt"), big, sizeof big, &err);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &saved), 0);
    signal(SIGXFSZ, old_handler);
    ck_assert_int_eq(rc, -1);
    ck_assert_msg(strstr(err.msg, "old.txt': write of the temporary file failed: File too large ('"), "%s", err.msg);
    ck_assert_msg(strstr(err.msg, "old.txt' left as it was)"), "%s", err.msg);
    assert_contents(P("old.txt"), "old");

    /* renaming over a directory fails; the directory stays */
    ck_assert_int_eq(mkdir(P("adir"), 0755), 0);
    ck_assert_int_eq(tg_atomic_write_file(P("adir"), "x", 1, &err), -1);
    ck_assert_msg(strstr(err.msg, "adir': rename of the temporary file failed: "), "%s", err.msg);
    ck_assert_int_eq(rmdir(P("adir")), 0);

    ck_assert_int_eq(temporaries(tt_dir), 0);
    remove(P("old.txt"));
}
END_TEST

START_TEST(several_files_all_or_none)
{
    tg_error err = {0};
    ck_assert_int_eq(tg_atomic_write_file(P("two.txt"), "old two", 7, &err), 0);
    ck_assert_int_eq(chmod(P("two.txt"), 0604), 0);

    /* written in pieces and finished: nothing is at the paths yet */
    tg_atomic_file f[2];
    ck_assert_int_eq(tg_atomic_begin(&f[0], P("one.txt"), &err), 0);
    ck_assert_int_eq(tg_atomic_begin(&f[1], P("two.txt"), &err), 0);
    assert_temp_name(&f[0], P("one.txt"));
    assert_temp_name(&f[1], P("two.txt"));
    ck_assert_str_eq(f[1].path, P("two.txt"));
    ck_assert_int_eq(tg_atomic_write(&f[0], "o", 1, &err), 0);
    ck_assert_int_eq(tg_atomic_write(&f[0], NULL, 0, &err), 0);
    ck_assert_int_eq(tg_atomic_write(&f[0], "ne", 2, &err), 0);
    ck_assert_int_eq(tg_atomic_write(&f[1], "new two", 7, &err), 0);
    ck_assert_int_eq(tg_atomic_finish(&f[0], &err), 0);
    ck_assert_int_eq(tg_atomic_finish(&f[0], &err), 0); /* finished already */
    ck_assert_int_eq(tg_atomic_finish(&f[1], &err), 0);
    ck_assert_int_eq(access(P("one.txt"), F_OK), -1);
    assert_contents(P("two.txt"), "old two");
    ck_assert_int_eq(temporaries(tt_dir), 2);

    /* aborted: the temporaries go, the old file stays */
    tg_atomic_abort(&f[0]);
    tg_atomic_abort(&f[1]);
    tg_atomic_abort(&f[1]); /* released already: nothing */
    ck_assert_ptr_null(f[1].path);
    ck_assert_int_eq(temporaries(tt_dir), 0);
    ck_assert_int_eq(access(P("one.txt"), F_OK), -1);
    assert_contents(P("two.txt"), "old two");

    /* committed: both, with their bytes; the replaced one keeps its mode */
    ck_assert_int_eq(tg_atomic_begin(&f[0], P("one.txt"), &err), 0);
    ck_assert_int_eq(tg_atomic_begin(&f[1], P("two.txt"), &err), 0);
    ck_assert_int_eq(tg_atomic_write(&f[0], "one", 3, &err), 0);
    ck_assert_int_eq(tg_atomic_write(&f[1], "new two", 7, &err), 0);
    ck_assert_int_eq(tg_atomic_finish(&f[0], &err), 0);
    ck_assert_int_eq(tg_atomic_commit(&f[1], &err), 0); /* commit finishes one that is not */
    ck_assert_int_eq(tg_atomic_commit(&f[0], &err), 0);
    ck_assert_ptr_null(f[0].path);
    ck_assert_ptr_null(f[0].step);
    assert_contents(P("one.txt"), "one");
    assert_contents(P("two.txt"), "new two");
    ck_assert_uint_eq(mode_of(P("two.txt")), 0604);
    ck_assert_int_eq(temporaries(tt_dir), 0);
    tg_atomic_abort(&f[0]); /* after a commit: nothing */
    remove(P("one.txt"));
    remove(P("two.txt"));
}
END_TEST

START_TEST(failures_stick_and_name_their_step)
{
    tg_error err = {0};
    tg_atomic_file f;
    char want[700];
    /* a failed begin: the step and errno, the path kept for the message */
    ck_assert_int_eq(tg_atomic_begin(&f, P("no/such/x.txt"), &err), -1);
    ck_assert_str_eq(f.step, "create");
    ck_assert_int_eq(f.errnum, ENOENT);
    ck_assert_str_eq(f.path, P("no/such/x.txt"));
    ck_assert_ptr_null(f.tmp);
    snprintf(want, sizeof want, "'%s': cannot create a temporary file beside it: No such file or directory",
             P("no/such/x.txt"));
    ck_assert_str_eq(err.msg, want);
    /* every later call fails with the first step, and says so */
    err.msg[0] = 0;
    ck_assert_int_eq(tg_atomic_write(&f, "x", 1, &err), -1);
    ck_assert_str_eq(err.msg, want);
    err.msg[0] = 0;
    ck_assert_int_eq(tg_atomic_finish(&f, &err), -1);
    ck_assert_str_eq(err.msg, want);
    err.msg[0] = 0;
    ck_assert_int_eq(tg_atomic_commit(&f, &err), -1);
    ck_assert_str_eq(err.msg, want);
    ck_assert_str_eq(f.step, "create");
    tg_atomic_abort(&f);
    ck_assert_ptr_null(f.path);
    ck_assert_str_eq(f.step, "create"); /* abort keeps the reason */

    /* NULL data with bytes to write: the temporary is removed at once */
    err.msg[0] = 0;
    ck_assert_int_eq(tg_atomic_begin(&f, P("x.txt"), &err), 0);
    ck_assert_ptr_null(f.step);
    ck_assert_str_eq(err.msg, ""); /* nothing written on success */
    ck_assert_int_eq(tg_atomic_write(&f, NULL, 3, &err), -1);
    ck_assert_str_eq(f.step, "argument");
    ck_assert_int_eq(f.errnum, EINVAL);
    snprintf(want, sizeof want, "'%s': a NULL argument, or the file is not open", P("x.txt"));
    ck_assert_str_eq(err.msg, want);
    ck_assert_ptr_null(f.tmp);
    ck_assert_int_eq(temporaries(tt_dir), 0);
    ck_assert_int_eq(tg_atomic_commit(&f, &err), -1);
    ck_assert_int_eq(access(P("x.txt"), F_OK), -1);
    tg_atomic_abort(&f);

    /* writing after finish is refused the same way */
    ck_assert_int_eq(tg_atomic_begin(&f, P("x.txt"), &err), 0);
    ck_assert_int_eq(tg_atomic_finish(&f, &err), 0);
    ck_assert_int_eq(tg_atomic_write(&f, "x", 1, &err), -1);
    ck_assert_str_eq(f.step, "argument");
    ck_assert_int_eq(temporaries(tt_dir), 0);
    tg_atomic_abort(&f);

    /* a committed file is released: a second commit is refused */
    ck_assert_int_eq(tg_atomic_begin(&f, P("x.txt"), &err), 0);
    ck_assert_int_eq(tg_atomic_commit(&f, &err), 0);
    ck_assert_int_eq(tg_atomic_commit(&f, &err), -1);
    ck_assert_str_eq(f.step, "argument");
    ck_assert_str_eq(err.msg, "'(null)': a NULL argument, or the file is not open");
    assert_contents(P("x.txt"), "");
    tg_atomic_abort(&f);

    /* the messages of the other steps, as a later call reports them */
    static const struct {
        const char *step;
        int errnum;
        const char *text;
    } steps[] = {
        {"fsync", EIO, "'%s': fsync of the temporary file failed: Input/output error ('%s' left as it was)"},
        {"allocate", ENOMEM, "'%s': out of memory"},
        {"close", 0, "'%s': close of the temporary file failed: unknown error ('%s' left as it was)"},
    };
    for (size_t k = 0; k < sizeof steps / sizeof *steps; k++) {
        ck_assert_int_eq(tg_atomic_begin(&f, P("x.txt"), &err), 0);
        f.step = steps[k].step, f.errnum = steps[k].errnum;
        ck_assert_int_eq(tg_atomic_write(&f, "x", 1, &err), -1);
        snprintf(want, sizeof want, steps[k].text, P("x.txt"), P("x.txt"));
        ck_assert_str_eq(err.msg, want);
        tg_atomic_abort(&f);
    }
    ck_assert_int_eq(temporaries(tt_dir), 0);
    ck_assert_int_eq(tg_atomic_write(NULL, "x", 1, &err), -1);
    ck_assert_str_eq(err.msg, "atomic_write: the file is NULL");
    remove(P("x.txt"));
}
END_TEST

/* A pid no process has: a child's, once it has exited and been reaped. */
static pid_t dead_pid(void)
{
    const pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) _exit(0);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_int_eq(kill(pid, 0), -1);
    ck_assert_int_eq(errno, ESRCH);
    return pid;
}

static void touch(const char *path)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    fclose(f);
}

START_TEST(a_write_removes_the_stale_temporaries_of_its_path)
{
    tg_error err = {0};
    char dead[600], mine[600], live[600], other[600], old_form[600], odd[600], zero[600];
    /* a process that stays alive (another writer) until it is told to go */
    const pid_t alive = fork();
    ck_assert_int_ge(alive, 0);
    if (alive == 0) {
        pause();
        _exit(0);
    }
    const pid_t gone = dead_pid();
    snprintf(dead, sizeof dead, "%s.tmp.%d.Ab3dE9", P("m.bin"), (int)gone);
    snprintf(mine, sizeof mine, "%s.tmp.%d.Xy7wV2", P("m.bin"), (int)getpid());
    snprintf(live, sizeof live, "%s.tmp.%d.Qq1rS4", P("m.bin"), (int)alive);
    snprintf(other, sizeof other, "%s.tmp.%d.Ab3dE9", P("n.bin"), (int)gone); /* another path's */
    snprintf(old_form, sizeof old_form, "%s.tmp.Zz09aB", P("m.bin")); /* names no writer */
    snprintf(odd, sizeof odd, "%s.tmp.%d.toolong7", P("m.bin"), (int)gone); /* not mkstemp's six */
    snprintf(zero, sizeof zero, "%s.tmp.0%d.Ab3dE9", P("m.bin"), (int)gone); /* not a pid as written */
    const char *keep[] = {mine, live, other, old_form, odd, zero};
    touch(dead);
    for (int i = 0; i < 6; i++) touch(keep[i]);
    const int rc = tg_atomic_write_file(P("m.bin"), "new", 3, &err);
    kill(alive, SIGKILL); /* before any assertion: a failed one jumps out */
    waitpid(alive, NULL, 0);
    ck_assert_msg(rc == 0, "%s", err.msg);
    assert_contents(P("m.bin"), "new");
    ck_assert_msg(access(dead, F_OK) == -1, "%s was left", dead);
    for (int i = 0; i < 6; i++) {
        ck_assert_msg(access(keep[i], F_OK) == 0, "%s was removed", keep[i]);
        ck_assert_int_eq(unlink(keep[i]), 0);
    }
    ck_assert_int_eq(temporaries(tt_dir), 0);
    remove(P("m.bin"));
}
END_TEST

START_TEST(a_writer_killed_mid_write_is_cleaned_up_by_the_next)
{
    tg_error err = {0};
    ck_assert_int_eq(tg_atomic_write_file(P("k.bin"), "old", 3, &err), 0);
    int ready[2];
    ck_assert_int_eq(pipe(ready), 0);
    const pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) { /* a writer half-way: begun, some bytes written, not finished */
        tg_atomic_file f;
        static char half[1 << 16];
        memset(half, 'h', sizeof half);
        const bool ok = tg_atomic_begin(&f, P("k.bin"), &err) == 0 &&
            tg_atomic_write(&f, half, sizeof half, &err) == 0 && fflush(f.fp) == 0;
        (void)!write(ready[1], ok ? "1" : "0", 1);
        for (;;) pause();
    }
    close(ready[1]);
    char c = 0;
    ck_assert_int_eq(read(ready[0], &c, 1), 1);
    close(ready[0]);
    ck_assert_int_eq(c, '1');
    ck_assert_int_eq(kill(pid, SIGKILL), 0);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    /* what the kill left: the old file whole, the writer's temporary beside it */
    assert_contents(P("k.bin"), "old");
    ck_assert_int_eq(temporaries(tt_dir), 1);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "k.bin.tmp.%d.", (int)pid);
    ck_assert_int_eq(tt_count_names(tt_dir, prefix), 1);
    /* the next write of the path: the new file, and no temporary */
    ck_assert_int_eq(tg_atomic_write_file(P("k.bin"), "next", 4, &err), 0);
    assert_contents(P("k.bin"), "next");
    ck_assert_int_eq(temporaries(tt_dir), 0);
    remove(P("k.bin"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("atomic_file");
    tt_tcase(s, "atomic_file", 0,
             TT_TESTS(one_file_and_its_mode, failures_leave_the_path_alone, several_files_all_or_none,
                      failures_stick_and_name_their_step, a_write_removes_the_stale_temporaries_of_its_path,
                      a_writer_killed_mid_write_is_cleaned_up_by_the_next));
    return tt_run_in_tmpdir(s, "tg_atomic_test", true);
}
