// One fused Adam step, out of place (shards may be shared, so inputs are never written):
// m' = b1 m + (1 - b1) g;  v' = b2 v + (1 - b2) g^2;
// p' = p decay - step_size m' / (sqrt(v' / c2) + eps), with step_size = lr / (1 - b1^t), c2 = 1 - b2^t.
// T: the parameter and gradient type; M: the moment type. bfloat16/float16 parameters keep float32 moments
// (g^2 and the small (1 - b2) updates vanish in float16); the math is in float32 (double for double)
// and only the new parameter is rounded to T.

template <typename T, typename M> struct AdamArgs {
    double b1, b2, step_size, c2, eps, decay;

    // element k of the chunk arrays (or of the arrays themselves): m', v' and p' from p, g, m, v
    __device__ __forceinline__ void at(const T* p, const T* g, const M* m, const M* v, T* p_out, M* m_out,
                                       M* v_out, index_t k) const {
        typedef typename Acc<T>::type A;
        const A gi = ld(g, k);
        const A mi = (A)b1 * (A)ld(m, k) + (A)(1.0 - b1) * gi;
        const A vi = (A)b2 * (A)ld(v, k) + (A)(1.0 - b2) * gi * gi;
        const A den = sq(vi * (A)(1.0 / c2)) + (A)eps;
        st(m_out, k, mi);
        st(v_out, k, vi);
        st(p_out, k, (A)ld(p, k) * (A)decay - (A)step_size * mi / den);
    }
};

// Eight elements per thread through 16-byte transfers where the pointers are aligned (common.cuh, Stride).
template <typename T, typename M>
__device__ void adam_step(const T* p, const T* g, const M* m, const M* v, T* p_out, M* m_out, M* v_out, index_t n,
                          double b1, double b2, double step_size, double c2, double eps, double decay) {
    const AdamArgs<T, M> h{b1, b2, step_size, c2, eps, decay};
    const Stride s(n, aligned16(p, g, m, v, p_out, m_out, v_out));
    for (index_t c = s.start; c < s.chunks; c += s.step) {
        const Pack8<T> pp = ld8(p, c), pg = ld8(g, c);
        const Pack8<M> pm = ld8(m, c), pv = ld8(v, c);
        Pack8<T> po;
        Pack8<M> mo, vo;
#pragma unroll
        for (int k = 0; k < 8; ++k) h.at(pp.v, pg.v, pm.v, pv.v, po.v, mo.v, vo.v, k);
        st8(p_out, c, po);
        st8(m_out, c, mo);
        st8(v_out, c, vo);
    }
    for (index_t i = s.tail(); i < n; i += s.step) h.at(p, g, m, v, p_out, m_out, v_out, i);
}

// adam_<S>: parameters and gradients of type T, moments of type M
#define ADAM_KERNEL(S, T, M)                                                                                 \
    extern "C" __global__ void adam_##S(const T* p, const T* g, const M* m, const M* v, T* p_out, M* m_out,  \
                                        M* v_out, index_t n, double b1, double b2, double step_size,       \
                                        double c2, double eps, double decay) {                             \
        adam_step<T, M>(p, g, m, v, p_out, m_out, v_out, n, b1, b2, step_size, c2, eps, decay);           \
    }

ADAM_KERNEL(bf16, bf16_t, float)
ADAM_KERNEL(f16, half_t, float)
ADAM_KERNEL(f32, float, float)
ADAM_KERNEL(f64, double, double)

// adam_dev_<S>: the same step with step_size, c2 and decay read from the device (0-d float64 arrays), so a step
// counted on the device (sa.graphed: a CUDA graph replays the launch with the same arguments) moves them on every
// call, a learning-rate schedule included
#define ADAM_DEV_KERNEL(S, T, M)                                                                             \
    extern "C" __global__ void adam_dev_##S(const T* p, const T* g, const M* m, const M* v, T* p_out,         \
                                            M* m_out, M* v_out, index_t n, double b1, double b2,              \
                                            const double* step_size, const double* c2, double eps,            \
                                            const double* decay) {                                            \
        adam_step<T, M>(p, g, m, v, p_out, m_out, v_out, n, b1, b2, *step_size, *c2, eps, *decay);           \
    }

ADAM_DEV_KERNEL(bf16, bf16_t, float)
ADAM_DEV_KERNEL(f16, half_t, float)
ADAM_DEV_KERNEL(f32, float, float)
ADAM_DEV_KERNEL(f64, double, double)
