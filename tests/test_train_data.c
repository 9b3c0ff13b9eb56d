/* train: vocabularies and datasets (train/vocab.c, train/dataset.c).
 *
 * Expected streams are written out by hand from the rules in train.h
 * (llama2.c's documents, the 90/10 split, bytes per token), not produced
 * by calling the library another way. */
#include "tg_test.h"

#include <unistd.h>

/* ---- vocabularies ------------------------------------------------------------- */

START_TEST(byte_vocabularies_encode_decode_and_round_trip)
{
    tg_vocab v;
    tg_vocab_bytes(&v, "hello", 5);
    ck_assert_int_eq(v.kind, TG_VOCAB_BYTES);
    ck_assert_int_eq(v.size, 4); /* e h l o */
    int32_t ids[5];
    size_t bad = 99;
    ck_assert_int_eq(tg_vocab_encode(&v, "hello", 5, ids, &bad), 0);
    const int32_t want[5] = {1, 0, 2, 2, 3};
    ck_assert_mem_eq(ids, want, sizeof want);
    ck_assert_int_eq(tg_vocab_encode(&v, "hex", 3, ids, &bad), -1);
    ck_assert_uint_eq(bad, 2);
    char buf[16], s[64];
    tg_error err = {0};
    ck_assert_int_eq(tg_vocab_decode(&v, 3, buf), 1);
    ck_assert_int_eq(buf[0], 'o');
    ck_assert_int_eq(tg_vocab_decode(&v, 4, buf), 0);
    ck_assert_int_eq(tg_vocab_to_string(&v, s, sizeof s), 0);
    ck_assert_str_eq(s, "101,104,108,111");
    ck_assert_int_eq(tg_vocab_to_string(&v, s, 6), -1); /* too small: said, not cut silently */
    tg_vocab back;
    ck_assert_int_eq(tg_vocab_from_string(&back, "101,104,108,111", &err), 0);
    ck_assert_mem_eq(&back, &v, sizeof v);

    tg_vocab_llama2c(&v);
    ck_assert_int_eq(v.size, 259);
    ck_assert_int_eq(tg_vocab_decode(&v, 1, buf), 5);
    ck_assert_int_eq(memcmp(buf, "\n<s>\n", 5), 0);
    ck_assert_int_eq(tg_vocab_decode(&v, 3 + 'A', buf), 1);
    ck_assert_int_eq(buf[0], 'A');
    ck_assert_int_eq(tg_vocab_to_string(&v, s, sizeof s), 0);
    ck_assert_str_eq(s, "llama2c");
    ck_assert_int_eq(tg_vocab_from_string(&back, "ids:300", &err), 0);
    ck_assert_int_eq(back.kind, TG_VOCAB_IDS);
    ck_assert_int_eq(back.size, 300);

    static const struct {
        const char *s, *want;
    } bads[] = {{"", "empty"},
                {"1,1", "increasing and unique"},
                {"5,3", "increasing and unique"},
                {"256", "bad entry"},
                {"0x41", "bad entry"},
                {" 65", "bad entry"},
                {"+65", "bad entry"},
                {"65,", "empty"},
                {"ids:0", "not ids:N"},
                {"ids:0x10", "not ids:N"},
                {"ids:16777217", "not ids:N"},
                {"tokenizer", "read from the checkpoint's tokenizer entries"}};
    for (int k = 0; k < 12; k++) {
        err.msg[0] = 0;
        const int rc = tg_vocab_from_string(&back, bads[k].s, &err);
        if (k == 7) { /* "65," is 65 then nothing: one byte */
            ck_assert_int_eq(rc, 0);
            continue;
        }
        ck_assert_int_eq(rc, -1);
        ck_assert_msg(strstr(err.msg, bads[k].want), "'%s': '%s'", bads[k].s, err.msg);
    }
}
END_TEST

