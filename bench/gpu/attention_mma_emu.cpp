// A host model of src/backend/cuda/attention_mma.cu for checking a change to
// its indexing or its softmax on a machine without a GPU: the kernel's
// shared-memory layout (padded rows), its loops per block and per warp, the
// two-lane softmax lane by lane (the shuffles as reads of the partner lane),
// and WMMA's 16x16x16 products as plain loops with the documented meaning of
// row- and column-major ldm, all in the kernel's types (F16 via _Float16, F32
// sums). Shared memory starts as garbage (0xFF bytes) and the cache rows past
// the pass as NaN, so a read of an unwritten element or a padding column
// shows. Each case is compared with a float64 softmax attention over the
// same F16 inputs (causal, sliding window, ALiBi as ggml defines its slopes).
// It is a copy: keep it in step with the kernel by hand (it was written by a
// desk review on 2026-11-28 and follows the kernel as of commit 48ac1fa).
//
//   g++ -O2 -o /tmp/amma_emu bench/gpu/attention_mma_emu.cpp && /tmp/amma_emu
//
// prints the largest |difference| per case; test_backend_ops bounds the real
// kernel at 1e-3 (ATTN_MAX_ABS).
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
using namespace std;
#define MMA_ROWS 64
#define MMA_KEYS 32
typedef _Float16 half;
static float slope_of(int n_head, float mb, int h) {
    int n = 1;
    while (n * 2 <= n_head)
        n *= 2;
    return h < n ? powf(powf(2.f, -mb / n), h + 1) : powf(powf(2.f, -(mb / 2) / n), 2 * (h - n) + 1);
}
// wmma emulation
static void mma_rowA_colB(float *acc, const half *a, int lda, const half *b, int ldb) {
    for (int m = 0; m < 16; m++)
        for (int n = 0; n < 16; n++) {
            float s = 0;
            for (int k = 0; k < 16; k++)
                s += (float)a[m * lda + k] * (float)b[n * ldb + k];
            acc[m * 16 + n] += s;
        }
}
static void mma_rowA_rowB(float *acc, const half *a, int lda, const half *b, int ldb) {
    for (int m = 0; m < 16; m++)
        for (int n = 0; n < 16; n++) {
            float s = 0;
            for (int k = 0; k < 16; k++)
                s += (float)a[m * lda + k] * (float)b[k * ldb + n];
            acc[m * 16 + n] += s;
        }
}
static void block(const float *q, const half *k, const half *v, float *out, int n, int n_head, int n_head_kv, int hd,
                  const int *pos_of, const int *row0_of, int n_swa, float scale, float max_bias, int bx, int by) {
    int qs = hd + 8, os = hd + 4;
    vector<char> smem((size_t)qs * 2 * (MMA_ROWS + 2 * MMA_KEYS) + (size_t)os * 4 * MMA_ROWS + MMA_ROWS * MMA_KEYS * 6 +
                      MMA_ROWS * 16);
    for (auto &c : smem)
        c = (char)0xFF; // garbage
    half *q_s = (half *)smem.data();
    half *k_s = q_s + MMA_ROWS * qs;
    half *v_s = k_s + MMA_KEYS * qs;
    float *o_s = (float *)(v_s + MMA_KEYS * qs);
    float *s_s = o_s + MMA_ROWS * os;
    half *p_s = (half *)(s_s + MMA_ROWS * MMA_KEYS);
    float *m_s = (float *)(p_s + MMA_ROWS * MMA_KEYS);
    float *l_s = m_s + MMA_ROWS;
    int *lo_s = (int *)(l_s + MMA_ROWS), *hi_s = lo_s + MMA_ROWS;
    if ((char *)(hi_s + MMA_ROWS) - smem.data() != (long)smem.size()) {
        printf("size mismatch\n");
        exit(1);
    }
    int h = bx, kh = h / (n_head / n_head_kv), t0 = by * MMA_ROWS;
    int rows = min(MMA_ROWS, n - t0);
    long q_dim = (long)n_head * hd, kv_dim = (long)n_head_kv * hd;
    for (int r = 0; r < MMA_ROWS; r++) {
        int lo = INT_MAX, hi = -1;
        if (r < rows) {
            int p = pos_of[t0 + r], row0 = row0_of[t0 + r];
            lo = row0 + (n_swa > 0 && p - n_swa + 1 > 0 ? p - n_swa + 1 : 0);
            hi = row0 + p;
        }
        lo_s[r] = lo;
        hi_s[r] = hi;
        m_s[r] = -INFINITY;
        l_s[r] = 0;
    }
    for (int i = 0; i < MMA_ROWS * hd; i++) {
        int r = i / hd, d = i % hd;
        q_s[r * qs + d] = (half)(r < rows ? q[(t0 + r) * q_dim + (long)h * hd + d] : 0.f);
        o_s[r * os + d] = 0;
    }
    float slope = max_bias > 0 ? slope_of(n_head, max_bias, h) : 0;
    int j_lo = lo_s[0], j_hi = hi_s[rows - 1];
    int chunks = hd / 8;
    const half *kh0 = k + (long)kh * hd, *vh0 = v + (long)kh * hd;
    for (int j0 = j_lo; j0 <= j_hi; j0 += MMA_KEYS) {
        for (int i = 0; i < MMA_KEYS * chunks; i++) {
            int jj = i / chunks, c = i % chunks;
            long off = (long)(j0 + jj) * kv_dim + 8 * c;
            bool in = j0 + jj <= j_hi;
            for (int e = 0; e < 8; e++) {
                int at = jj * (qs / 8) + c;
                k_s[at * 8 + e] = in ? kh0[off + e] : (half)0;
                v_s[at * 8 + e] = in ? vh0[off + e] : (half)0;
            }
        }
        for (int warp = 0; warp < 4; warp++) {
            half *qw = q_s + warp * 16 * qs, *pw = p_s + warp * 16 * MMA_KEYS;
            float *ow = o_s + warp * 16 * os, *sw = s_s + warp * 16 * MMA_KEYS;
            for (int nb = 0; nb < MMA_KEYS / 16; nb++) {
                float acc[256] = {0};
                for (int kk = 0; kk < hd; kk += 16)
                    mma_rowA_colB(acc, qw + kk, qs, k_s + nb * 16 * qs + kk, qs);
                for (int m = 0; m < 16; m++)
                    for (int c = 0; c < 16; c++)
                        sw[m * MMA_KEYS + nb * 16 + c] = acc[m * 16 + c];
            }
            { // lanes: rr = lane&15, e = lane>>4, keys rotated; phases separated where the kernel shuffles/syncs
                float S[32][16], MX[32], SUM[32], MOLD[32], MNEW[32], C[32];
                for (int lane = 0; lane < 32; lane++) {
                    int rr = lane & 15, e = lane >> 4, r = warp * 16 + rr;
                    int lo = lo_s[r], hi = hi_s[r];
                    float mx = -INFINITY;
                    for (int k = 0; k < 16; k++) {
                        int kk = e * 16 + ((k + rr) & 15), j = j0 + kk;
                        S[lane][k] =
                            (j >= lo && j <= hi) ? sw[rr * MMA_KEYS + kk] * scale + slope * (float)(j - hi) : -INFINITY;
                        mx = fmaxf(mx, S[lane][k]);
                    }
                    MX[lane] = mx;
                }
                for (int lane = 0; lane < 32; lane++) {
                    int rr = lane & 15, r = warp * 16 + rr;
                    float mx = fmaxf(MX[lane], MX[lane ^ 16]);
                    MOLD[lane] = m_s[r];
                    MNEW[lane] = fmaxf(MOLD[lane], mx);
                }
                float SUM0[32];
                for (int lane = 0; lane < 32; lane++) {
                    int rr = lane & 15, e = lane >> 4;
                    float sum = 0;
                    for (int k = 0; k < 16; k++) {
                        float p = S[lane][k] == -INFINITY ? 0.f : expf(S[lane][k] - MNEW[lane]);
                        sum += p;
                        pw[rr * MMA_KEYS + e * 16 + ((k + rr) & 15)] = (half)p;
                    }
                    SUM0[lane] = sum;
                }
                for (int lane = 0; lane < 32; lane++) {
                    SUM[lane] = SUM0[lane] + SUM0[lane ^ 16];
                    C[lane] = MNEW[lane] == -INFINITY ? 1.f : expf(MOLD[lane] - MNEW[lane]);
                }
                for (int lane = 0; lane < 32; lane++) {
                    int rr = lane & 15, e = lane >> 4;
                    if (C[lane] != 1.f)
                        for (int d = e; d < hd; d += 2)
                            ow[rr * os + d] *= C[lane];
                }
                for (int lane = 0; lane < 32; lane++) {
                    int rr = lane & 15, e = lane >> 4, r = warp * 16 + rr;
                    if (e == 0) {
                        l_s[r] = l_s[r] * C[lane] + SUM[lane];
                        m_s[r] = MNEW[lane];
                    }
                }
            }
            for (int nb = 0; nb < hd; nb += 16) {
                float acc[256];
                for (int m = 0; m < 16; m++)
                    for (int c = 0; c < 16; c++)
                        acc[m * 16 + c] = ow[m * os + nb + c];
                for (int kk = 0; kk < MMA_KEYS; kk += 16)
                    mma_rowA_rowB(acc, pw + kk, MMA_KEYS, v_s + kk * qs + nb, qs);
                for (int m = 0; m < 16; m++)
                    for (int c = 0; c < 16; c++)
                        ow[m * os + nb + c] = acc[m * 16 + c];
            }
        }
    }
    for (int i = 0; i < rows * hd; i++) {
        int r = i / hd, d = i % hd;
        out[(t0 + r) * q_dim + (long)h * hd + d] = o_s[r * os + d] / l_s[r];
    }
}
int main() {
    struct C {
        int h, hkv, hd, n, p0, swa, row0;
        float mb;
    } cs[] = {{8, 2, 128, 100, 300, 0, 0, 0}, {4, 4, 80, 20, 0, 0, 0, 0},     {4, 4, 96, 17, 100, 0, 0, 0},
              {8, 1, 64, 64, 0, 16, 0, 0},    {9, 3, 64, 70, 600, 0, 0, 0},   {4, 1, 256, 33, 600, 128, 0, 0},
              {6, 2, 64, 40, 500, 0, 0, 8},   {8, 2, 64, 130, 37, 20, 48, 0}, {2, 2, 16, 65, 5, 0, 48, 4},
              {6, 6, 32, 16, 0, 3, 0, 0}};
    int ctx = 1024;
    unsigned seed = 1;
    auto rnd = [&] {
        seed = seed * 1103515245 + 12345;
        return ((seed >> 8) & 0xFFFF) / 32768.f - 1.f;
    };
    for (auto &c : cs) {
        long qd = (long)c.h * c.hd, kd = (long)c.hkv * c.hd;
        vector<float> q(qd * c.n), out(qd * c.n, NAN);
        vector<half> k(kd * ctx), v(kd * ctx);
        for (auto &x : q)
            x = rnd();
        for (auto &x : k)
            x = (half)rnd();
        for (auto &x : v)
            x = (half)rnd();
        // rows past the last position: NaN, to check the zero fill
        int last = c.row0 + c.p0 + c.n - 1;
        for (long i = (long)(last + 1) * kd; i < kd * ctx; i++) {
            k[i] = (half)NAN;
            v[i] = (half)NAN;
        }
        vector<int> pos(c.n), row0(c.n, c.row0);
        for (int t = 0; t < c.n; t++)
            pos[t] = c.p0 + t;
        float scale = 1 / sqrtf(c.hd);
        for (int bx = 0; bx < c.h; bx++)
            for (int by = 0; by < (c.n + 63) / 64; by++)
                block(q.data(), k.data(), v.data(), out.data(), c.n, c.h, c.hkv, c.hd, pos.data(), row0.data(), c.swa,
                      scale, c.mb, bx, by);
        double md = 0;
        int G = c.h / c.hkv;
        for (int t = 0; t < c.n; t++)
            for (int h = 0; h < c.h; h++) {
                int p = pos[t], lo = c.swa > 0 && p - c.swa + 1 > 0 ? p - c.swa + 1 : 0;
                float sl = c.mb > 0 ? slope_of(c.h, c.mb, h) : 0;
                vector<double> s(p - lo + 1);
                double mx = -1e300;
                for (int j = lo; j <= p; j++) {
                    double a = 0;
                    for (int d = 0; d < c.hd; d++)
                        a += (double)(float)(half)q[t * qd + h * c.hd + d] *
                             (double)(float)k[(long)(c.row0 + j) * kd + (h / G) * c.hd + d];
                    a = a * scale + sl * (j - p);
                    s[j - lo] = a;
                    mx = max(mx, a);
                }
                double L = 0;
                for (auto &x : s) {
                    x = exp(x - mx);
                    L += x;
                }
                for (int d = 0; d < c.hd; d++) {
                    double o = 0;
                    for (int j = lo; j <= p; j++)
                        o += s[j - lo] * (double)(float)v[(long)(c.row0 + j) * kd + (h / G) * c.hd + d];
                    o /= L;
                    double e = fabs(o - out[t * qd + h * c.hd + d]);
                    if (!(e <= md))
                        md = isnan(e) ? INFINITY : max(md, e);
                }
            }
        printf("h=%d/%d hd=%d n=%d p0=%d swa=%d row0=%d mb=%g: max abs diff %.3g\n", c.h, c.hkv, c.hd, c.n, c.p0, c.swa,
               c.row0, c.mb, md);
    }
}
