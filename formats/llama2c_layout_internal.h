/* What llama2.c's files hold, for their writer (formats/llama2c.c) and
 * their reader (formats/llama2c_read.c): the specials of run.c's byte
 * vocabulary, the order of a layer's weights. Not public. */
#ifndef TG_LLAMA2C_LAYOUT_INTERNAL_H
#define TG_LLAMA2C_LAYOUT_INTERNAL_H

#include <stdio.h>

#include "../train/train.h"

static const char *const SPECIALS[3] = {"<unk>", "\n<s>\n", "\n</s>\n"};

static const char *const LAYER_ORDER[9] = {
    "attention_norm.weight",  "attention.wq.weight",    "attention.wk.weight",
    "attention.wv.weight",    "attention.wo.weight",    "ffn_norm.weight",
    "feed_forward.w1.weight", "feed_forward.w2.weight", "feed_forward.w3.weight"};

/* The piece of id in run.c's tokenizer (TG_VOCAB_LLAMA2C's layout). */
static inline void byte_piece(int id, char *buf, size_t size)
{
    if (id < 3) snprintf(buf, size, "%s", SPECIALS[id]);
    else if (id >= TG_VOCAB_LLAMA2C_SIZE) snprintf(buf, size, "<extra_%d>", id);
    else if (id - 3 >= 0x20 && id - 3 < 0x7f) snprintf(buf, size, "%c", id - 3);
    else snprintf(buf, size, "<0x%02X>", id - 3);
}

#endif
