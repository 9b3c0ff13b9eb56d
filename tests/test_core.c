/* core: tensors, the graph and its tape, parameters, RNG, gradcheck. */
#include "tg_test.h"

START_TEST(placeholder) { ck_assert_int_eq(1, 1); }
END_TEST

int main(void)
{
    Suite *s = suite_create("core");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, placeholder);
    suite_add_tcase(s, tc);
    return tt_run(s);
}
