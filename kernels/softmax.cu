// Row-wise softmax and softmax cross-entropy over the last (contiguous) axis: one block per row.
// Matches the array paths: softmax shifts an all -inf row by 0 (0/0 = nan there, as the array path); the
// cross-entropy's logsumexp shifts by 0 wherever the maximum is not finite (SciPy's rule), so a row holding +inf
// has logsumexp +inf (a shift by +inf would give inf - inf = nan).

// The shift m (the row's maximum; 0 for an all -inf row, or with finite_only for any non-finite maximum) and
// s = sum(exp(x - m)) of one row, in every thread.
template <typename T, typename A> __device__ void row_shift_sum(const T* x, index_t row, index_t n, A* shared,
                                                                A& m, A& s, bool finite_only = false) {
    m = neg_inf<A>();
    for (index_t i = threadIdx.x; i < n; i += blockDim.x) m = mx(m, (A)ld(x, row + i));
    m = block_max(m, shared);
    if (m == neg_inf<A>() || (finite_only && !isfinite(m))) m = A(0);
    s = A(0);
    for (index_t i = threadIdx.x; i < n; i += blockDim.x) s += ex((A)ld(x, row + i) - m);
    s = block_sum(s, shared);
}

template <typename T> __device__ void softmax_fwd(const T* x, T* y, index_t n) {
    typedef typename Acc<T>::type A;
    __shared__ A shared[32];
    const index_t row = (index_t)blockIdx.x * n;
    A m, s;
    row_shift_sum(x, row, n, shared, m, s);
    for (index_t i = threadIdx.x; i < n; i += blockDim.x) st(y, row + i, ex((A)ld(x, row + i) - m) / s);
}

// dx = scale y (g - sum(g y)) (scale 1: the softmax's VJP; attention's scale folded in: its scores' VJP)
template <typename T, typename A> __device__ void softmax_bwd(const T* g, const T* y, T* dx, index_t n, A scale) {
    __shared__ A shared[32];
    const index_t row = (index_t)blockIdx.x * n;
    A s = A(0);
    for (index_t i = threadIdx.x; i < n; i += blockDim.x) s += (A)ld(g, row + i) * (A)ld(y, row + i);
    s = block_sum(s, shared);
    for (index_t i = threadIdx.x; i < n; i += blockDim.x)
        st(dx, row + i, scale * (((A)ld(g, row + i) - s) * (A)ld(y, row + i)));
}

// loss[r] = logsumexp(x[r, :]) - x[r, t[r]]; lse[r] kept (accumulation type) for the backward pass
template <typename T> __device__ void xent_fwd(const T* x, const index_t* t, T* loss,
                                               typename Acc<T>::type* lse, index_t n) {
    typedef typename Acc<T>::type A;
    __shared__ A shared[32];
    const index_t r = blockIdx.x, row = r * n;
    A m, s;
    row_shift_sum(x, row, n, shared, m, s, true);
    if (threadIdx.x == 0) {
        const A l = lg(s) + m;
        lse[r] = l;
        st(loss, r, l - (A)ld(x, row + t[r]));
    }
}

// dx[r, i] = g[r] (exp(x[r, i] - lse[r]) - [i == t[r]])
template <typename T> __device__ void xent_bwd(const T* g, const T* x, const index_t* t,
                                               const typename Acc<T>::type* lse, T* dx, index_t n) {
    typedef typename Acc<T>::type A;
    const index_t r = blockIdx.x, row = r * n;
    const A gr = (A)ld(g, r), l = lse[r];
    const index_t target = t[r];
    for (index_t i = threadIdx.x; i < n; i += blockDim.x)
        st(dx, row + i, gr * (ex((A)ld(x, row + i) - l) - (i == target ? A(1) : A(0))));
}

#define SOFTMAX_KERNELS(S, T)                                                                              \
    extern "C" __global__ void softmax_fwd_##S(const T* x, T* y, index_t n) { softmax_fwd<T>(x, y, n); }   \
    extern "C" __global__ void softmax_bwd_##S(const T* g, const T* y, T* dx, index_t n,                  \
                                               Acc<T>::type scale) {                                       \
        softmax_bwd<T, Acc<T>::type>(g, y, dx, n, scale);                                                  \
    }                                                                                                      \
    extern "C" __global__ void xent_fwd_##S(const T* x, const index_t* t, T* loss, Acc<T>::type* lse,     \
                                            index_t n) {                                                   \
        xent_fwd<T>(x, t, loss, lse, n);                                                                   \
    }                                                                                                      \
    extern "C" __global__ void xent_bwd_##S(const T* g, const T* x, const index_t* t,                     \
                                            const Acc<T>::type* lse, T* dx, index_t n) {                   \
        xent_bwd<T>(g, x, t, lse, dx, n);                                                                  \
    }

