/* formats/hf_config.c: config.json as transformers reads and writes it,
 * to and from a tapegrad model config. Not public. */
#ifndef TG_HF_CONFIG_INTERNAL_H
#define TG_HF_CONFIG_INTERNAL_H

#include <cJSON.h>
#include <stdint.h>

#include "../nn/nn.h"

/* The model config.json describes (model_type gpt2 or llama, with the
 * "tapegrad" object's additions) into c. 0, or -1 with a message naming
 * the key. */
int tg_hf_config_read(const cJSON *j, tg_model_config *c, tg_error *err);
/* The id under key (bos_token_id, eos_token_id) when it is one of
 * vocab_size ids, else -1. */
int32_t tg_hf_config_token_id(const cJSON *j, const char *key, int vocab_size);
/* config.json for a model of config c stored in dt, with its BOS and EOS
 * ids (-1: none); NULL when out of memory. Free with cJSON_Delete. */
cJSON *tg_hf_config_write(const tg_model_config *c, tg_dtype dt, int32_t bos, int32_t eos);

#endif
