// The matrix addresses of a product batched over two dims (b1, b2) of strided operands, for cublasGemmBatchedEx
// (attention's products read q, k, v as (batch, seq, heads, d_kv): batch and heads do not merge into one stride).
// out[w * nb + i] = base_w + (i / n2) * s1_w + (i % n2) * s2_w, in bytes, for w = A, B, C and i < nb = n1 * n2.
// The addresses are computed on the device from scalar arguments, so a CUDA graph can record the launch.

typedef unsigned long long uptr_t;

extern "C" __global__ void batch_pointers(uptr_t* out, index_t nb, index_t n2, uptr_t a, index_t a1, index_t a2,
                                          uptr_t b, index_t b1, index_t b2, uptr_t c, index_t c1, index_t c2) {
    for (index_t i = (index_t)blockIdx.x * blockDim.x + threadIdx.x; i < nb; i += (index_t)gridDim.x * blockDim.x) {
        const index_t j = i / n2, k = i % n2;
        out[i] = a + (uptr_t)(j * a1 + k * a2);
        out[nb + i] = b + (uptr_t)(j * b1 + k * b2);
        out[2 * nb + i] = c + (uptr_t)(j * c1 + k * c2);
    }
}
