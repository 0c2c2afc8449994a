/* A binary heap over a caller's array, generated for one element type: the
 * merge queues of the BPE (text/bpe.c) and SentencePiece (text/spm.c)
 * tokenizers. HL_HEAP_DEFINE(name, T, before) defines
 *   static void name_push(T *heap, size_t *n, T x);
 *   static T name_pop(T *heap, size_t *n);   (needs *n > 0)
 * where before(const T *a, const T *b) is true when a must come out before b.
 * The array has room for every element pushed; nothing is allocated. The
 * order of the sift steps is fixed, so equal inputs pop in the same order on
 * every build. */
#ifndef HEARTH_BASE_HEAP_H
#define HEARTH_BASE_HEAP_H

#include <stddef.h>

#define HL_HEAP_DEFINE(name, T, before)                                                                                \
    static inline void name##_push(T *heap, size_t *n, T x) {                                                          \
        size_t i = (*n)++;                                                                                             \
        while (i > 0 && before(&x, &heap[(i - 1) / 2])) {                                                              \
            heap[i] = heap[(i - 1) / 2];                                                                               \
            i = (i - 1) / 2;                                                                                           \
        }                                                                                                              \
        heap[i] = x;                                                                                                   \
    }                                                                                                                  \
    static inline T name##_pop(T *heap, size_t *n) {                                                                   \
        T top = heap[0], last = heap[--(*n)];                                                                          \
        size_t i = 0;                                                                                                  \
        for (;;) {                                                                                                     \
            size_t c = 2 * i + 1;                                                                                      \
            if (c >= *n) break;                                                                                        \
            if (c + 1 < *n && before(&heap[c + 1], &heap[c])) c++;                                                     \
            if (!before(&heap[c], &last)) break;                                                                       \
            heap[i] = heap[c];                                                                                         \
            i = c;                                                                                                     \
        }                                                                                                              \
        heap[i] = last;                                                                                                \
        return top;                                                                                                    \
    }

#endif
