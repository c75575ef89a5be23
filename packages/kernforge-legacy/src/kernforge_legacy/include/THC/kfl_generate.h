/* THC/kfl_generate.h: compiles THC_GENERIC_FILE once for the type KFL_GENERATE
 * names (1 Byte, ..., 8 Half), for the THCGenerate*.h headers (see
 * THCGenerateAllTypes.h). */
#ifndef THC_GENERIC_FILE
#error "define THC_GENERIC_FILE (the generic file) before including a THCGenerate header"
#endif
#if KFL_GENERATE == 1
#define real uint8_t
#define accreal int64_t
#define Real Byte
#define CReal CudaByte
#define THC_REAL_IS_BYTE
#elif KFL_GENERATE == 2
#define real int8_t
#define accreal int64_t
#define Real Char
#define CReal CudaChar
#define THC_REAL_IS_CHAR
#elif KFL_GENERATE == 3
#define real int16_t
#define accreal int64_t
#define Real Short
#define CReal CudaShort
#define THC_REAL_IS_SHORT
#elif KFL_GENERATE == 4
#define real int32_t
#define accreal int64_t
#define Real Int
#define CReal CudaInt
#define THC_REAL_IS_INT
#elif KFL_GENERATE == 5
#define real int64_t
#define accreal int64_t
#define Real Long
#define CReal CudaLong
#define THC_REAL_IS_LONG
#elif KFL_GENERATE == 6
#define real float
#define accreal float
#define Real Float
#define CReal Cuda
#define THC_REAL_IS_FLOAT
#elif KFL_GENERATE == 7
#define real double
#define accreal double
#define Real Double
#define CReal CudaDouble
#define THC_REAL_IS_DOUBLE
#elif KFL_GENERATE == 8
#define real KFL_CUDA_HALF /* CUDA's half in CUDA sources, THHalf in C (THC.h) */
#define accreal float
#define Real Half
#define CReal CudaHalf
#define THC_REAL_IS_HALF
#else
#error "KFL_GENERATE: no such type"
#endif
#if KFL_GENERATE == 8 && defined(__CUDACC__)
#define TH_CONVERT_REAL_TO_ACCREAL(_val) __half2float(_val)
#define TH_CONVERT_ACCREAL_TO_REAL(_val) __float2half(_val)
#elif KFL_GENERATE == 8
#define TH_CONVERT_REAL_TO_ACCREAL(_val) TH_half2float(_val)
#define TH_CONVERT_ACCREAL_TO_REAL(_val) TH_float2half(_val)
#else
#define TH_CONVERT_REAL_TO_ACCREAL(_val) (accreal)(_val)
#define TH_CONVERT_ACCREAL_TO_REAL(_val) (real)(_val)
#endif
#line 1 THC_GENERIC_FILE
#include THC_GENERIC_FILE
#undef real
#undef accreal
#undef Real
#undef CReal
#undef THC_REAL_IS_BYTE
#undef THC_REAL_IS_CHAR
#undef THC_REAL_IS_SHORT
#undef THC_REAL_IS_INT
#undef THC_REAL_IS_LONG
#undef THC_REAL_IS_FLOAT
#undef THC_REAL_IS_DOUBLE
#undef THC_REAL_IS_HALF
#undef TH_CONVERT_REAL_TO_ACCREAL
#undef TH_CONVERT_ACCREAL_TO_REAL
#undef KFL_GENERATE
#ifndef THCGenerateManyTypes
#undef THC_GENERIC_FILE
#endif