/* Every kind through a checkpoint's metadata and back. */
START_TEST(vocabularies_through_a_file)
{
    tg_error err = {0};
    const char *text = "to be or not to be, that is the question\n";
    tg_bpe_options o = {.vocab_size = 270};
    tg_tokenizer *tok = tg_bpe_train(text, strlen(text), &o, &err);
    ck_assert_msg(tok != NULL, "%s", err.msg);
    tg_vocab vs[4];
    tg_vocab_bytes(&vs[0], text, strlen(text));
    tg_vocab_llama2c(&vs[1]);
    tg_vocab_ids(&vs[2], 1000);
    ck_assert_int_eq(tg_vocab_tokenizer(&vs[3], tok, false, 0, &err), 0);
    for (int k = 0; k < 4; k++) {
        tg_st_writer *w = tg_st_writer_new();
        ck_assert_int_eq(tg_vocab_write(&vs[k], w), 0);
        ck_assert_int_eq(tg_st_writer_save(w, tt_path("v.safetensors"), &err), 0);
        tg_st_writer_free(w);
        tg_st_file *f = tg_st_load(tt_path("v.safetensors"), &err);
        tg_vocab back;
        ck_assert_msg(tg_vocab_read(&back, f, &err) == 0, "kind %d: %s", k, err.msg);
        ck_assert_int_eq(back.kind, vs[k].kind);
        ck_assert_int_eq(back.size, vs[k].size);
        if (k == 3) ck_assert(tg_tok_same(back.tok, vs[3].tok));
        else ck_assert_mem_eq(&back, &vs[k], sizeof back);
        tg_vocab_release(&back);
        tg_st_free(f);
        remove(tt_path("v.safetensors"));
    }
    /* tapegrad's BPE has a BOS, so it takes documents; min_size widens */
    tg_vocab d;
    tg_tokenizer *t2 = tg_bpe_train(text, strlen(text), &o, &err);
    ck_assert_int_ge(tg_tok_bos(t2), 0);
    ck_assert_int_eq(tg_vocab_tokenizer(&d, t2, true, 5000, &err), 0);
    ck_assert(d.docs);
    ck_assert_int_eq(d.size, 5000);
    tg_vocab_release(&d);
    tg_vocab_release(&vs[3]);
}
END_TEST

/* ---- datasets ------------------------------------------------------------------- */

START_TEST(llama2c_documents_and_bytes_per_token)
{
    /* three paragraphs: "ab\n", "c\n", "xyz\n"; 11 bytes, the train split
     * the first int(0.9 * 11) = 9: "ab\n\nc\n\nxy", the val split "z\n" */
    const char *text = "ab\n\nc\n\nxyz\n";
    tg_vocab v;
    tg_vocab_llama2c(&v);
    tg_dataset d;
    tg_error err = {0};
    ck_assert_int_eq(tg_dataset_from_text(&d, &v, text, strlen(text), 1, &err), 0);
    const int32_t sp = 3 + ' ';
    const int32_t want[] = {1, sp, 3 + 'a', 3 + 'b', 3 + '\n', 1,  sp,      3 + 'c', 3 + '\n',
                            1, sp, 3 + 'x', 3 + 'y', 1,        sp, 3 + 'z', 3 + '\n'};
    ck_assert_uint_eq(d.n, 17);
    ck_assert_mem_eq(d.tokens, want, sizeof want);
    ck_assert_uint_eq(d.n_train, 13);
    /* each split's bytes of text (the blank lines' newlines too) per token */
    ck_assert_double_eq_tol(d.bytes_per_token[0], 9 / 13.0, 1e-15);
    ck_assert_double_eq(d.bytes_per_token[1], 0.5);
    tg_dataset_release(&d);
    /* too short for the block: the val split's 4 tokens */
    ck_assert_int_eq(tg_dataset_from_text(&d, &v, text, strlen(text), 3, &err), 0);
    tg_dataset_release(&d);
    ck_assert_int_eq(tg_dataset_from_text(&d, &v, text, strlen(text), 4, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg,
                                 "split 90/10 at byte 9 of 11 (13 train and 4 val tokens) leave fewer than "
                                 "block_size + 1 = 5"));
    ck_assert_ptr_null(d.tokens);
    /* a byte the vocabulary lacks */
    tg_vocab_bytes(&v, "abc", 3);
    ck_assert_int_eq(tg_dataset_from_text(&d, &v, "abcabcabcabcabcabcabcabcd", 25, 1, &err), -1);
    ck_assert_str_eq(err.msg, "data: byte 100 at offset 24 is not in the vocabulary");
    tg_vocab_ids(&v, 5);
    ck_assert_int_eq(tg_dataset_from_text(&d, &v, "abc", 3, 1, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "no text to encode"));
}
END_TEST

/* The split is the text's 90% byte mark, for a tokenizer too: each side
 * encoded apart, so the val ids are the encoding of the val text alone and
 * no byte of it reaches the train split, however well the tokenizer
 * compresses the train text. */
