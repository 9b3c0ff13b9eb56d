/* tapegrad's training layer: the pieces a training program is made of,
 * each usable alone (nothing here owns the loop).
 *
 *   vocabularies  the ids a model reads: a text's bytes, llama2.c's bytes,
 *                 a tokenizer's ids (text/text.h), or bare ids of token
 *                 files; stored in and read back from a checkpoint
 *   datasets      a text or token files (nanoGPT's raw uint16, llm.c's
 *                 .bin) as one stream of ids split into train and val,
 *                 random windows of it as batches, bytes per token for
 *                 bits per byte
 *   checkpoints   a model's weights, config and vocabulary with the whole
 *                 training state, written atomically, read back checked,
 *                 so that a resumed run continues bit for bit
 *   budgets       how many steps fit a wall-clock budget, and a copy of
 *                 the state to time steps on and take back
 *   the loop's    the loss estimate on a split (on one process or
 *   pieces        several), a run's metrics file
 *
 * and, made of them, the run (train/run.h): what tiny_gpt train does, as
 * one call per step, evaluation and save of a program's own loop.
 *
 * The model interface is nn/nn.h's tg_model; optimizer and random-stream
 * state go into files with tg_adamw_state_write and tg_rng_to_string;
 * training on several processes is distributed/dist.h.
 * docs/adding-a-model.md trains a model of one's own with the run. */
#ifndef TG_TRAIN_H
#define TG_TRAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/export.h"
#include "../core/file.h"
#include "../core/rng.h"
#include "../core/safetensors.h"
#include "../nn/nn.h"
#include "../optim/optim.h"
#include "../text/text.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- vocabularies (train/vocab.c) ----------------------------------------
 * Two of bytes:
 *   TG_VOCAB_BYTES     the sorted set of bytes a text has: id i is the i-th
 *                      byte present (nanoGPT's character-level data)
 *   TG_VOCAB_LLAMA2C   llama2.c's layout, what its run.c assumes: id 0
 *                      <unk>, 1 <s> (BOS, before every document), 2 </s>,
 *                      and 3 + b for every byte b (259 ids)
 * and two of tokens:
 *   TG_VOCAB_TOKENIZER a tokenizer's ids (text/text.h: tapegrad's BPE or
 *                      GPT-2's); with docs, a text's documents start with
 *                      its BOS, llama2.c's convention (a Llama's)
 *   TG_VOCAB_IDS       ids of token files without a tokenizer: no text,
 *                      no bytes per token */
typedef enum tg_vocab_kind { TG_VOCAB_BYTES, TG_VOCAB_LLAMA2C, TG_VOCAB_TOKENIZER, TG_VOCAB_IDS } tg_vocab_kind;

#define TG_VOCAB_BOS 1 /* TG_VOCAB_LLAMA2C's BOS */
#define TG_VOCAB_LLAMA2C_SIZE 259

typedef struct tg_vocab {
    tg_vocab_kind kind;
    int size; /* ids the model needs (TG_VOCAB_TOKENIZER: at least the tokenizer's) */
    uint8_t chars[256]; /* TG_VOCAB_BYTES: id -> byte */
    int16_t ids[256]; /* byte -> id, or -1 (all -1 for the token kinds) */
    tg_tokenizer *tok; /* TG_VOCAB_TOKENIZER: owned, freed by tg_vocab_release */
    bool docs; /* TG_VOCAB_TOKENIZER: documents are BOS + " " + text (a Llama's) */
} tg_vocab;

/* A TG_VOCAB_BYTES vocabulary of the bytes in text. Nothing for a NULL v. */
TG_API void tg_vocab_bytes(tg_vocab *v, const char *text, size_t len);
/* The TG_VOCAB_LLAMA2C vocabulary. Nothing for a NULL v. */
TG_API void tg_vocab_llama2c(tg_vocab *v);
/* A TG_VOCAB_IDS vocabulary of size ids. Nothing for a NULL v. */
TG_API void tg_vocab_ids(tg_vocab *v, int size);
/* v takes tok (freed with v, also on error): size max(its ids,
 * min_size); docs needs a BOS id (an error naming the tokenizer's kind
 * otherwise). 0, or -1 with a message. */
