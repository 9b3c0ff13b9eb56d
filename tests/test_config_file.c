/* Config files (train/config_file.c, tg_config_file_read): the lines a
 * file's bytes give (comments, quotes, a BOM, CRLF, "--" names), and each
 * refusal's message: a line without '=', a NUL byte, more than 1 MiB by
 * its size or by what a pipe gives, a file that cannot be opened. A FIFO
 * nobody writes to reads as an empty file instead of waiting forever. */
#include "tg_test.h"

#include <sys/stat.h>

static const char *put(const char *name, const void *bytes, size_t n)
{
    const char *path = tt_path(name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(bytes, 1, n, f), n);
    fclose(f);
    return path;
}

START_TEST(lines_become_names_and_values)
{
    static const char text[] = "\xef\xbb\xbf# a comment\n"
                               "n_layer = 2\r\n"
                               "\n"
                               "  --lr=3e-3   # the rate\n"
                               "data = \"a # b.txt\"\n"
                               "   \t\n"
                               "gelu =\n";
    tg_config_file f;
    tg_error e = {0};
    ck_assert_msg(tg_config_file_read(&f, put("a.conf", text, sizeof text - 1), &e) == 0, "%s", e.msg);
    ck_assert_int_eq(f.n, 4);
    const char *names[] = {"n_layer", "lr", "data", "gelu"}, *values[] = {"2", "3e-3", "a # b.txt", ""};
    const int lines[] = {2, 4, 5, 7};
    for (int i = 0; i < 4; i++) {
        ck_assert_str_eq(f.lines[i].name, names[i]);
        ck_assert_str_eq(f.lines[i].value, values[i]);
        ck_assert_int_eq(f.lines[i].line, lines[i]);
    }
    tg_config_file_release(&f);
    ck_assert(f.n == 0 && !f.text && !f.lines);
    remove(tt_path("a.conf"));
}
END_TEST

START_TEST(what_is_not_a_config_file_is_named)
{
    tg_config_file f;
    tg_error e = {0};
    char want[600];
    const char *p = put("b.conf", "lr = 1\nn_layer 2\n", 17);
    ck_assert_int_eq(tg_config_file_read(&f, p, &e), -1);
    snprintf(want, sizeof want, "%s:2: expected 'name = value', got 'n_layer 2'", p);
    ck_assert_str_eq(e.msg, want);
    ck_assert(f.n == 0 && !f.text);
    p = put("c.conf", "= 5\n", 4);
    ck_assert_int_eq(tg_config_file_read(&f, p, &e), -1);
    snprintf(want, sizeof want, "%s:1: expected 'name = value', got '= 5'", p);
    ck_assert_str_eq(e.msg, want);
    p = put("d.conf", "lr = \x1b[31m\nx\xc2\xa0y\n", 16); /* bytes outside printable ASCII: \xNN */
    ck_assert_int_eq(tg_config_file_read(&f, p, &e), -1);
    snprintf(want, sizeof want, "%s:2: expected 'name = value', got 'x\\xc2\\xa0y'", p);
    ck_assert_str_eq(e.msg, want);
    p = put("e.conf", "lr = 1\0\n", 8);
    ck_assert_int_eq(tg_config_file_read(&f, p, &e), -1);
    snprintf(want, sizeof want, "%s: not a text file (it holds a NUL byte)", p);
    ck_assert_str_eq(e.msg, want);
    char *big = malloc(TG_CONFIG_FILE_MAX + 11);
    memset(big, '#', TG_CONFIG_FILE_MAX + 11);
    p = put("f.conf", big, TG_CONFIG_FILE_MAX + 11);
    free(big);
    ck_assert_int_eq(tg_config_file_read(&f, p, &e), -1);
    snprintf(want, sizeof want,
             "%s: 1048587 bytes; a config file holds at most 1 MiB (1048576 bytes) of 'name = "
             "value' lines",
             p);
    ck_assert_str_eq(e.msg, want);
    ck_assert_int_eq(tg_config_file_read(&f, "/dev/zero", &e), -1); /* no size to go by: read up to the bound */
    ck_assert_str_eq(e.msg,
                     "/dev/zero: more than 1048576 bytes; a config file holds at most 1 MiB (1048576 bytes) "
                     "of 'name = value' lines");
    ck_assert_int_eq(tg_config_file_read(&f, tt_path("none.conf"), &e), -1);
    snprintf(want, sizeof want, "%s: No such file or directory", tt_path("none.conf"));
    ck_assert_str_eq(e.msg, want);
    for (const char *n = "bcdef"; *n; n++) {
        char name[16];
        snprintf(name, sizeof name, "%c.conf", *n);
        remove(tt_path(name));
    }
}
END_TEST

START_TEST(a_fifo_without_a_writer_is_empty_not_a_wait)
{
    const char *p = tt_path("fifo.conf");
    ck_assert_int_eq(mkfifo(p, 0600), 0);
    alarm(20); /* a reader that waits for a writer fails here instead of hanging the suite */
    tg_config_file f;
    tg_error e = {0};
    ck_assert_msg(tg_config_file_read(&f, p, &e) == 0, "%s", e.msg);
    alarm(0);
    ck_assert_int_eq(f.n, 0);
    tg_config_file_release(&f);
    remove(p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("config_file");
    tt_tcase(s, "config_file", 60,
             TT_TESTS(lines_become_names_and_values, what_is_not_a_config_file_is_named,
                      a_fifo_without_a_writer_is_empty_not_a_wait));
    return tt_run_in_tmpdir(s, "tg_config_file_test", false);
}
