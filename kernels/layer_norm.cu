// Layer norm over the last (contiguous) axis, one block per row; gain and bias have that axis only.
// Forward keeps mean and rstd per row (accumulation type); backward recomputes x_hat from them.

template <typename T> __device__ void ln_fwd(const T* x, const T* gain, const T* bias, T* y,
                                             typename Acc<T>::type* mean, typename Acc<T>::type* rstd,
                                             index_t n, double eps) {
    typedef typename Acc<T>::type A;
    __shared__ A shared[32];
    const index_t r = blockIdx.x, row = r * n;
    A s = A(0);
    for (index_t i = threadIdx.x; i < n; i += blockDim.x) s += (A)ld(x, row + i);
    const A mu = block_sum(s, shared) / (A)n;
    A v = A(0);
    for (index_t i = threadIdx.x; i < n; i += blockDim.x) {
        const A c = (A)ld(x, row + i) - mu;
        v += c * c;
    }
    const A rs = A(1) / sq(block_sum(v, shared) / (A)n + (A)eps);
    for (index_t i = threadIdx.x; i < n; i += blockDim.x)
        st(y, row + i, ((A)ld(x, row + i) - mu) * rs * (A)ld(gain, i) + (A)ld(bias, i));
    if (threadIdx.x == 0) {
        mean[r] = mu;
        rstd[r] = rs;
    }
}

// gh = g gain; dx = rstd (gh - mean(gh) - x_hat mean(gh x_hat)); gxh = g x_hat (summed into d_gain by the caller)
template <typename T> __device__ void ln_bwd(const T* g, const T* x, const T* gain,
                                             const typename Acc<T>::type* mean, const typename Acc<T>::type* rstd,
                                             T* dx, T* gxh, index_t n) {
    typedef typename Acc<T>::type A;
    __shared__ A shared[32];
    const index_t r = blockIdx.x, row = r * n;
    const A mu = mean[r], rs = rstd[r];
    A s1 = A(0), s2 = A(0);
    for (index_t i = threadIdx.x; i < n; i += blockDim.x) {
        const A gi = (A)ld(g, row + i), h = ((A)ld(x, row + i) - mu) * rs, gh = gi * (A)ld(gain, i);
        s1 += gh;
        s2 += gh * h;
    }
    const A m1 = block_sum(s1, shared) / (A)n;
    const A m2 = block_sum(s2, shared) / (A)n;
    for (index_t i = threadIdx.x; i < n; i += blockDim.x) {
        const A gi = (A)ld(g, row + i), h = ((A)ld(x, row + i) - mu) * rs, gh = gi * (A)ld(gain, i);
        st(dx, row + i, (gh - m1 - h * m2) * rs);
        st(gxh, row + i, gi * h);
    }
}

#define LN_KERNELS(S, T)                                                                                   \
    extern "C" __global__ void ln_fwd_##S(const T* x, const T* gain, const T* bias, T* y, Acc<T>::type* mean, \
                                          Acc<T>::type* rstd, index_t n, double eps) {                     \
        ln_fwd<T>(x, gain, bias, y, mean, rstd, n, eps);                                                   \
    }                                                                                                      \
    extern "C" __global__ void ln_bwd_##S(const T* g, const T* x, const T* gain, const Acc<T>::type* mean, \
                                          const Acc<T>::type* rstd, T* dx, T* gxh, index_t n) {            \
        ln_bwd<T>(g, x, gain, mean, rstd, dx, gxh, n);                                                     \
    }

FOR_FLOATS(LN_KERNELS)