FOR_FLOATS(SOFTMAX_KERNELS)

// Causal softmax of attention scores, in place of scale, mask and softmax: the rows are (..., seq) of an array
// (..., seq, kseq) with seq == kseq == n, row r being query i = r % n; p[j] = exp(scale x[j] - m) / s for j <= i
// and 0 above the diagonal (no -inf is ever written). The arithmetic is in float32 (float64 for float64).
// One warp per row (blockDim.x a multiple of 32, ``rows`` rows in all): the reductions are warp shuffles, with
// no shared memory and no block barrier.

template <typename A> __device__ __forceinline__ A warp_sum(A v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

template <typename A> __device__ __forceinline__ A warp_max(A v) {
    for (int o = 16; o > 0; o >>= 1) v = mx(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// The shift m (the maximum of scale x over the visible keys 0..last) and s = sum(exp(scale x - m)) of one row.
template <typename T, typename A> __device__ void causal_shift_sum(const T* x, index_t last, A scale, int lane,
                                                                   A& m, A& s) {
    m = neg_inf<A>();
    for (index_t j = lane; j <= last; j += 32) m = mx(m, scale * (A)ld(x, j));
    m = warp_max(m);
    s = A(0);
    for (index_t j = lane; j <= last; j += 32) s += ex(scale * (A)ld(x, j) - m);
    s = warp_sum(s);
}

template <typename T, typename A> __device__ void causal_softmax_fwd(const T* x, T* p, index_t rows, index_t n,
                                                                     A scale) {
    const index_t r = (index_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    const int lane = threadIdx.x & 31;
    if (r >= rows) return;  // the whole warp: no barrier follows
    const index_t last = r % n;  // keys 0..last are visible
    x += r * n;
    p += r * n;
    A m, s;
    causal_shift_sum(x, last, scale, lane, m, s);
    const A inv = A(1) / s;
    for (index_t j = lane; j < n; j += 32) st(p, j, j <= last ? ex(scale * (A)ld(x, j) - m) * inv : A(0));
}

// dx = scale p (g - sum(g p)) per row, p recomputed from the scores x in float32 (not read back rounded to
// 16 bits); zero above the diagonal, where p is 0
template <typename T, typename A> __device__ void causal_softmax_bwd(const T* g, const T* x, T* dx, index_t rows,
                                                                     index_t n, A scale) {
    const index_t r = (index_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    const int lane = threadIdx.x & 31;
    if (r >= rows) return;
    const index_t last = r % n;
    x += r * n;
    g += r * n;
    dx += r * n;
    A m, s;
    causal_shift_sum(x, last, scale, lane, m, s);
    const A inv = A(1) / s;
    A gp = A(0);
    for (index_t j = lane; j <= last; j += 32) gp += (A)ld(g, j) * (ex(scale * (A)ld(x, j) - m) * inv);
    gp = warp_sum(gp);
    for (index_t j = lane; j < n; j += 32)
        st(dx, j, j <= last ? scale * ((A)ld(g, j) - gp) * (ex(scale * (A)ld(x, j) - m) * inv) : A(0));
}

#define CAUSAL_KERNELS(S, T)                                                                               \
    extern "C" __global__ void causal_softmax_fwd_##S(const T* x, T* p, index_t rows, index_t n,          \
                                                      Acc<T>::type scale) {                                \
        causal_softmax_fwd<T, Acc<T>::type>(x, p, rows, n, scale);                                         \
    }                                                                                                      \
    extern "C" __global__ void causal_softmax_bwd_##S(const T* g, const T* x, T* dx, index_t rows,        \
                                                      index_t n, Acc<T>::type scale) {                     \
        causal_softmax_bwd<T, Acc<T>::type>(g, x, dx, rows, n, scale);                                     \
    }

FOR_FLOATS(CAUSAL_KERNELS)