START_TEST(a_tokenizers_split_is_the_byte_mark)
{
    tg_error err = {0};
    /* 900 bytes the tokenizer learns merges from, then 100 it cannot merge */
    char text[1001];
    for (int i = 0; i < 900; i++) text[i] = "the cat "[i % 8];
    for (int i = 900; i < 1000; i++) text[i] = (char)('A' + (i * 7) % 26);
    text[1000] = 0;
    ck_assert_uint_eq(tg_text_train_bytes(text, 1000), 900);
    tg_tokenizer *bpe = tg_bpe_train(text, 900, &(tg_bpe_options){.vocab_size = 300, .min_count = 2}, &err);
    ck_assert_msg(bpe != NULL, "%s", err.msg);
    int32_t *val = NULL, *train = NULL;
    const int64_t nv = tg_tok_encode(bpe, text + 900, 100, &val, &err);
    const int64_t nt = tg_tok_encode(bpe, text, 900, &train, &err);
    ck_assert_int_eq(nv, 100); /* no pair of the val text is a piece */
    ck_assert_int_lt(nt, 450); /* the train text compresses: a 90/10 split of ids would cut into it */
    for (int docs = 0; docs < 2; docs++) {
        tg_vocab v;
        tg_tokenizer *t = tg_bpe_train(text, 900, &(tg_bpe_options){.vocab_size = 300, .min_count = 2}, &err);
        ck_assert_int_eq(tg_vocab_tokenizer(&v, t, docs, 0, &err), 0);
        tg_dataset d;
        ck_assert_msg(tg_dataset_from_text(&d, &v, text, 1000, 8, &err) == 0, "%s", err.msg);
        if (!docs) {
            ck_assert_uint_eq(d.n_train, (size_t)nt);
            ck_assert_mem_eq(d.tokens, train, (size_t)nt * sizeof *train);
            ck_assert_uint_eq(d.n, (size_t)(nt + nv));
            ck_assert_mem_eq(d.tokens + nt, val, (size_t)nv * sizeof *val);
        } else { /* one document each side: BOS, then " " + its text */
            ck_assert_int_eq(d.tokens[0], tg_tok_bos(v.tok));
            ck_assert_int_eq(d.tokens[d.n_train], tg_tok_bos(v.tok));
            ck_assert_uint_eq(d.n - d.n_train, 1 + 101); /* BOS, " ", the 100 bytes */
        }
        ck_assert_double_eq_tol(d.bytes_per_token[0], 900.0 / (double)d.n_train, 1e-15);
        ck_assert_double_eq_tol(d.bytes_per_token[1], 100.0 / (double)(d.n - d.n_train), 1e-15);
        tg_dataset_release(&d);
        tg_vocab_release(&v);
    }
    free(val);
    free(train);
    tg_tok_free(bpe);
}
END_TEST

/* The mark moves back to the start of the character it falls in. */
START_TEST(the_mark_is_a_characters_start)
{
    ck_assert_uint_eq(tg_text_train_bytes("abcdefghij", 10), 9);
    ck_assert_uint_eq(tg_text_train_bytes("abcdefgh\xc3\xa9", 10), 8); /* inside e-acute */
    ck_assert_uint_eq(tg_text_train_bytes("abcdefg\xf0\x9f\x98\x80", 11), 7); /* 9: an emoji's third byte */
    ck_assert_uint_eq(tg_text_train_bytes("\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80", 10), 6); /* 3 back at most */
    ck_assert_uint_eq(tg_text_train_bytes("", 0), 0);
}
END_TEST

/* Documents of a tokenizer's ids: llama2.c's " " before each text for a
 * BPE (tg_vocab_space_before_text), and for pieces with scores their own
 * rule, the tokenizer's add_prefix, never a second space. */
