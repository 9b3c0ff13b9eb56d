/* tapegrad text: tokenizers and token files.
 *
 * A tokenizer maps bytes to token ids and back. Two kinds, one model:
 * byte-level BPE where every single byte is a piece (so every input
 * encodes), the text is first cut into words, and inside a word the
 * adjacent pair whose concatenation is the piece of lowest id is merged
 * until no pair is a piece.
 *
 *   TG_TOK_BPE       trained here (tg_bpe_train). Words: each space starts
 *                    one (a piece may begin with a space but holds no other),
 *                    and a run of newlines is a word of its own. Ids: 0 <unk>
 *                    (never produced), 1 <s> (BOS), 2 </s> (EOS), 3 + b for
 *                    byte b, then the merges in the order they were learned.
 *   TG_TOK_TIKTOKEN  a tiktoken rank file (GPT-2's: tg_tok_load_tiktoken).
 *                    Words are the matches of a regex (GPT-2's pattern, the
 *                    only one taken, run with PCRE2 in UTF + UCP mode), id =
 *                    rank, and a word that is itself a piece is that one
 *                    token (tiktoken's rule). Invalid UTF-8 is first
 *                    replaced with U+FFFD per maximal subpart, as a
 *                    JavaScript TextDecoder (or Python's errors="replace")
 *                    would, so the ids are tiktoken's on the decoded
 *                    string. <|endoftext|> is the id after the ranks.
 *   TG_TOK_SPM       pieces with scores, merged as llama2.c's run.c, sentencepiece's
 *                    BPE and llama.cpp's SPM tokenizer do (text/spm.c): no
 *                    words; the whole text (after a dummy-prefix space when
 *                    the tokenizer adds one) is cut into UTF-8 characters,
 *                    each looked up as a piece, else its bytes' byte pieces;
 *                    then the adjacent pair whose concatenation is the piece
 *                    of highest score is merged, the leftmost on a tie,
 *                    until none is a piece. With spaces spelled U+2581
 *                    (sentencepiece's and llama.cpp's vocabularies) a
 *                    character that is no piece still merges by its text,
 *                    and only one left alone becomes its bytes' pieces, as
 *                    in those two; run.c (spaces as ' ') turns it into its
 *                    bytes first. Made by tg_tok_new_spm (from
 *                    llama2.c's tokenizer.bin: tg_tok_load_llama2c).
 *
 * Tokenizers are immutable once made: any number of threads may encode and
 * decode with one at the same time. Special tokens are never produced by
 * encoding (their text encodes as ordinary text); the caller adds BOS/EOS.
 * docs/tokenizers.md describes the rules and the file formats.
 *
 * Errors: functions that make or load something take a `tg_error *err`
 * (core/error.h) and return NULL or -1 with a message; NULL arguments
 * give NULL or -1. Nothing here aborts. */
#ifndef TG_TEXT_H
#define TG_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/error.h"
#include "../core/export.h"
#include "../core/safetensors.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_tokenizer tg_tokenizer;

typedef enum tg_tok_kind {
    TG_TOK_NONE = 0, /* no tokenizer (what tg_tok_kind_of says for NULL) */
    TG_TOK_BPE = 1,
    TG_TOK_TIKTOKEN = 2,
    TG_TOK_SPM = 3
} tg_tok_kind;

/* GPT-2's pre-tokenizer pattern (tiktoken's "gpt2" pat_str). */
#define TG_GPT2_PATTERN "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"

/* ---- training (text/bpe_train.c) ------------------------------------------ */

/* Which pairs training may merge: those inside the encoder's words (each
 * space starts one), or only those inside one run of a class there. */
typedef enum tg_bpe_words {
    TG_BPE_WORDS_CLASSES = 0, /* each word cut again where its bytes change class: letters (ASCII
                                 letters, the apostrophe, every byte >= 0x80), digits, and the rest
                                 (punctuation and symbols); a leading space stays with the first run.
                                 " lord," gives " lord" and ",": no piece joins a word and its
                                 punctuation, as in SentencePiece's vocabularies */
    TG_BPE_WORDS_SPACES = 1, /* the encoder's words as they are (tapegrad 0.2): " lord," can be a piece */
} tg_bpe_words;

