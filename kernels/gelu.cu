// GELU (tanh form) forward and backward, elementwise.
// y = 0.5 a (1 + t), t = tanh(C (a + 0.044715 a^3)), C = sqrt(2/pi);
// dy/da = 0.5 (1 + t + a (1 - t^2) C (1 + 3 * 0.044715 a^2)); where tanh saturates (1 - t^2 == 0) the middle
// term is 0, although a^3 may overflow there (inf * 0 would be NaN).

#define GELU_C 0.7978845608028654

template <typename A> __device__ __forceinline__ A gelu_value(A a) {
    const A t = th((A)GELU_C * (a + (A)0.044715 * a * a * a));
    return (A)0.5 * a * ((A)1 + t);
}

template <typename A> __device__ __forceinline__ A gelu_slope(A a) {
    const A t = th((A)GELU_C * (a + (A)0.044715 * a * a * a));
    const A u = (A)1 - t * t;
    const A mid = u == (A)0 ? (A)0 : a * u * (A)GELU_C * ((A)1 + (A)(3 * 0.044715) * a * a);
    return (A)0.5 * ((A)1 + t + mid);
}

// Eight elements per thread through 16-byte transfers where the pointers are aligned (common.cuh, Stride).
template <typename T> __device__ void gelu_fwd(const T* x, T* y, index_t n) {
    typedef typename Acc<T>::type A;
    const Stride s(n, aligned16(x, y));
    for (index_t c = s.start; c < s.chunks; c += s.step) {
        const Pack8<T> px = ld8(x, c);
        Pack8<T> py;
#pragma unroll
        for (int k = 0; k < 8; ++k) st(py.v, k, gelu_value(ld(px.v, k)));
        st8(y, c, py);
    }
    for (index_t i = s.tail(); i < n; i += s.step) st(y, i, gelu_value(ld(x, i)));
}

template <typename T> __device__ void gelu_bwd(const T* g, const T* x, T* dx, index_t n) {
    typedef typename Acc<T>::type A;
    const Stride s(n, aligned16(g, x, dx));
    for (index_t c = s.start; c < s.chunks; c += s.step) {
        const Pack8<T> pg = ld8(g, c), px = ld8(x, c);
        Pack8<T> pd;
#pragma unroll
        for (int k = 0; k < 8; ++k) st(pd.v, k, (A)ld(pg.v, k) * gelu_slope(ld(px.v, k)));
        st8(dx, c, pd);
    }
    for (index_t i = s.tail(); i < n; i += s.step) st(dx, i, (A)ld(g, i) * gelu_slope(ld(x, i)));
}

#define GELU_KERNELS(S, T)                                                                                 \
    extern "C" __global__ void gelu_fwd_##S(const T* x, T* y, index_t n) { gelu_fwd<T>(x, y, n); }         \
    extern "C" __global__ void gelu_bwd_##S(const T* g, const T* x, T* dx, index_t n) { gelu_bwd<T>(g, x, dx, n); }

FOR_FLOATS(GELU_KERNELS)
