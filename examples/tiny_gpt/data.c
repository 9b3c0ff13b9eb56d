/* The text a run trains on (data.h). */
#include "data.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus.h"

void bpb_note(char *buf, size_t size, double bpb)
{
    if (isnan(bpb)) snprintf(buf, size, "no bits per byte: token ids without a tokenizer");
    else snprintf(buf, size, "%.4f bits per byte", bpb);
}

int run_text_load(run_text *t, const char *path, int corpus_chars, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    t->floor_nats = -1;
    if (path && *path) {
        tg_error e = {0};
        if (!(t->text = tg_file_read(path, &t->len, &e))) return snprintf(err, errlen, "%s", e.msg), -1;
        if (t->len == 0) {
            snprintf(err, errlen, "--data %s: the file is empty", path);
            run_text_free(t);
            return -1;
        }
        return 0;
    }
    corpus cp;
    if (corpus_generate(&cp, 1, (size_t)corpus_chars) != 0) {
        snprintf(err, errlen, "out of memory generating the corpus");
        return -1;
    }
    t->text = cp.text;
    t->len = cp.len;
    t->floor_nats = corpus_nats_per_char(&cp);
    return 0;
}

void run_text_free(run_text *t)
{
    free(t->text);
    memset(t, 0, sizeof *t);
}