typedef struct tg_bpe_options {
    int vocab_size; /* total ids wanted, specials and bytes included (>= 259) */
    int64_t min_count; /* a pair seen fewer times is never merged; 0 means 2 */
    tg_bpe_words words; /* TG_BPE_WORDS_CLASSES (0) unless set */
} tg_bpe_options;

/* Learns a TG_TOK_BPE tokenizer from len bytes of text: the words are
 * counted (split across tg_parallel_for's threads), then the most frequent
 * adjacent pair over all words (each distinct word weighted by its count)
 * is merged, again and again, until vocab_size ids exist or no pair occurs
 * min_count times (then the vocabulary is smaller: see
 * tg_tok_vocab_size). Ties go to the pair with the smaller left id, then
 * the smaller right id. Words longer than 256 bytes are counted as
 * 256-byte chunks. A pair that would put part of a multi-byte UTF-8
 * character together with bytes outside it is never merged: a piece is
 * whole characters, or the first bytes of one (docs/tokenizers.md).
 * With TG_BPE_WORDS_CLASSES (the default) the words are also cut where
 * letters, digits and punctuation meet, so no piece mixes them; the
 * tokenizer still encodes by the words above, which gives the same ids
 * as cutting there too, since no piece spans such a cut.
 * Deterministic: the same text and options give the same
 * tokenizer on any number of threads (there is no randomness). NULL with
 * a message for NULL or empty text, vocab_size < 259 or > 2^24, or out of
 * memory. */
TG_API tg_tokenizer *tg_bpe_train(const void *text, size_t len, const tg_bpe_options *opts, tg_error *err);

/* ---- loading and saving (text/tiktoken.c, text/tok_file.c) ----------------- */

/* Reads a tiktoken rank file: one "base64(piece) rank" line per piece
 * (empty lines skipped), the ranks 0..N-1 each once, every single byte
 * among the pieces, no piece twice. The tokenizer gets GPT-2's pattern
 * and <|endoftext|> = N. NULL with "PATH:LINE: ..." in err. */
TG_API tg_tokenizer *tg_tok_load_tiktoken(const char *path, tg_error *err);

/* Loads a tokenizer from path: a safetensors file holding tokenizer
 * entries (a tok.safetensors, or a checkpoint with one inside), a
 * llama2.c tokenizer.bin (tg_tok_load_llama2c: a file whose third and
 * fourth bytes are 0, its small max_token_length) or else a .tiktoken
 * file. NULL with a message. */
TG_API tg_tokenizer *tg_tok_load(const char *path, tg_error *err);
/* The tokenizer stored in a loaded safetensors file (the entries
 * tg_tok_st_add writes), validated. NULL with a message when f has none
 * or they are inconsistent, or when a tiktoken tokenizer's pattern is not
 * GPT-2's (TG_GPT2_PATTERN, exactly): another pattern could leave text in
 * no match, which encoding would drop, so it is refused, and the message
 * names it and a text it leaves out when it finds one. */
TG_API tg_tokenizer *tg_tok_from_st(const tg_st_file *f, tg_error *err);
/* Adds t's entries (metadata "tokenizer*", tensors "tokenizer.*") to a
 * writer, e.g. a checkpoint's. The tensors point into t: keep t until the
 * writer is saved. 0, or -1 (the writer's sticky error says why). */
TG_API int tg_tok_st_add(const tg_tokenizer *t, tg_st_writer *w);
/* Writes t alone to a safetensors file, atomically. 0, or -1 with a message. */
TG_API int tg_tok_save(const tg_tokenizer *t, const char *path, tg_error *err);
/* Frees t; accepts NULL. */
TG_API void tg_tok_free(tg_tokenizer *t);

/* ---- pieces with scores (text/spm.c, text/llama2c_tok.c) ------------------- */

/* A piece's type in a TG_TOK_SPM vocabulary: sentencepiece's and GGUF's
 * numbers. */
