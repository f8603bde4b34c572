// Vectorized elementwise kernels for the hot operations of a training step that CuPy runs one element per
// thread: the sum of two arrays of one shape and dtype (residual connections, gradients arriving at one
// array), the sum with an array repeated along leading axes (biases, positional tables) and the casts between float32 and bfloat16/float16 (parameters into the compute dtype, gradients
// back). Out of place; eight elements per thread through 16-byte transfers where the pointers are aligned.

// y = a + b, computed in Acc<T> (float32 for bfloat16 and float16) and rounded once, as CuPy and NumPy do.
template <typename T> __device__ void add_vec(const T* a, const T* b, T* y, index_t n) {
    const Stride s(n, aligned16(a, b, y));
    for (index_t c = s.start; c < s.chunks; c += s.step) {
        const Pack8<T> pa = ld8(a, c), pb = ld8(b, c);
        Pack8<T> py;
#pragma unroll
        for (int k = 0; k < 8; ++k) st(py.v, k, ld(pa.v, k) + ld(pb.v, k));
        st8(y, c, py);
    }
    for (index_t i = s.tail(); i < n; i += s.step) st(y, i, ld(a, i) + ld(b, i));
}

#define ADD_KERNELS(S, T)                                                                                     \
    extern "C" __global__ void add_vec_##S(const T* a, const T* b, T* y, index_t n) { add_vec<T>(a, b, y, n); }

FOR_FLOATS(ADD_KERNELS)

// y = a + b with b repeated along a's leading axes: b holds a's last nb elements (a bias, a positional table).
// Where nb is a multiple of 8 (and the pointers aligned) a chunk of a meets one whole chunk of b.
template <typename T> __device__ void add_rows(const T* a, const T* b, T* y, index_t n, index_t nb) {
    const Stride s(n, nb % 8 == 0 && aligned16(a, b, y));
    const index_t b_chunks = nb / 8;
    for (index_t c = s.start; c < s.chunks; c += s.step) {
        const Pack8<T> pa = ld8(a, c), pb = ld8(b, c % b_chunks);
        Pack8<T> py;
#pragma unroll
        for (int k = 0; k < 8; ++k) st(py.v, k, ld(pa.v, k) + ld(pb.v, k));
        st8(y, c, py);
    }
    for (index_t i = s.tail(); i < n; i += s.step) st(y, i, ld(a, i) + ld(b, i % nb));
}

#define ADD_ROWS_KERNELS(S, T)                                                                                \
    extern "C" __global__ void add_rows_##S(const T* a, const T* b, T* y, index_t n, index_t nb) {            \
        add_rows<T>(a, b, y, n, nb);                                                                          \
    }

FOR_FLOATS(ADD_ROWS_KERNELS)

// y = x converted from S to D: widening exactly, narrowing rounded to nearest even (NaN kept quiet).
template <typename S, typename D> __device__ void cast_vec(const S* x, D* y, index_t n) {
    const Stride s(n, aligned16(x, y));
    for (index_t c = s.start; c < s.chunks; c += s.step) {
        const Pack8<S> px = ld8(x, c);
        Pack8<D> py;
#pragma unroll
        for (int k = 0; k < 8; ++k) st(py.v, k, ld(px.v, k));
        st8(y, c, py);
    }
    for (index_t i = s.tail(); i < n; i += s.step) st(y, i, ld(x, i));
}

// cast_<from>_<to>: float32 to and from the 16-bit floats
extern "C" __global__ void cast_f32_bf16(const float* x, bf16_t* y, index_t n) { cast_vec<float, bf16_t>(x, y, n); }
extern "C" __global__ void cast_f32_f16(const float* x, half_t* y, index_t n) { cast_vec<float, half_t>(x, y, n); }
extern "C" __global__ void cast_bf16_f32(const bf16_t* x, float* y, index_t n) { cast_vec<bf16_t, float>(x, y, n); }
extern "C" __global__ void cast_f16_f32(const half_t* x, float* y, index_t n) { cast_vec<half_t, float>(x, y, n); }
