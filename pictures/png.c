/* Images as PNG files (see pictures.h): stb_image_write's encoder, into
 * a growing memory buffer, so that the caller decides how the bytes
 * reach the disk; and one file written all or nothing.
 *
 * stb_image_write is compiled in here, its functions static: a program
 * that links the static library and compiles stb_image_write itself gets
 * no second definition. */
#include "pictures.h"

#include <string.h>

#include "../core/alloc.h"
#include "../core/atomic_file.h"

#define STBI_WRITE_NO_STDIO
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STBIW_MALLOC(sz) tg_malloc(sz)
#define STBIW_REALLOC(p, newsz) tg_realloc(p, newsz)
#define STBIW_FREE(p) tg_free(p)
/* the encoders of the other formats go unused; gcc judges that at the end
 * of the file, so the warning stays off to the end */
#pragma GCC diagnostic ignored "-Wunused-function"
#include "stb_image_write.h"

typedef struct membuf {
    uint8_t *p;
    size_t len, cap;
    bool oom;
} membuf;

static void membuf_write(void *ctx, void *data, int size)
{
    membuf *b = ctx;
    if (b->oom || size <= 0) return;
    if (b->len + (size_t)size > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + (size_t)size) cap *= 2;
        uint8_t *p = tg_realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, (size_t)size);
    b->len += (size_t)size;
}

int tg_image_png(const tg_image *im, uint8_t **png, size_t *len, tg_error *err)
{
    if (png) *png = NULL;
    if (len) *len = 0;
    if (!im || !png || !len) return tg_error_set(err, "image_png: a NULL argument (the image, png or len)");
    if (!im->px || im->w < 1 || im->h < 1) return tg_error_set(err, "image_png: the image has no pixels");
    membuf b = {0};
    if (!stbi_write_png_to_func(membuf_write, &b, im->w, im->h, 3, im->px, im->w * 3) || b.oom) {
        tg_free(b.p);
        return tg_error_set(err, "image_png: out of memory encoding a %d x %d PNG", im->w, im->h);
    }
    *png = b.p;
    *len = b.len;
    return 0;
}

int tg_image_write_png(const tg_image *im, const char *path, tg_error *err)
{
    if (!path) return tg_error_set(err, "image_write_png: the path is NULL");
    uint8_t *png = NULL;
    size_t len = 0;
    if (tg_image_png(im, &png, &len, err)) return tg_error_prefix(err, path);
    tg_atomic_file f;
    int rc = 0;
    if (tg_atomic_begin(&f, path) || tg_atomic_write(&f, png, len) || tg_atomic_commit(&f)) {
        char msg[TG_ERROR_SIZE];
        rc = tg_error_set(err, "%s", tg_atomic_message(&f, path, msg, sizeof msg));
        tg_atomic_abort(&f);
    }
    tg_free(png);
    return rc;
}
