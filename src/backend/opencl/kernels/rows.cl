/* Row movement: the embedding lookup (get_rows: rows of any weight type,
 * dequantized) and the KV-cache store (store_rows: F32 rows into an F16
 * cache through vstore_half_rte, round to nearest even as
 * hl_fp32_to_fp16, or into an F32 cache). */

/* one work-item per (token, chunk of 8); out {d, n} F32 = table rows ids[t] */
kernel void get_rows(global const uchar *table, ulong t_off, ulong stride, int type, global const int *ids,
                     global uchar *ob, ulong o_off, long d, long n) {
    const long per_row = (d + 7) / 8, i = get_global_id(0);
    if (i >= per_row * n) return;
    const long t = i / per_row, c = i % per_row;
    float v[8];
    const int k = dequant8(type, table + t_off + (long)ids[t] * stride, d, c, v);
    global float *out = AT(float, ob, o_off) + t * d + 8 * c;
    for (int j = 0; j < k; j++) out[j] = v[j];
}

/* one work-item per element: cache row row0[t] + pos[t] = src row t;
 * pos[0..max_tokens) then row0[0..max_tokens) in `pos` */
kernel void store_rows(global const uchar *sb, ulong s_off, global uchar *cb, ulong c_off, int f16, long d, long n,
                       global const int *pos, long max_tokens) {
    const long i = get_global_id(0);
    if (i >= d * n) return;
    const long t = i / d;
    const long at = (long)(pos[max_tokens + t] + pos[t]) * d + i % d;
    const float v = AT_C(float, sb, s_off)[i];
    if (f16) vstore_half_rte(v, at, AT(half, cb, c_off));
    else AT(float, cb, c_off)[at] = v;
}