TG_API int tg_vocab_tokenizer(tg_vocab *v, tg_tokenizer *tok, bool docs, int min_size, tg_error *err);
/* Frees what v owns (its tokenizer) and zeroes it; v may be zeroed, or
 * made by any function here; NULL is ignored. */
TG_API void tg_vocab_release(tg_vocab *v);
/* The vocabulary as a checkpoint's "vocab" metadata: "10,32,97,..." (a
 * byte vocabulary's bytes), "llama2c", "tokenizer" (the entries are in
 * the file too: tg_vocab_write) or "ids:V", into buf (size bytes,
 * NUL-terminated). -1 for a NULL v or buf, or a buf too small. */
TG_API int tg_vocab_to_string(const tg_vocab *v, char *buf, size_t size);
/* Parses tg_vocab_to_string's byte and id forms. 0, or -1 with a message
 * ("tokenizer" needs the file: tg_vocab_read). */
TG_API int tg_vocab_from_string(tg_vocab *v, const char *s, tg_error *err);
/* Adds the vocabulary to a checkpoint being written: "vocab" metadata, and
 * a tokenizer's entries (tg_tok_st_add). 0, or -1 (the writer's error). */
TG_API int tg_vocab_write(const tg_vocab *v, tg_st_writer *w);
/* The vocabulary a file's "vocab" metadata names; for "tokenizer" the
 * tokenizer read from the file's entries, docs when the file's "arch" is
 * llama. 0, or -1 with a message (v is then empty). */
TG_API int tg_vocab_read(tg_vocab *v, const tg_st_file *f, tg_error *err);
/* Encodes len bytes with a byte vocabulary, one id per byte into out;
 * -1 at the first byte outside it (its index in *bad; every byte for the
 * token kinds), else 0. */
TG_API int tg_vocab_encode(const tg_vocab *v, const char *text, size_t len, int32_t *out, size_t *bad);
/* The bytes id stands for, into buf (at least 8 bytes): their count.
 * TG_VOCAB_LLAMA2C's specials are "<unk>", "\n<s>\n", "\n</s>\n"; an id
 * outside the vocabulary, and every id of the token kinds (decode those
 * with the tokenizer's streaming decoder), are 0 bytes. */
TG_API int tg_vocab_decode(const tg_vocab *v, int id, char *buf);
/* 0 when a model of vocab_size ids reads v's ids: vocab_size equal to a
 * TG_VOCAB_BYTES vocabulary's size, at least the size of the other kinds
 * (the ids past theirs unused); else -1 with a message naming both
 * sizes, the vocabulary called whose ("the checkpoint's", ...). */
TG_API int tg_vocab_check_size(const tg_vocab *v, int vocab_size, const char *whose, tg_error *err);
/* True when a document's text is encoded after a " " the caller puts in
 * front (llama2.c's dummy prefix): a TG_VOCAB_TOKENIZER with docs whose
 * tokenizer has no rule of its own. A TG_TOK_SPM tokenizer has one (it
 * adds the space itself when its file says so, or none), so false for
 * it; false for the other kinds and for NULL. */
TG_API bool tg_vocab_space_before_text(const tg_vocab *v);

/* ---- datasets (train/dataset.c) ------------------------------------------ */

typedef struct tg_dataset {
    int32_t *tokens; /* owned */
    size_t n, n_train; /* tokens [0, n_train) are the train split, [n_train, n) val */
    double bytes_per_token[2]; /* of the train and the val split's text; NAN when unknown (TG_VOCAB_IDS) */
} tg_dataset;

/* What identifies a token file's ids: their count and FNV-1a (64 bits)
 * over each id's 4 bytes, little-endian, so a resumed run can check it
 * reads the tokens it was trained on. */
typedef struct tg_token_file_id {
    int64_t count;
    uint64_t fnv;
    int format; /* TG_TOKFILE_NANOGPT or TG_TOKFILE_LLMC: the file's, as read */
} tg_token_file_id;

/* The bytes of a text's train split: its first 90% (nanoGPT's
 * int(0.9 * n)), moved back to the start of a UTF-8 character when the
 * mark falls inside one; the val split is the rest. */