START_TEST(a_documents_space_is_the_tokenizers_rule)
{
    tg_error err = {0};
    /* <unk> <s> </s>, the 256 bytes as <0xXX>, then U+2581 (id 259) */
    unsigned char bytes[3 * 8 + 256 * 6 + 3];
    int64_t off[261];
    float scores[260] = {0};
    uint8_t types[260];
    size_t at = 0;
    const char *specials[3] = {"<unk>", "<s>", "</s>"};
    for (int i = 0; i < 260; i++) {
        off[i] = (int64_t)at;
        char piece[8];
        if (i < 3) snprintf(piece, sizeof piece, "%s", specials[i]);
        else if (i < 259) snprintf(piece, sizeof piece, "<0x%02X>", i - 3);
        else snprintf(piece, sizeof piece, "\xe2\x96\x81");
        memcpy(bytes + at, piece, strlen(piece));
        at += strlen(piece);
        types[i] = i == 0 ? TG_PIECE_UNKNOWN : i < 3 ? TG_PIECE_CONTROL : i < 259 ? TG_PIECE_BYTE : TG_PIECE_NORMAL;
    }
    off[260] = (int64_t)at;
    const char *text = "ab\n\nc\n\nab\n\nc\n";
    for (int prefix = 0; prefix < 2; prefix++) {
        const tg_spm_options o = {1, prefix, -INFINITY};
        tg_tokenizer *t = tg_tok_new_spm(&(tg_spm_pieces){260, bytes, off, scores, types, 1, 2}, &o, &err);
        ck_assert_msg(t != NULL, "%s", err.msg);
        tg_vocab v;
        ck_assert_int_eq(tg_vocab_tokenizer(&v, t, true, 0, &err), 0);
        ck_assert(!tg_vocab_space_before_text(&v));
        tg_dataset d;
        ck_assert_msg(tg_dataset_from_text(&d, &v, text, strlen(text), 1, &err) == 0, "%s", err.msg);
        const int32_t with[] = {1, 259, 3 + 'a', 3 + 'b', 3 + '\n', 1, 259, 3 + 'c', 3 + '\n'};
        const int32_t without[] = {1, 3 + 'a', 3 + 'b', 3 + '\n', 1, 3 + 'c', 3 + '\n'};
        ck_assert_uint_eq(d.n, prefix ? 18 : 14);
        ck_assert_mem_eq(d.tokens, prefix ? with : without, prefix ? sizeof with : sizeof without);
        tg_dataset_release(&d);
        tg_vocab_release(&v);
    }
    /* a BPE's documents: the caller's " " */
    tg_vocab v;
    tg_tokenizer *bpe = tg_bpe_train(text, strlen(text), &(tg_bpe_options){.vocab_size = 262, .min_count = 2}, &err);
    ck_assert_msg(bpe != NULL, "%s", err.msg);
    ck_assert_int_eq(tg_vocab_tokenizer(&v, bpe, true, 0, &err), 0);
    ck_assert(tg_vocab_space_before_text(&v));
    v.docs = false;
    ck_assert(!tg_vocab_space_before_text(&v));
    tg_vocab_release(&v);
    tg_vocab_llama2c(&v);
    ck_assert(!tg_vocab_space_before_text(&v)); /* its bytes: dataset.c puts the space as an id */
}
END_TEST

