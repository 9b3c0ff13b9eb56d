/* Whether two tokenizers are the same: every id's piece, spelling,
 * score and type, the specials, BOS and EOS, and a SentencePiece
 * vocabulary's description. Built on the public getters alone, so it
 * sits above the tokenizer and the SentencePiece files, not in either. */
#include "text.h"

#include <string.h>

bool tg_tok_same(const tg_tokenizer *a, const tg_tokenizer *b)
{
    if (!a || !b) return a == b;
    const int32_t n = tg_tok_vocab_size(a);
    if (tg_tok_kind_of(a) != tg_tok_kind_of(b) || n != tg_tok_vocab_size(b) || tg_tok_bos(a) != tg_tok_bos(b) ||
        tg_tok_eos(a) != tg_tok_eos(b))
        return false;
    for (int32_t id = 0; id < n; id++) {
        size_t la, lb;
        const unsigned char *pa = tg_tok_piece(a, id, &la), *pb = tg_tok_piece(b, id, &lb);
        if (la != lb || memcmp(pa, pb, la) || tg_tok_is_special(a, id) != tg_tok_is_special(b, id)) return false;
        pa = tg_tok_spelled(a, id, &la);
        pb = tg_tok_spelled(b, id, &lb);
        if (la != lb || memcmp(pa, pb, la) || tg_tok_score(a, id) != tg_tok_score(b, id) ||
            tg_tok_piece_type(a, id) != tg_tok_piece_type(b, id))
            return false;
    }
    tg_spm_options oa, ob;
    if (!tg_tok_spm_options_of(a, &oa) && !tg_tok_spm_options_of(b, &ob) &&
        (oa.space_u2581 != ob.space_u2581 || oa.add_prefix != ob.add_prefix || oa.merge_floor != ob.merge_floor))
        return false;
    return true;
}
