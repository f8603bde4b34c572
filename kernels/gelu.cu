// GELU (tanh form) forward and backward, elementwise with a grid-stride loop.
// y = 0.5 a (1 + t), t = tanh(C (a + 0.044715 a^3)), C = sqrt(2/pi);
// dy/da = 0.5 (1 + t + a (1 - t^2) C (1 + 3 * 0.044715 a^2)).

#define GELU_C 0.7978845608028654

template <typename T> __device__ void gelu_fwd(const T* x, T* y, index_t n) {
    typedef typename Acc<T>::type A;
    for (index_t i = (index_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (index_t)gridDim.x * blockDim.x) {
        const A a = ld(x, i);
        const A t = th((A)GELU_C * (a + (A)0.044715 * a * a * a));
        st(y, i, (A)0.5 * a * ((A)1 + t));
    }
}

template <typename T> __device__ void gelu_bwd(const T* g, const T* x, T* dx, index_t n) {
    typedef typename Acc<T>::type A;
    for (index_t i = (index_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (index_t)gridDim.x * blockDim.x) {
        const A a = ld(x, i);
        const A t = th((A)GELU_C * (a + (A)0.044715 * a * a * a));
        const A d = (A)1 + t + a * ((A)1 - t * t) * (A)GELU_C * ((A)1 + (A)(3 * 0.044715) * a * a);
        st(dx, i, (A)0.5 * (A)ld(g, i) * d);
    }
}

#define GELU_KERNELS(S, T)                                                                                 \
    extern "C" __global__ void gelu_fwd_##S(const T* x, T* y, index_t n) { gelu_fwd<T>(x, y, n); }         \
    extern "C" __global__ void gelu_bwd_##S(const T* g, const T* x, T* dx, index_t n) { gelu_bwd<T>(g, x, dx, n); }

FOR_FLOATS(GELU_KERNELS)
