// Shared by every shardarray kernel; prepended to each .cu file before NVRTC compiles it.
// No headers: float16 is stored as its 16 bits and converted with PTX (what cuda_fp16.h does),
// so the sources compile under CuPy's NVRTC without a CUDA toolkit include path.

typedef unsigned short half_t;
typedef long long index_t;

__device__ __forceinline__ float h2f(half_t h) {
    float f;
    asm("{ cvt.f32.f16 %0, %1; }" : "=f"(f) : "h"(h));
    return f;
}
__device__ __forceinline__ half_t f2h(float f) {
    half_t h;
    asm("{ cvt.rn.f16.f32 %0, %1; }" : "=h"(h) : "f"(f));
    return h;
}

// bfloat16 is stored as its 16 bits too, in a struct so that ld/st overload on it apart from half_t.
// Widening is exact (the high half of a float32); narrowing rounds to nearest even in integer
// arithmetic (as cvt.rn.bf16.f32, which needs sm_80), NaN kept quiet. The math is float32 (Acc).
struct bf16_t { unsigned short bits; };

__device__ __forceinline__ float b2f(bf16_t b) { return __uint_as_float(((unsigned int)b.bits) << 16); }
__device__ __forceinline__ bf16_t f2b(float f) {
    unsigned int u = __float_as_uint(f);
    bf16_t b;
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        b.bits = (unsigned short)((u >> 16) | 0x0040u);
    } else {
        b.bits = (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
    return b;
}

// Acc<T>::type: the accumulation type (float for bfloat16, float16 and float32, double for float64)
template <typename T> struct Acc { typedef float type; };
template <> struct Acc<double> { typedef double type; };

__device__ __forceinline__ float ld(const half_t* p, index_t i) { return h2f(p[i]); }
__device__ __forceinline__ float ld(const bf16_t* p, index_t i) { return b2f(p[i]); }
__device__ __forceinline__ float ld(const float* p, index_t i) { return p[i]; }
__device__ __forceinline__ double ld(const double* p, index_t i) { return p[i]; }
__device__ __forceinline__ void st(half_t* p, index_t i, float v) { p[i] = f2h(v); }
__device__ __forceinline__ void st(bf16_t* p, index_t i, float v) { p[i] = f2b(v); }
__device__ __forceinline__ void st(float* p, index_t i, float v) { p[i] = v; }
__device__ __forceinline__ void st(double* p, index_t i, double v) { p[i] = v; }

__device__ __forceinline__ float ex(float v) { return expf(v); }
__device__ __forceinline__ double ex(double v) { return exp(v); }
__device__ __forceinline__ float lg(float v) { return logf(v); }
__device__ __forceinline__ double lg(double v) { return log(v); }
__device__ __forceinline__ float th(float v) { return tanhf(v); }
__device__ __forceinline__ double th(double v) { return tanh(v); }
__device__ __forceinline__ float sq(float v) { return sqrtf(v); }
__device__ __forceinline__ double sq(double v) { return sqrt(v); }
__device__ __forceinline__ float mx(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double mx(double a, double b) { return fmax(a, b); }

template <typename A> __device__ __forceinline__ A neg_inf();
template <> __device__ __forceinline__ float neg_inf<float>() { return __int_as_float(0xff800000); }
template <> __device__ __forceinline__ double neg_inf<double>() { return __longlong_as_double(0xfff0000000000000ULL); }

// Block-wide reductions (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
// `shared` holds 32 values; the leading barrier lets consecutive calls reuse it.
template <typename A> __device__ A block_sum(A v, A* shared) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    __syncthreads();
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < warps ? shared[lane] : A(0);
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        if (lane == 0) shared[0] = v;
    }
    __syncthreads();
    return shared[0];
}

template <typename A> __device__ A block_max(A v, A* shared) {
    for (int o = 16; o > 0; o >>= 1) v = mx(v, __shfl_xor_sync(0xffffffffu, v, o));
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    __syncthreads();
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < warps ? shared[lane] : neg_inf<A>();
        for (int o = 16; o > 0; o >>= 1) v = mx(v, __shfl_xor_sync(0xffffffffu, v, o));
        if (lane == 0) shared[0] = v;
    }
    __syncthreads();
    return shared[0];
}

// Instantiate KERNEL(suffix, T) for the four float types (bfloat16 and float16 with float32 math inside).
#define FOR_FLOATS(KERNEL) KERNEL(bf16, bf16_t) KERNEL(f16, half_t) KERNEL(f32, float) KERNEL(f64, double)

// Eight consecutive elements, moved with 16-byte loads and stores (sizeof(T) / 2 of them): the elementwise
// kernels read and write through these where every pointer is 16-byte aligned, so a thread keeps several
// 16-byte transfers in flight (one element per thread left an H200 at under a quarter of its bandwidth).
template <typename T> struct alignas(16) Pack8 { T v[8]; };

template <typename T> __device__ __forceinline__ Pack8<T> ld8(const T* p, index_t chunk) {
    return reinterpret_cast<const Pack8<T>*>(p)[chunk];
}
template <typename T> __device__ __forceinline__ void st8(T* p, index_t chunk, const Pack8<T>& x) {
    reinterpret_cast<Pack8<T>*>(p)[chunk] = x;
}

__device__ __forceinline__ bool aligned16() { return true; }
template <typename P, typename... R> __device__ __forceinline__ bool aligned16(const P* p, const R*... rest) {
    return (reinterpret_cast<unsigned long long>(p) & 15ull) == 0 && aligned16(rest...);
}

// The work of one thread of an elementwise kernel over n elements: whole chunks of 8 (all pointers aligned),
// then the elements after the last whole chunk (or every element, one at a time, where a pointer is not
// aligned), both with a grid-stride loop. A launch of ceil(n / 8) threads gives each thread one chunk.
struct Stride {
    index_t start, step, chunks;
    __device__ Stride(index_t n, bool aligned)
        : start((index_t)blockIdx.x * blockDim.x + threadIdx.x), step((index_t)gridDim.x * blockDim.x),
          chunks(aligned ? n / 8 : 0) {}
    __device__ index_t tail() const { return 8 * chunks + start; }
};
