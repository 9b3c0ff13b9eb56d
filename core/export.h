/* tapegrad core: TG_API marks the functions of the public API.
 *
 * The library is compiled with hidden visibility (CMakeLists.txt), so
 * libtapegrad.so exports exactly the functions declared with TG_API and
 * nothing of its internals (nor the stb_ds it compiles in); the
 * exported_symbols test checks both directions. Every public header
 * includes this one. */
#ifndef TG_EXPORT_H
#define TG_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define TG_API __attribute__((visibility("default")))
#else
#define TG_API
#endif

#endif