TG_API size_t tg_text_train_bytes(const char *text, size_t len);
/* A text split at tg_text_train_bytes (the first 90% train, as nanoGPT),
 * each split encoded apart with v, the train ids first. TG_VOCAB_BYTES:
 * one id per byte. TG_VOCAB_LLAMA2C: a split is cut into documents at
 * blank lines ("\n\n": the first newline stays with its paragraph), each
 * entering as run.c encodes a prompt: BOS, the id of " ", its bytes.
 * TG_VOCAB_TOKENIZER: a split encoded in one piece, or with docs each
 * document as BOS + encode(" " + document). Bytes per token of each
 * split: its bytes of text over its ids (a blank line's newline counted,
 * for the BOS that stands for it). 0, or -1 with a message (a byte
 * outside the vocabulary, a split shorter than block_size + 1 tokens,
 * TG_VOCAB_IDS, out of memory). */
TG_API int tg_dataset_from_text(tg_dataset *d, const tg_vocab *v, const char *text, size_t len, int block_size,
                                tg_error *err);
/* Token files (tg_tokfile_open: nanoGPT's or llm.c's format, told apart
 * by the header; every id below vocab_size) read whole: train_path's ids
 * are the train split and val_path's the val split, or, with val_path
 * NULL, train_path's split 90/10. ids (NULL, or two slots) receives each
 * file's identity (the second zeroed without val_path). Bytes per token
 * from v (tg_dataset_bytes_per_token; NAN for TG_VOCAB_IDS). 0, or -1
 * with a message naming the file (a file that cannot be read, an id not
 * below v's size, the splits' sizes, bad arguments); then ids[k].count is
 * -1 for each file not read whole (the one at fault and any after it). */
TG_API int tg_dataset_from_token_files(tg_dataset *d, const tg_vocab *v, const char *train_path, const char *val_path,
                                       int block_size, tg_token_file_id *ids, tg_error *err);
/* Fills each split's bytes per token from its ids: the bytes the
 * tokenizer gives them (specials 0), minus one per BOS for docs (the
 * dummy space); NAN for the other kinds. Nothing for NULL arguments. */
TG_API void tg_dataset_bytes_per_token(tg_dataset *d, const tg_vocab *v);
/* Where a batch's rows go: rows [first, first + count) of a batch of
 * `total` windows of T + 1 tokens, x (count, T) the windows' first T
 * tokens, y (count, T) the next ones. */
typedef struct tg_rows {
    int32_t *x, *y;
    int total, first, count, T;
} tg_rows;
/* The rows r asks for of a batch of r->total random windows from the
 * train (val false) or val split. Every window's
 * start is drawn from rng, so rng moves as for the whole batch: processes
 * that take rows [r B, (r + 1) B) of an R B batch together see the batch
 * one process sees, with their streams in step. Nothing for bad
 * arguments (NULLs, a split shorter than T + 1, rows outside the batch). */
TG_API void tg_dataset_rows(const tg_dataset *d, bool val, const tg_rows *r, tg_rng *rng);
/* Windows of the split in epochs instead (tiny_gpt's --sampling epochs):
 * each epoch cuts the split into windows of T + 1 tokens that follow one
 * another (window k is tokens p + k T .. p + (k + 1) T) from a phase p,
 * and visits them in a shuffled order, so every token is a target once an
 * epoch (but for fewer than 2 T at the split's ends). The phase and the
 * order are a function of (seed, epoch), computed window by window:
 * the rows r asks for of the batch of windows at, at + 1, ...,
 * at + r->total - 1 need no other state, and a run that keeps `at` (the
 * windows drawn so far, tg_train_state.windows) resumes the same sequence;
 * processes taking their rows of one batch see the batch one process sees.
 * Nothing for bad arguments (NULLs, a split shorter than T + 1, rows
 * outside the batch, at < 0). */
TG_API void tg_dataset_epoch_rows(const tg_dataset *d, bool val, const tg_rows *r, uint64_t seed, int64_t at);
/* The windows of an epoch of tg_dataset_epoch_rows: (n - T) / T for a
 * split of n tokens, 1 below 2 T tokens, 0 below T + 1 (or for NULL d). */
TG_API int64_t tg_dataset_epoch_windows(const tg_dataset *d, bool val, int T);
/* Frees the tokens and zeroes d; accepts a zeroed d or NULL. */
TG_API void tg_dataset_release(tg_dataset *d);