START_TEST(token_files_and_their_identity)
{
    tg_error err = {0};
    int32_t a[40], b[12];
    for (int i = 0; i < 40; i++) a[i] = (i * 7) % 300;
    for (int i = 0; i < 12; i++) b[i] = 299 - i;
    ck_assert_int_eq(tg_tokfile_write(tt_path("a.bin"), TG_TOKFILE_LLMC, a, 40, &err), 0);
    ck_assert_int_eq(tg_tokfile_write(tt_path("b.bin"), TG_TOKFILE_NANOGPT, b, 12, &err), 0);
    tg_vocab v;
    tg_vocab_ids(&v, 300);
    tg_dataset d;
    tg_token_file_id ids[2];
    ck_assert_msg(tg_dataset_from_token_files(&d, &v, tt_path("a.bin"), tt_path("b.bin"), 4, ids, &err) == 0, "%s",
                  err.msg);
    ck_assert_uint_eq(d.n, 52);
    ck_assert_uint_eq(d.n_train, 40);
    ck_assert_mem_eq(d.tokens, a, sizeof a);
    ck_assert_mem_eq(d.tokens + 40, b, sizeof b);
    ck_assert(isnan(d.bytes_per_token[0]) && isnan(d.bytes_per_token[1]));
    /* the identity: FNV-1a over each id's 4 little-endian bytes, computed here */
    uint64_t h = 0xcbf29ce484222325u;
    for (int i = 0; i < 12; i++)
        for (int k = 0; k < 4; k++) h = (h ^ (((uint32_t)b[i] >> (8 * k)) & 0xff)) * 0x100000001b3u;
    ck_assert_int_eq(ids[0].count, 40);
    ck_assert_int_eq(ids[0].format, TG_TOKFILE_LLMC);
    ck_assert_int_eq(ids[1].count, 12);
    ck_assert_int_eq(ids[1].format, TG_TOKFILE_NANOGPT);
    ck_assert(ids[1].fnv == h);
    ck_assert(ids[0].fnv != ids[1].fnv);
    tg_dataset_release(&d);
    /* without a val file: 90/10 */
    ck_assert_int_eq(tg_dataset_from_token_files(&d, &v, tt_path("a.bin"), NULL, 2, ids, &err), 0);
    ck_assert_uint_eq(d.n_train, 36);
    ck_assert_int_eq(ids[1].count, 0);
    tg_dataset_release(&d);
    /* an id the vocabulary cannot hold: the file is named */
    tg_vocab_ids(&v, 200);
    ck_assert_int_eq(tg_dataset_from_token_files(&d, &v, tt_path("a.bin"), NULL, 2, NULL, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "a.bin"));
    ck_assert_ptr_null(d.tokens);
    /* the val file's fault is told apart from the train file's: ids say which files were read whole */
    tg_vocab_ids(&v, 300);
    tg_token_file_id got[2] = {{.count = 7}, {.count = 7}};
    ck_assert_int_eq(tg_dataset_from_token_files(&d, &v, tt_path("a.bin"), tt_path("none.bin"), 2, got, &err), -1);
    ck_assert_msg(strstr(err.msg, "none.bin"), "%s", err.msg);
    ck_assert_ptr_null(d.tokens);
    ck_assert(got[0].count > 0 && got[1].count == -1);
    ck_assert_int_eq(tg_dataset_from_token_files(&d, &v, tt_path("none.bin"), tt_path("a.bin"), 2, got, &err), -1);
    ck_assert(got[0].count == -1 && got[1].count == -1);
    remove(tt_path("a.bin"));
    remove(tt_path("b.bin"));
}
END_TEST

/* R processes taking their rows of an R B batch see the whole batch, and
 * their streams stay in step with the whole's. */
START_TEST(rows_of_a_batch_make_the_batch)
{
    tg_vocab v;
    tg_error err = {0};
    char text[500];
    for (int i = 0; i < 499; i++) text[i] = (char)('a' + (i * 13 + i / 7) % 26);
    text[499] = 0;
    tg_vocab_bytes(&v, text, 499);
    tg_dataset d;
    ck_assert_int_eq(tg_dataset_from_text(&d, &v, text, 499, 8, &err), 0);
    enum { B = 6, T = 8 };
    for (int val = 0; val < 2; val++) {
        tg_rng whole, part[3];
        tg_rng_seed(&whole, 5, 1);
        int32_t x[B * T], y[B * T], px[B * T], py[B * T];
        tg_dataset_rows(&d, val, &(tg_rows){x, y, B, 0, B, T}, &whole);
        for (int r = 0; r < 3; r++) {
            tg_rng_seed(&part[r], 5, 1);
            tg_dataset_rows(&d, val, &(tg_rows){px + r * 2 * T, py + r * 2 * T, B, r * 2, 2, T}, &part[r]);
            ck_assert(part[r].state == whole.state && part[r].inc == whole.inc);
        }
        ck_assert_mem_eq(px, x, sizeof x);
        ck_assert_mem_eq(py, y, sizeof y);
        /* y is x shifted by one inside the split */
        const int32_t *base = val ? d.tokens + d.n_train : d.tokens;
        const size_t n = val ? d.n - d.n_train : d.n_train;
        for (int b = 0; b < B; b++) {
            ck_assert_mem_eq(x + b * T + 1, y + b * T, (T - 1) * sizeof *x);
            size_t s = 0;
            while (s + T < n && memcmp(base + s, x + b * T, T * sizeof *x)) s++;
            ck_assert_msg(s + T < n, "row %d is no window of its split", b);
        }
    }
    tg_dataset_release(&d);
}
END_TEST

/* Epochs: each epoch's windows tile the split from one phase, every
 * window once, in an order that is shuffled and differs by epoch and by
 * seed; any rows of any batch are those of one long draw, so processes
 * and a resumed run see the same sequence. Token i of the split is i, so
 * a window's first token is its start. */