typedef enum tg_piece_type {
    TG_PIECE_NONE = 0, /* no such piece (what tg_tok_piece_type says for an id out of range) */
    TG_PIECE_NORMAL = 1, /* text: looked up and made by merges */
    TG_PIECE_UNKNOWN = 2, /* <unk>: a special, never produced */
    TG_PIECE_CONTROL = 3, /* BOS, EOS and the like: specials, never produced */
    TG_PIECE_USER = 4, /* user-defined (matched before merging by sentencepiece): refused */
    TG_PIECE_UNUSED = 5, /* in the vocabulary, never produced */
    TG_PIECE_BYTE = 6 /* one byte: "<0xXX>", or the byte itself (then also text) */
} tg_piece_type;

/* What differs between llama2.c's tokenizer.bin and a sentencepiece (or
 * GGUF "llama") vocabulary. */
typedef struct tg_spm_options {
    bool space_u2581; /* the pieces spell a space U+2581 (sentencepiece, GGUF); else ' ' (llama2.c) */
    bool add_prefix; /* encoding puts a space before a text that is not empty (the dummy prefix) */
    double merge_floor; /* a merge makes only pieces scoring above this: run.c's -1e10, or -INFINITY */
} tg_spm_options;

/* The options of llama2.c's tokenizer.bin as run.c reads it: ' ', the
 * dummy prefix, merges only into pieces scoring above -1e10. */
#define TG_SPM_LLAMA2C ((tg_spm_options){false, true, -1e10})

/* The vocabulary of a TG_TOK_SPM tokenizer, as a file holds it. */
typedef struct tg_spm_pieces {
    int32_t n; /* ids */
    const unsigned char *pieces; /* every piece as the vocabulary spells it, end to end */
    const int64_t *off; /* n + 1 offsets into pieces: piece i is [off[i], off[i + 1]) */
    const float *scores; /* n scores */
    const uint8_t *types; /* n tg_piece_type values */
    int32_t bos, eos; /* ids of CONTROL pieces, or -1 */
} tg_spm_pieces;

/* A TG_TOK_SPM tokenizer of v's pieces, all copied, with options o.
 * Checked: offsets, types (USER refused), finite scores, non-empty
 * pieces, NORMAL pieces distinct, BYTE pieces spelled "<0xXX>" or as the
 * one byte, each byte exactly once, every byte present (every text
 * encodes; with space_u2581 the space may lack one), and with space_u2581
 * a NORMAL piece U+2581 alone. NULL with a message naming the id (or a
 * NULL argument, a NaN merge_floor). */
TG_API tg_tokenizer *tg_tok_new_spm(const tg_spm_pieces *v, const tg_spm_options *o, tg_error *err);
/* Reads llama2.c's tokenizer.bin (an int32 longest length, then per id a
 * float32 score, an int32 length and the bytes, to the end of the file)
 * as run.c reads it: ids 0, 1, 2 the specials <unk>, BOS, EOS; ids 3 to
 * 258 the bytes 0..255 (each "<0xXX>" or the byte itself); the rest
 * NORMAL pieces; options TG_SPM_LLAMA2C; max_token_length must be the
 * longest piece's length. vocab_size > 0 is the count the
 * file must hold (a model's), 0 takes what it holds. NULL with a message
 * naming the file, the id and the byte offset. */
TG_API tg_tokenizer *tg_tok_load_llama2c(const char *path, int32_t vocab_size, tg_error *err);
/* The score of id (TG_TOK_SPM); 0 for the other kinds, NAN when id is out
 * of range or t is NULL. */
TG_API float tg_tok_score(const tg_tokenizer *t, int32_t id);
/* The tg_piece_type of id (TG_TOK_SPM; the other kinds: CONTROL for a
 * special, else NORMAL); TG_PIECE_NONE when id is out of range or t is
 * NULL. */
TG_API tg_piece_type tg_tok_piece_type(const tg_tokenizer *t, int32_t id);
/* id as the vocabulary spells it ("<0x0A>", "\xe2\x96\x81the"; for the other
 * kinds the same as tg_tok_piece), its length in *len; NULL (*len 0)
 * when id is out of range. len may be NULL. */