/* ---- checkpoints (train/checkpoint.c) -------------------------------------- */

/* What a training checkpoint adds to the weights, besides the optimizer. */
typedef struct tg_train_state {
    int64_t step; /* steps done */
    double best_val; /* best val loss so far (INFINITY if none) */
    tg_rng data_rng, drop_rng; /* the batch and the dropout streams */
    int64_t windows; /* train windows drawn so far: tg_dataset_epoch_rows' place */
} tg_train_state;

/* A new run's state from its seed: step 0, no best val loss (INFINITY),
 * no windows drawn, the batch stream seeded (seed, 1) and the dropout
 * stream (seed, 4).
 * Nothing for a NULL ts. */
TG_API void tg_train_state_init(tg_train_state *ts, uint64_t seed);
/* What a checkpoint holds: the model, and what else is not NULL. */
typedef struct tg_checkpoint {
    const tg_model *model;
    const tg_vocab *vocab;
    const tg_adamw *opt;
    const void *opt_m, *opt_v; /* for a shard: the whole store's moments, else NULL */
    const tg_muon *muon;
    const tg_ema *ema;
    const tg_train_state *ts;
    const char *const *meta; /* n_meta more pairs: meta[2i] key, meta[2i+1] value */
    int n_meta;
} tg_checkpoint;
/* Writes a checkpoint atomically (tg_st_writer_save: a failure leaves
 * path as it was): c->model's parameters under their names, its config
 * (tg_model_config_write), the vocabulary (tg_vocab_write), the meta
 * pairs. With ts, "train.step" (the step the weights are from); with opt
 * and ts too, the whole training state a run resumes from: the
 * optimizer's (tg_adamw_state_write under "optimizer"; for a shard, from
 * opt_m and opt_v), with muon (AdamW then takes the rest,
 * tg_muon_exclude) Muon's (tg_muon_state_write under "muon"), with ema
 * the weight averages' (tg_ema_state_write under "ema"),
 * "train.best_val",
 * "train.data_rng", "train.dropout_rng" (tg_rng_to_string), "train.windows" and
 * "train.isa", the kernel path it ran on. What tg_checkpoint_load_train
 * would refuse is not written: streams never seeded, a negative step,
 * best val loss or windows count, optimizers' step counts other than
 * ts->step; nor are pieces that do not belong together: an opt, muon or
 * ema made on another store than m's, muon or ema without opt, opt
 * without ts, an AdamW that still updates a matrix Muon updates (call
 * tg_muon_exclude). 0, or -1 with a message (the file then untouched). */
TG_API int tg_checkpoint_save(const char *path, const tg_checkpoint *c, tg_error *err);
/* Builds the model f describes (tg_model_config_read) in dtype dt into m
 * and loads its weights (F32, F64, F16 or BF16 in the file). dropout < 0
 * keeps the file's. Before anything is allocated the config is checked against the
 * file's tensors (the embeddings' shapes, and at least as many float
 * values as the config's parameter count), so a crafted file is refused
 * in time proportional to its size. Every weight must be finite; a tied
 * head the file carries anyway must equal the embedding. 0, or -1 with
 * a message (m is then zeroed). */
TG_API int tg_checkpoint_load_model(const tg_st_file *f, tg_dtype dt, double dropout, tg_model *m, tg_error *err);
/* The vocabulary of model m loaded from f: f's "vocab" metadata
 * (tg_vocab_read), else for a Llama llama2.c's bytes (checkpoints written
 * before they carried one), checked with tg_vocab_check_size. 0, or -1 with a
 * message; for weights of another family without "vocab" (from
 * elsewhere) it starts "the checkpoint has no 'vocab' in its metadata". */
TG_API int tg_checkpoint_load_vocab(const tg_st_file *f, const tg_model *m, tg_vocab *v, tg_error *err);
/* Restores the training state tg_checkpoint_save wrote into opt (made on
 * the loaded model's store, whole or a shard: tg_adamw_state_read), muon
 * (NULL when the run has none: tg_muon_state_read), ema (NULL when
 * the run keeps no weight averages: tg_ema_state_read) and ts: train.step in
 * [0, max_step], optimizer.steps (and muon.steps) equal to it, best_val a
 * number >= 0 or inf, the random streams in their exact form, train.windows
 * >= 0 (0 when absent: files from before it). A file
 * with Muon's state is refused without muon, and one without it with
 * muon (a run keeps its optimizer); so is one with averages without ema,
 * and one without them with it. muon and ema must be made on opt's
 * store, and opt must leave Muon's matrices alone (tg_muon_exclude), as
 * the run that wrote the file did. 0, or -1 with a message naming the
 * key (opt, muon, ema and ts then unchanged). */
