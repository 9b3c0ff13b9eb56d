/* UTF-8 validation by the Unicode standard's table of well-formed byte
 * sequences (Table 3-7):
 *
 *   00..7F
 *   C2..DF  80..BF
 *   E0      A0..BF  80..BF          ED      80..9F  80..BF
 *   E1..EC  80..BF  80..BF          EE..EF  80..BF  80..BF
 *   F0      90..BF  80..BF  80..BF  F4      80..8F  80..BF  80..BF
 *   F1..F3  80..BF  80..BF  80..BF
 *
 * An ill-formed sequence is replaced by one U+FFFD per "maximal subpart":
 * the longest prefix of a well-formed sequence it starts with, or a single
 * byte when even the first byte is none. This is the practice Unicode
 * recommends and what the WHATWG TextDecoder (so Node.js) and Python's
 * errors="replace" do: "\xE2\x82" + "A" -> U+FFFD "A"; "\xC0\xAF" -> two. */
#include "text_internal.h"

/* The number of bytes a character with lead byte c has, and the range its
 * second byte must be in; 0 for a byte that starts no character. */
static int lead(unsigned char c, unsigned char *lo, unsigned char *hi)
{
    *lo = 0x80;
    *hi = 0xBF;
    if (c < 0x80) return 1;
    if (c < 0xC2) return 0;
    if (c < 0xE0) return 2;
    if (c == 0xE0) *lo = 0xA0;
    if (c == 0xED) *hi = 0x9F;
    if (c < 0xF0) return 3;
    if (c == 0xF0) *lo = 0x90;
    if (c == 0xF4) *hi = 0x8F;
    if (c < 0xF5) return 4;
    return 0;
}

/* How many of s[0..n) (n <= need) follow the lead byte's pattern. */
static int matching(const unsigned char *s, int n, unsigned char lo, unsigned char hi)
{
    int k = 1;
    for (; k < n; k++) {
        unsigned char a = k == 1 ? lo : 0x80, b = k == 1 ? hi : 0xBF;
        if (s[k] < a || s[k] > b) break;
    }
    return k;
}

int tg_utf8_char(const unsigned char *s, size_t n, int *sub)
{
    unsigned char lo, hi;
    int need = lead(s[0], &lo, &hi);
    *sub = 1;
    if (need == 1) return 1;
    if (need == 0) return 0;
    int avail = n < (size_t)need ? (int)n : need;
    int k = matching(s, avail, lo, hi);
    if (k == need) return need;
    *sub = k;
    return 0;
}

bool tg_utf8_incomplete(const unsigned char *s, int n)
{
    unsigned char lo, hi;
    if (n < 1) return false;
    int need = lead(s[0], &lo, &hi);
    return need > n && matching(s, n, lo, hi) == n;
}