START_TEST(epochs_visit_every_window_once)
{
    enum { N = 1000, T = 16, E = 6 };
    int32_t tokens[N + 40];
    for (int i = 0; i < N + 40; i++) tokens[i] = i;
    tg_dataset d = {.tokens = tokens, .n = N + 40, .n_train = N};
    const int64_t W = tg_dataset_epoch_windows(&d, false, T);
    ck_assert_int_eq(W, (N - T) / T);
    ck_assert_int_eq(tg_dataset_epoch_windows(&d, true, T), 1); /* 40 val tokens: one window of 17 */
    static int32_t x[E * 61 * T], y[E * 61 * T], part[E * 61 * T], py[E * 61 * T];
    ck_assert_int_eq(W, 61);
    tg_dataset_epoch_rows(&d, false, &(tg_rows){x, y, (int)(E * W), 0, (int)(E * W), T}, 7, 0);
    int phases[E], order_seen = 0;
    for (int e = 0; e < E; e++) {
        bool seen[N] = {false}, sorted = true;
        phases[e] = N;
        for (int k = 0; k < W; k++)
            if (x[(e * W + k) * T] < phases[e]) phases[e] = x[(e * W + k) * T];
        for (int k = 0; k < W; k++) {
            const int32_t *row = x + (e * W + k) * T, s = row[0];
            for (int j = 0; j < T; j++) ck_assert_int_eq(y[(e * W + k) * T + j], row[j] + 1);
            for (int j = 0; j < T; j++) ck_assert_int_eq(row[j], s + j);
            ck_assert_msg((s - phases[e]) % T == 0, "epoch %d: start %d is off the phase %d", e, s, phases[e]);
            ck_assert_msg(!seen[s], "epoch %d visits the window at %d twice", e, s);
            ck_assert_int_le(s + T, N - 1); /* the W distinct starts of one phase: the tiling */
            seen[s] = true;
            if (k && s < row[-T]) sorted = false;
        }
        ck_assert_msg(!sorted, "epoch %d visits its windows in order", e);
        ck_assert_int_le(phases[e], N - 1 - W * T);
        if (e && memcmp(x + e * W * T, x, (size_t)W * T * sizeof *x)) order_seen++;
    }
    ck_assert_int_eq(order_seen, E - 1); /* every epoch's order differs from the first's */
    int distinct = 0;
    for (int e = 1; e < E; e++) distinct += phases[e] != phases[0];
    ck_assert_msg(distinct > 0, "six epochs at one phase (%d)", phases[0]);
    /* rows of batches, drawn in pieces from any place, are the long draw's */
    for (int at = 0; at < E * W; at += 25) {
        const int total = at + 25 <= E * W ? 25 : (int)(E * W - at);
        for (int r = 0; r < total; r += 7) {
            const int count = r + 7 <= total ? 7 : total - r;
            tg_dataset_epoch_rows(&d, false, &(tg_rows){part + (at + r) * T, py + (at + r) * T, total, r, count, T}, 7,
                                  at);
        }
    }
    ck_assert_mem_eq(part, x, sizeof x);
    ck_assert_mem_eq(py, y, sizeof y);
    /* another seed, another order */
    tg_dataset_epoch_rows(&d, false, &(tg_rows){part, py, (int)W, 0, (int)W, T}, 8, 0);
    ck_assert(memcmp(part, x, (size_t)W * T * sizeof *x));
    /* the val split: its one window */
    tg_dataset_epoch_rows(&d, true, &(tg_rows){part, py, 1, 0, 1, T}, 7, 3);
    ck_assert_int_ge(part[0], N);
    ck_assert_int_le(part[0] + T, N + 39);
    /* nothing for what is no batch */
    part[0] = py[0] = -5;
    tg_dataset_epoch_rows(&d, false, &(tg_rows){part, py, 1, 0, 1, T}, 7, -1);
    tg_dataset_epoch_rows(&d, false, &(tg_rows){part, py, 1, 0, 2, T}, 7, 0);
    tg_dataset_epoch_rows(&d, false, &(tg_rows){part, py, 2, 0, 1, T}, 7, INT64_MAX);
    tg_dataset_epoch_rows(&d, false, &(tg_rows){part, py, 1, 0, 1, N}, 7,
                          0); /* a split of N tokens holds no window of N + 1 */
    tg_dataset_epoch_rows(NULL, false, &(tg_rows){part, py, 1, 0, 1, T}, 7, 0);
    ck_assert_int_eq(part[0], -5);
    ck_assert_int_eq(py[0], -5);
    ck_assert_int_eq(tg_dataset_epoch_windows(&d, false, N), 0);
    ck_assert_int_eq(tg_dataset_epoch_windows(&d, false, N - 1), 1);
    ck_assert_int_eq(tg_dataset_epoch_windows(NULL, false, T), 0);
}
END_TEST

