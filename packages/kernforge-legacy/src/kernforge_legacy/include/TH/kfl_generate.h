/* TH/kfl_generate.h: compiles TH_GENERIC_FILE once for the type KFL_GENERATE
 * names (1 Byte, ..., 8 Half), for the THGenerate*.h headers (see
 * THGenerateAllTypes.h). */
#ifndef TH_GENERIC_FILE
#error "define TH_GENERIC_FILE (the generic file) before including a THGenerate header"
#endif
#if KFL_GENERATE == 1
#define real uint8_t
#define accreal int64_t
#define Real Byte
#define TH_REAL_IS_BYTE
#elif KFL_GENERATE == 2
#define real int8_t
#define accreal int64_t
#define Real Char
#define TH_REAL_IS_CHAR
#elif KFL_GENERATE == 3
#define real int16_t
#define accreal int64_t
#define Real Short
#define TH_REAL_IS_SHORT
#elif KFL_GENERATE == 4
#define real int32_t
#define accreal int64_t
#define Real Int
#define TH_REAL_IS_INT
#elif KFL_GENERATE == 5
#define real int64_t
#define accreal int64_t
#define Real Long
#define TH_REAL_IS_LONG
#elif KFL_GENERATE == 6
#define real float
#define accreal double
#define Real Float
#define TH_REAL_IS_FLOAT
#elif KFL_GENERATE == 7
#define real double
#define accreal double
#define Real Double
#define TH_REAL_IS_DOUBLE
#elif KFL_GENERATE == 8
#define real THHalf
#define accreal float
#define Real Half
#define TH_REAL_IS_HALF
#else
#error "KFL_GENERATE: no such type"
#endif
#if KFL_GENERATE == 8
#define TH_CONVERT_REAL_TO_ACCREAL(_val) TH_half2float(_val)
#define TH_CONVERT_ACCREAL_TO_REAL(_val) TH_float2half(_val)
#else
#define TH_CONVERT_REAL_TO_ACCREAL(_val) (accreal)(_val)
#define TH_CONVERT_ACCREAL_TO_REAL(_val) (real)(_val)
#endif
#line 1 TH_GENERIC_FILE
#include TH_GENERIC_FILE
#undef real
#undef accreal
#undef Real
#undef TH_REAL_IS_BYTE
#undef TH_REAL_IS_CHAR
#undef TH_REAL_IS_SHORT
#undef TH_REAL_IS_INT
#undef TH_REAL_IS_LONG
#undef TH_REAL_IS_FLOAT
#undef TH_REAL_IS_DOUBLE
#undef TH_REAL_IS_HALF
#undef TH_CONVERT_REAL_TO_ACCREAL
#undef TH_CONVERT_ACCREAL_TO_REAL
#undef KFL_GENERATE
#ifndef THGenerateManyTypes
#undef TH_GENERIC_FILE
#endif
