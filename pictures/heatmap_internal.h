/* What the page (pictures/page.c) shares with the heatmaps' labels. */
#ifndef TG_PICTURES_HEATMAP_INTERNAL_H
#define TG_PICTURES_HEATMAP_INTERNAL_H

#include <stdint.h>

/* Bytes [i, i + n) of a label of len bytes at s that make one glyph: a
 * valid UTF-8 character of 2 to 4 bytes (drawn as one box; *g 0x80), else
 * byte i (*g that byte). Returns n. */
int tg_heatmap_label_unit(const uint8_t *s, int len, int i, uint8_t *g);

#endif