/* ---- the metrics file ------------------------------------------------------------- */

static char *slurp(const char *path)
{
    size_t len;
    tg_error err = {0};
    char *s = tg_file_read(path, &len, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    return s;
}

START_TEST(metrics_rows_survive_a_kill_and_a_resume)
{
    const tg_metrics_column cols[2] = {{"loss", "%.6f"}, {"lr", "%.3g"}};
    tg_error err = {0};
    char notice[300];
    const char *path = tt_path("metrics.csv");
    tg_metrics *m = tg_metrics_open(path, cols, 2, -1, notice, sizeof notice, &err);
    ck_assert_msg(m != NULL, "%s", err.msg);
    for (int s = 0; s <= 4; s++)
        ck_assert_int_eq(tg_metrics_write(m, s, (double[]){1.0 / (s + 1), s == 2 ? NAN : 1e-3}), 0);
    ck_assert_int_eq(tg_metrics_close(m), 0);
    char *got = slurp(path);
    ck_assert_str_eq(got,
                     "step,loss,lr\n0,1.000000,0.001\n1,0.500000,0.001\n2,0.333333,\n3,0.250000,0.001\n"
                     "4,0.200000,0.001\n");
    free(got);
    /* a kill cut the last row short; the checkpoint was at step 2 */
    FILE *fp = fopen(path, "a");
    fputs("5,0.1666", fp);
    fclose(fp);
    m = tg_metrics_open(path, cols, 2, 2, notice, sizeof notice, &err);
    ck_assert_ptr_nonnull(m);
    ck_assert_str_eq(notice, "");
    ck_assert_int_eq(tg_metrics_write(m, 3, (double[]){0.25, NAN}), 0);
    tg_metrics_close(m);
    got = slurp(path);
    ck_assert_str_eq(got, "step,loss,lr\n0,1.000000,0.001\n1,0.500000,0.001\n2,0.333333,\n3,0.250000,\n");
    free(got);
    /* another header: nothing kept, and said so; a missing file: said so */
    const tg_metrics_column other[1] = {{"val", "%.4f"}};
    m = tg_metrics_open(path, other, 1, 2, notice, sizeof notice, &err);
    ck_assert_ptr_nonnull(strstr(notice, "has another header; its rows are not kept"));
    tg_metrics_close(m);
    got = slurp(path);
    ck_assert_str_eq(got, "step,val\n");
    free(got);
    remove(path);
    m = tg_metrics_open(path, other, 1, 7, notice, sizeof notice, &err);
    ck_assert_ptr_nonnull(strstr(notice, "is missing; its rows start again at step 8"));
    tg_metrics_close(m);
    remove(path);
    /* columns that cannot be */
    static const tg_metrics_column bad[4][1] = {{{"step", "%f"}}, {{"a,b", "%f"}}, {{"x", "%s"}}, {{"x", "%.18g"}}};
    for (int k = 0; k < 4; k++) {
        ck_assert_ptr_null(tg_metrics_open(path, bad[k], 1, -1, NULL, 0, &err));
        ck_assert_msg(strstr(err.msg, "is not a name of [A-Za-z0-9_] other than step with a format"), "%s", err.msg);
    }
    ck_assert_int_eq(access(path, F_OK), -1); /* nothing written */
}
END_TEST

int main(void)
{
    Suite *s = suite_create("train_data");
    tt_tcase(s, "data", 0,
             TT_TESTS(byte_vocabularies_encode_decode_and_round_trip, vocabularies_through_a_file,
                      a_documents_space_is_the_tokenizers_rule, llama2c_documents_and_bytes_per_token,
                      a_tokenizers_split_is_the_byte_mark, the_mark_is_a_characters_start,
                      token_files_and_their_identity, rows_of_a_batch_make_the_batch, epochs_visit_every_window_once,
                      metrics_rows_survive_a_kill_and_a_resume));
    return tt_run_in_tmpdir(s, "tg_train_data", false);
}