TG_API const unsigned char *tg_tok_spelled(const tg_tokenizer *t, int32_t id, size_t *len);
/* True when tg_tok_encode puts the dummy-prefix space before a non-empty
 * text itself (a TG_TOK_SPM with add_prefix), so a caller that wants
 * llama2.c's " " + text must not add one; false otherwise (NULL too). */
TG_API bool tg_tok_adds_prefix(const tg_tokenizer *t);
/* t's options into *o: 0, or -1 when t is not TG_TOK_SPM (or NULL). */
TG_API int tg_tok_spm_options_of(const tg_tokenizer *t, tg_spm_options *o);

/* ---- what a tokenizer holds (text/tokenizer.c) ---------------------------- */

/* t's kind; TG_TOK_NONE for NULL. */
TG_API tg_tok_kind tg_tok_kind_of(const tg_tokenizer *t);
/* Number of ids (pieces and specials); 0 for NULL. */
TG_API int32_t tg_tok_vocab_size(const tg_tokenizer *t);
/* The BOS id (TG_TOK_BPE: 1; tiktoken: -1, GPT-2 has none); -1 for NULL. */
TG_API int32_t tg_tok_bos(const tg_tokenizer *t);
/* The EOS id (TG_TOK_BPE: 2; GPT-2: <|endoftext|> 50256); -1 for NULL. */
TG_API int32_t tg_tok_eos(const tg_tokenizer *t);
/* The id of the special token whose text is s ("<s>", "<|endoftext|>"), or -1. */
TG_API int32_t tg_tok_special_id(const tg_tokenizer *t, const char *s);
/* True if id is a special token; false for an ordinary piece, an id out
 * of range or a NULL t. */
TG_API bool tg_tok_is_special(const tg_tokenizer *t, int32_t id);
/* The bytes of id (a special's are its text) and their count in *len;
 * NULL (and *len 0) when id is out of range. len may be NULL. */
TG_API const unsigned char *tg_tok_piece(const tg_tokenizer *t, int32_t id, size_t *len);
/* The longest piece, in bytes; 0 for NULL. */
TG_API size_t tg_tok_max_piece_len(const tg_tokenizer *t);
/* Number of merges of a TG_TOK_BPE tokenizer (ids vocab_size - merges ..
 * vocab_size - 1 are made by them), 0 otherwise. */
TG_API int32_t tg_tok_n_merges(const tg_tokenizer *t);
/* Merge k (0 = learned first): the ids it joins in *left, *right; returns
 * the id it makes, or -1 when k is out of range. */
TG_API int32_t tg_tok_merge(const tg_tokenizer *t, int32_t k, int32_t *left, int32_t *right);

/* True when a and b give every id the same bytes and specials (and, for
 * TG_TOK_SPM, the same spelling, score and type, and the same options);
 * two NULLs are the same, a NULL and a tokenizer not. */
TG_API bool tg_tok_same(const tg_tokenizer *a, const tg_tokenizer *b);

/* ---- encoding and decoding (text/encode.c, text/decode.c) ----------------- */

/* Encodes len bytes of text into *ids (allocated with tg_malloc; free with
 * tg_free; set to NULL on error) and returns their count. Texts of a few
 * MB and more are cut at word starts into one part per tg_num_threads()
 * thread; the ids do not depend on the thread count. -1 with a message
 * (NULL arguments, out of memory, a regex failure). len 0 gives 0 ids. */
TG_API int64_t tg_tok_encode(const tg_tokenizer *t, const void *text, size_t len, int32_t **ids, tg_error *err);
/* Mean bytes per token of text under t (len / ids); NAN on error or for an
 * empty text. */
TG_API double tg_tok_bytes_per_token(const tg_tokenizer *t, const void *text, size_t len);
/* The bytes of n ids, end to end (a special's text included; for a
 * tokenizer that adds the dummy prefix, the space that begins the piece
 * at position 0 or right after BOS is left out, as run.c and
 * sentencepiece decode, so decoding an encoding gives the text). Writes at
 * most cap bytes to out (which may be NULL when cap is 0) and returns the
 * full length, like snprintf (no NUL). -1 with a message for an id out of
 * range. */