TG_API int tg_checkpoint_load_train(const tg_st_file *f, tg_adamw *opt, tg_muon *muon, tg_ema *ema, tg_train_state *ts,
                                    int64_t max_step, tg_error *err);

/* ---- the weights a checkpoint holds (train/checkpoint_weights.c) ------------- */

/* Which weights f's tensors are, for a run that averaged its weights
 * (tg_ema): "ema" (the averages) or "raw" (the weights trained), as its
 * metadata "weights" says (best.safetensors: the lower val loss at its
 * step); in a file without the key, "raw" when it holds the averages
 * beside them ("ema.values": last.safetensors) and "ema" when its run
 * averaged ("train.ema" above 0) but it holds none beside (an older
 * best.safetensors). NULL for a run that kept no averages, or a NULL f. */
TG_API const char *tg_checkpoint_weights(const tg_st_file *f);
/* True when f holds the averages ("ema.values") beside its tensors. */
TG_API bool tg_checkpoint_has_averages(const tg_st_file *f);
/* m, loaded from f (tg_checkpoint_load_model), takes f's averages
 * ("ema.values": the store's flat layout, F32 or F64 whatever m's dtype,
 * every value finite) as its weights, e.g. to evaluate or sample what an
 * averaging run's last.safetensors would have given. 0, or -1 with a
 * message (m then unchanged). */
TG_API int tg_checkpoint_load_averages(const tg_st_file *f, tg_model *m, tg_error *err);

/* ---- training to a wall-clock budget (train/budget.c) --------------------- */

/* What a run costs, in seconds, as measured at its start. */
typedef struct tg_budget_costs {
    double spent; /* gone already: setup, a tokenizer trained, the timing itself */
    double step; /* one optimizer step */
    double eval; /* one evaluation with the checkpoints it writes */
    double fixed; /* spent once more whatever the steps (e.g. one save) */
} tg_budget_costs;

/* The most steps n in [1, max_steps] whose run fits the budget:
 *   spent + fixed + n step + evals(n) eval <= budget (1 - margin)
 * where evals(n) = floor(n / eval_interval) + (1 if eval_interval does
 * not divide n): an evaluation every eval_interval steps and one at the
 * end. 0 when not even one step fits; -1 for a NULL c, a budget not
 * above 0 or not finite, a margin outside [0, 1), eval_interval or
 * max_steps below 1, or a cost negative, infinite or NaN. */
TG_API int64_t tg_budget_steps(double budget, double margin, const tg_budget_costs *c, int64_t eval_interval,
                               int64_t max_steps);

/* A copy of a run's state: m's weights, opt's moments (its shard) and
 * steps, muon's momentum and steps (muon may be NULL), and ts. Steps run
 * after it (to time them) are undone by tg_train_snapshot_restore: the
 * run then goes on bit for bit as if they had never run. (A graph's
 * dropout stream is the caller's: keep it in ts->drop_rng.) */
typedef struct tg_train_snapshot tg_train_snapshot;
/* NULL with a message for a NULL m, opt or ts, or out of memory. */
TG_API tg_train_snapshot *tg_train_snapshot_take(tg_model *m, tg_adamw *opt, tg_muon *muon, const tg_train_state *ts,
                                                 tg_error *err);
/* Puts the copy back into the objects it was taken of. 0, or -1 for a
 * NULL argument or objects of other sizes (nothing is then changed). */
TG_API int tg_train_snapshot_restore(const tg_train_snapshot *s, tg_model *m, tg_adamw *opt, tg_muon *muon,
                                     tg_train_state *ts);
/* Frees s; NULL is ignored. */
TG_API void tg_train_snapshot_free(tg_train_snapshot *s);

/* ---- the loop's pieces (train/eval.c, train/metrics.c) ------------------- */

