/* Element-wise ops on F32 tensors, one work-item per element: the SwiGLU
 * and GeGLU gates, GELU, the residual add (with a broadcast bias), scaling,
 * clamping. */

/* gate = silu(gate) * up (Shazeer 2020, arXiv:2002.05202) */
kernel void swiglu(global uchar *gb, ulong g_off, global const uchar *ub, ulong u_off, long n) {
    const long i = get_global_id(0);
    if (i >= n) return;
    global float *g = AT(float, gb, g_off);
    g[i] = g[i] / (1.0f + exp(-g[i])) * AT_C(float, ub, u_off)[i];
}

/* GELU's tanh approximation (Hendrycks & Gimpel 2016, arXiv:1606.08415):
 * 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
float gelu_tanh(float x) { return 0.5f * x * (1.0f + tanh(0.7978845608028654f * x * (1.0f + 0.044715f * x * x))); }

/* gate = gelu(gate) * up */
kernel void geglu(global uchar *gb, ulong g_off, global const uchar *ub, ulong u_off, long n) {
    const long i = get_global_id(0);
    if (i >= n) return;
    global float *g = AT(float, gb, g_off);
    g[i] = gelu_tanh(g[i]) * AT_C(float, ub, u_off)[i];
}

kernel void gelu(global uchar *xb, ulong x_off, long n) {
    const long i = get_global_id(0);
    if (i < n) AT(float, xb, x_off)[i] = gelu_tanh(AT(float, xb, x_off)[i]);
}

/* x[i] += y[i % y_n]: y the size of x, or a {d} bias repeated per column */
kernel void add(global uchar *xb, ulong x_off, global const uchar *yb, ulong y_off, long n, long y_n) {
    const long i = get_global_id(0);
    if (i < n) AT(float, xb, x_off)[i] += AT_C(float, yb, y_off)[i % y_n];
}

kernel void scale(global uchar *xb, ulong x_off, float s, long n) {
    const long i = get_global_id(0);
    if (i < n) AT(float, xb, x_off)[i] *= s;
}

/* x = max(min(x, hi), lo), as ggml_clamp (clamp is a built-in name) */
kernel void clamp_f32(global uchar *xb, ulong x_off, float lo, float hi, long n) {
    const long i = get_global_id(0);
    if (i < n) AT(float, xb, x_off)[i] = fmax(fmin(AT(float, xb, x_off)[i], hi), lo);
}