TG_API int64_t tg_tok_decode(const tg_tokenizer *t, const int32_t *ids, size_t n, void *out, size_t cap, tg_error *err);

/* A streaming decoder for text generated one token at a time: it emits
 * complete UTF-8 characters and holds back the start of a character whose
 * remaining bytes may come with the next token. Bytes that cannot begin or
 * continue a valid character are emitted as they are, and
 * tg_tok_stream_flush emits whatever is held, so the concatenated output is
 * exactly the ids' bytes, valid UTF-8 or not. */
typedef struct tg_tok_stream {
    const tg_tokenizer *tok;
    unsigned char held[4];
    int n_held;
} tg_tok_stream;

/* Starts s on t with nothing held. */
TG_API void tg_tok_stream_init(tg_tok_stream *s, const tg_tokenizer *t);
/* Adds id's bytes and writes to out what can be shown now; returns the
 * number of bytes written. out must hold tg_tok_max_piece_len(t) + 3
 * bytes. -1 (nothing changes) for an id out of range, a smaller cap, or
 * NULL arguments. */
TG_API int64_t tg_tok_stream_push(tg_tok_stream *s, int32_t id, void *out, size_t cap);
/* Writes the held bytes (at most 3) to out (cap >= 3) and empties s;
 * returns their count, -1 for NULL arguments or a smaller cap. */
TG_API int64_t tg_tok_stream_flush(tg_tok_stream *s, void *out, size_t cap);

/* ---- token files (text/token_file.c) --------------------------------------- */

typedef enum tg_tokfile_format {
    TG_TOKFILE_AUTO = 0, /* llm.c's if the file starts with its magic, else nanoGPT's */
    TG_TOKFILE_NANOGPT = 1, /* prepare.py's output: raw little-endian uint16 ids */
    TG_TOKFILE_LLMC = 2 /* llm.c's: 256 int32 header (magic 20240520, version 1 (uint16
                               ids) or 2 (uint32 ids), count), then the ids */
} tg_tokfile_format;

#define TG_LLMC_MAGIC 20240520
/* The largest vocab_size tg_tokfile_open takes: ids are read as int32. */
#define TG_TOKFILE_MAX_VOCAB ((int64_t)1 << 31)

typedef struct tg_tokfile tg_tokfile;

/* Opens a token file (mapped into memory, not copied) and validates it
 * whole: a known header, a size that matches it (an odd byte count for
 * nanoGPT's, a count that disagrees with the bytes for llm.c's), at least
 * one token, every id < vocab_size (0 < vocab_size <= TG_TOKFILE_MAX_VOCAB,
 * 2^31: the ids are read as int32). NULL with a message
 * naming the file and the byte offset of the problem. */
TG_API tg_tokfile *tg_tokfile_open(const char *path, tg_tokfile_format format, int64_t vocab_size, tg_error *err);
/* Unmaps and frees f; accepts NULL. */
TG_API void tg_tokfile_free(tg_tokfile *f);
/* Number of tokens in f; 0 for NULL. */
TG_API int64_t tg_tokfile_count(const tg_tokfile *f);
/* The format f was read as (TG_TOKFILE_NANOGPT or TG_TOKFILE_LLMC);
 * TG_TOKFILE_AUTO for NULL. */
TG_API tg_tokfile_format tg_tokfile_format_of(const tg_tokfile *f);
/* Copies tokens [start, start + n) into out as int32. 0, or -1 when the
 * range is outside the file or an argument is NULL. */
TG_API int tg_tokfile_read(const tg_tokfile *f, int64_t start, int64_t n, int32_t *out);
/* Writes n ids to path in format (NANOGPT, or LLMC: version 1 when every id
 * fits in uint16, else 2), atomically. 0, or -1 with a message (an id
 * that does not fit, n too large for the llm.c header, I/O). */
TG_API int tg_tokfile_write(const char *path, tg_tokfile_format format, const int32_t *ids, int64_t n, tg_error *err);

#ifdef __cplusplus
}
#endif

#endif