/* How tg_eval_loss draws its batches and where its sums go. */
typedef struct tg_eval_spec {
    int batch; /* rows this process runs per micro-batch (B) */
    int accum; /* micro-batches per batch (A >= 1), as the run trains */
    int T; /* tokens per row */
    int64_t iters; /* batches of ranks x batch x accum rows */
    uint64_t seed; /* the windows' stream is seeded by (seed, step): the same */
    int64_t step; /*   step always sees the same windows */
    /* true: not an estimate but the split's loss itself, every window of
     * T tokens once, in order (the last one shorter: each target counted
     * once); iters, seed and step are then not used, nor accum (which
     * must still be >= 1) */
    bool whole;
    int rank, ranks; /* this process is rank of ranks (0 of 1 alone) */
    /* Replaces *x with the sum over the processes of their *x (e.g. with
     * tg_dist_allreduce_f64); NULL on one process. */
    void (*sum)(void *ctx, double *x);
    /* Called before each batch (done of iters), for a progress line; or NULL. */
    void (*progress)(void *ctx, int64_t done, int64_t iters);
    void *ctx;
} tg_eval_spec;

/* The mean loss of m over s->iters batches of the train (val false) or val
 * split, in eval mode without grad (dropout off), on g (reset after each
 * micro-batch; its modes restored at the end). Each batch is accum
 * micro-batches of ranks x batch windows, of which this process runs rows
 * [rank batch, (rank + 1) batch) (tg_dataset_rows), and the sums are added
 * across processes, so a run split into micro-batches or processes
 * estimates what the whole batch gives, to rounding. The windows come from
 * their own stream, so an estimate never disturbs training. With
 * s->whole, the mean over every target of the split instead: its windows
 * in micro-batches of batch rows (the last padded with ignored targets),
 * micro-batch k run by process k mod ranks; the same to rounding on any
 * batch and number of processes. NAN with the
 * graph's message in err on failure (this process's alone: the others may
 * then wait in their sum, and a program on several processes must end the
 * job). */
TG_API double tg_eval_loss(tg_graph *g, tg_model *m, const tg_dataset *d, bool val, const tg_eval_spec *s,
                           tg_error *err);

/* A run's metrics file: CSV, one row per step, "step" then the columns.
 * Each column's values are printed with its format, a printf conversion
 * of one double: "%[.P](f|g|e)" (P up to 17); NAN leaves the field empty
 * (not measured at that step). */
typedef struct tg_metrics_column {
    const char *name; /* [A-Za-z0-9_], not "step" */
    const char *format; /* e.g. "%.6f" */
} tg_metrics_column;
typedef struct tg_metrics tg_metrics;
/* Opens path for rows. resume_step < 0: a new file, the header only.
 * Otherwise the file of the run being resumed keeps its header and its
 * complete rows up to resume_step (the checkpoint's step): the rows a
 * killed run wrote after its last checkpoint are dropped, so the resumed
 * run's rows follow without repeats. A file with another header, or none,
 * keeps no rows (*notice, when given, says so: "", or a sentence). The
 * rewrite is atomic. NULL with a message (a bad column, I/O). */
TG_API tg_metrics *tg_metrics_open(const char *path, const tg_metrics_column *cols, int n_cols, int64_t resume_step,
                                   char *notice, size_t notice_len, tg_error *err);
/* Appends the row of step (n_cols values) and flushes it. 0, or -1 (a
 * NULL argument, a write error). */
TG_API int tg_metrics_write(tg_metrics *m, int64_t step, const double *values);
/* Closes the file: 0, or -1 when a write failed since it was opened. Accepts NULL. */
TG_API int tg_metrics_close(tg_metrics *m);

/* Cross-entropy in nats per token as bits per byte of the text. */
static inline double tg_bits_per_byte(double nats, double bytes_per_token)
{
    return nats / 0.69314718055994530942 / bytes_per_token;
}

#ifdef __cplusplus
}
#endif

/* generation and scoring: the sampler, prompts, tg_generate, tg_text_nll */
#include "generate.h"
/* the built-in corpus, whose entropy floor is known */
#include "corpus.h"
/* a training run as an object: its settings, steps, evaluations, saves, resume, processes */
#include "run.h"

#endif
